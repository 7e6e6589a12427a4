/**
 * Seeded pseudo-random source (mulberry32: a 32-bit state, one multiply-xorshift round per draw;
 * period 2^32, plenty for fault injection and jitter). Model code takes a `() => number` and
 * never calls `Math.random`, so a seed reproduces a run.
 */

/** A source of uniform numbers in [0, 1). */
export type RandomSource = () => number;

/**
 * Returns a deterministic generator of uniform numbers in [0, 1) for `seed` (any finite number;
 * it is truncated to 32 bits).
 * @example
 * const rng = createRandom(42);
 * rng(); // always the same first value for seed 42
 */
export function createRandom(seed: number): RandomSource {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
