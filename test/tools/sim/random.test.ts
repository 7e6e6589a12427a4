import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Rng, Zipf, createRandom, mix32 } from "../../../tools/sim/random.js";

describe("random sources", () => {
  it("Rng is a pure function of its seed and stays in [0, 1)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 }), (seed) => {
        const a = new Rng(seed);
        const b = new Rng(seed);
        for (let i = 0; i < 50; i++) {
          const v = a.next();
          expect(v).toBe(b.next());
          expect(v).toBeGreaterThanOrEqual(0);
          expect(v).toBeLessThan(1);
        }
      }),
    );
  });

  it("Zipf draws follow their probabilities", () => {
    const z = new Zipf(100, 1.2);
    const rng = new Rng(5);
    const counts = new Array<number>(100).fill(0);
    const n = 200_000;
    for (let i = 0; i < n; i++) counts[z.sample(rng)]!++;
    for (const k of [0, 1, 9, 99]) expect(counts[k]! / n).toBeCloseTo(z.probability(k), 2);
    expect(new Zipf(10, 0).probability(3)).toBeCloseTo(0.1, 12);
  });

  it("createRandom(seed) is the Rng stream of that seed, as a function", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 }), (seed) => {
        const f = createRandom(seed);
        const rng = new Rng(seed);
        for (let i = 0; i < 20; i++) expect(f()).toBe(rng.next());
      }),
    );
  });

  it("mix32 folds the high part of ids above 2^32", () => {
    expect(mix32(1, 2 ** 40)).not.toBe(mix32(1, 0));
    expect(mix32(7, 3)).toBe(mix32(7, 3));
  });
});
