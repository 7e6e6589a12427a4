/**
 * Seeded randomness for the fleet, the benchmark and the demo: a 32-bit mixing hash, a small fast
 * PRNG, the distributions the workloads draw from (exponential inter-arrival times for Poisson
 * arrivals, log-normal lengths, geometric turn counts, Zipf popularity), and the `() => number`
 * view the fleet's models take ({@link createRandom}).
 *
 * Everything here is a pure function of its seed: the same seed gives the same sequence on
 * every platform (only 32-bit integer arithmetic via `Math.imul`, and IEEE `Math.log`/`Math.exp`,
 * which V8 computes identically across runs). Simulation code never reads `Math.random()`.
 *
 * The generator is `sfc32` (Chris Doty-Humphrey's Small Fast Counting generator, as in
 * PractRand), seeded through `mix32` so that nearby seeds give unrelated streams.
 */

/**
 * Mixes any number of 32-bit integers into one well-distributed 32-bit unsigned integer
 * (murmur3-style finalizer after each word). Used to derive independent sub-streams, e.g.
 * `mix32(seed, STREAM_TEXT, documentId)`.
 */
export function mix32(...words: readonly number[]): number {
  let h = 0x9e3779b9;
  for (const w of words) {
    h = Math.imul(h ^ (w | 0), 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
    // Fold in the high part of doubles above 2^32 so ids like 2^40 differ from 0.
    const hi = Math.floor(w / 4294967296) | 0;
    if (hi !== 0) h = Math.imul(h ^ hi, 0x27d4eb2f);
  }
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  h ^= h >>> 12;
  return h >>> 0;
}

/**
 * A seeded pseudo-random source (sfc32). Cheap to create: make one per independent stream.
 *
 * @example
 * const rng = new Rng(mix32(seed, 7));
 * const gapMs = rng.exponential(1000 / ratePerSecond);
 */
export class Rng {
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  /** @param seed - any number; mixed before use, so 0, 1, 2… give unrelated streams. */
  constructor(seed: number) {
    this.#a = mix32(seed, 1);
    this.#b = mix32(seed, 2);
    this.#c = mix32(seed, 3);
    this.#d = 1;
    for (let i = 0; i < 12; i++) this.nextUint32();
  }

  /** Next unsigned 32-bit integer. */
  nextUint32(): number {
    const t = (((this.#a + this.#b) | 0) + this.#d) | 0;
    this.#d = (this.#d + 1) | 0;
    this.#a = this.#b ^ (this.#b >>> 9);
    this.#b = (this.#c + (this.#c << 3)) | 0;
    this.#c = (this.#c << 21) | (this.#c >>> 11);
    this.#c = (this.#c + t) | 0;
    return t >>> 0;
  }

  /** Uniform in [0, 1), 32 bits of resolution. */
  next(): number {
    return this.nextUint32() / 4294967296;
  }

  /** Uniform in (0, 1): safe to take the logarithm of. */
  nextOpen(): number {
    return (this.nextUint32() + 0.5) / 4294967296;
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** Uniform integer in [min, max] (both inclusive). */
  intBetween(min: number, max: number): number {
    return min + this.int(max - min + 1);
  }

  /** Exponential with the given mean: the gap between events of a Poisson process. */
  exponential(mean: number): number {
    return -Math.log(this.nextOpen()) * mean;
  }

  /** Standard normal (Box–Muller; one of the pair is discarded to keep the stream simple). */
  normal(): number {
    return Math.sqrt(-2 * Math.log(this.nextOpen())) * Math.cos(2 * Math.PI * this.next());
  }

  /**
   * Log-normal integer with the given median and shape `sigma`, clamped to [min, max]:
   * the usual shape of prompt and completion lengths.
   */
  logNormalInt(median: number, sigma: number, min: number, max: number): number {
    const v = Math.round(median * Math.exp(sigma * this.normal()));
    return Math.min(max, Math.max(min, v));
  }

  /** Geometric count ≥ 1 with the given mean (mean ≥ 1), capped at `max`. */
  geometric(mean: number, max: number): number {
    const p = 1 / mean;
    if (p >= 1) return 1;
    const k = 1 + Math.floor(Math.log(this.nextOpen()) / Math.log(1 - p));
    return Math.min(max, k);
  }

  /** A function view of this stream, for APIs that take `() => number`. */
  asFunction(): () => number {
    return () => this.next();
  }
}

/**
 * Zipf-distributed item picker over ranks 0..n-1: P(rank k) ∝ 1 / (k + 1)^s. Rank 0 is the most
 * popular. Sampling is a binary search over the precomputed CDF: O(log n), O(n) memory.
 */
export class Zipf {
  readonly #cdf: Float64Array;

  /**
   * @param n - number of items (≥ 1)
   * @param s - exponent (≥ 0); 0 is uniform, ~1 is the classic web/cache popularity skew
   */
  constructor(n: number, s: number) {
    if (!Number.isInteger(n) || n < 1) throw new RangeError(`Expected Zipf n to be an integer ≥ 1, got ${n}`);
    if (!(s >= 0)) throw new RangeError(`Expected Zipf exponent to be ≥ 0, got ${s}`);
    this.#cdf = new Float64Array(n);
    let sum = 0;
    for (let k = 0; k < n; k++) {
      sum += 1 / Math.pow(k + 1, s);
      this.#cdf[k] = sum;
    }
    for (let k = 0; k < n; k++) this.#cdf[k] = this.#cdf[k]! / sum;
  }

  /** Number of items. */
  get size(): number {
    return this.#cdf.length;
  }

  /** Probability of rank `k`. */
  probability(k: number): number {
    const hi = this.#cdf[k] ?? 0;
    const lo = k > 0 ? (this.#cdf[k - 1] ?? 0) : 0;
    return hi - lo;
  }

  /** Draws a rank using `rng`. */
  sample(rng: Rng): number {
    const u = rng.next();
    let lo = 0;
    let hi = this.#cdf.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#cdf[mid]! > u) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }
}

/** A source of uniform numbers in [0, 1). */
export type RandomSource = () => number;

/**
 * Returns a deterministic generator of uniform numbers in [0, 1) for `seed` (any number;
 * nearby seeds give unrelated streams): an {@link Rng} as a function. Model code takes a
 * `() => number` and never calls `Math.random`, so a seed reproduces a run.
 * @example
 * const rng = createRandom(42);
 * rng(); // always the same first value for seed 42
 */
export function createRandom(seed: number): RandomSource {
  return new Rng(seed).asFunction();
}
