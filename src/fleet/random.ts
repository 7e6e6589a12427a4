/**
 * The fleet's seeded random source: the package's `Rng` (sfc32) as a function. Model code takes
 * a `() => number` and never calls `Math.random`, so a seed reproduces a run.
 */
import { Rng } from "../random.js";

/** A source of uniform numbers in [0, 1). */
export type RandomSource = () => number;

/**
 * Returns a deterministic generator of uniform numbers in [0, 1) for `seed` (any number;
 * nearby seeds give unrelated streams).
 * @example
 * const rng = createRandom(42);
 * rng(); // always the same first value for seed 42
 */
export function createRandom(seed: number): RandomSource {
  return new Rng(seed).asFunction();
}
