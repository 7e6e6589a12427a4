import fc from "fast-check";
import { compareAcrossSeeds, isBenchError, summarizeSeeds } from "prefix-router/bench";
import type { BenchRow } from "prefix-router/bench";
import { describe, expect, it } from "vitest";
import { checkLongestPrefix } from "../../../tools/bench/goals.js";
import { estimate } from "../../../tools/bench/compare.js";
import { parseSeeds } from "../../../tools/bench/options.js";
import { runBenchCommand } from "../../../tools/bench/cli.js";

/** A result row with only the fields the seed statistics read set to meaningful values. */
function row(strategy: string, seed: number, p50: number, hit: number, extra: Partial<BenchRow> = {}): BenchRow {
  return {
    workload: "rag", strategy, instances: 7, prefixLength: null, concurrencyThreshold: null, capacityTokens: 1_200_000,
    rateMultiplier: 1, durationMs: 60_000, seed, routers: 1, rejected: 0, idealHitRate: 0.9, scaleEvents: [],
    wall: { decisionsPerSecond: 1, routeMeanUs: 1, runMs: 1 },
    requests: 100, ttftP50Ms: p50, ttftP90Ms: p50 * 2, ttftP99Ms: p50 * 3, ttftMeanMs: p50, queueMeanMs: 0, tokenHitRate: hit,
    throughput: 1, outputTokensPerSecond: 1, spilloverRate: 0, minShare: 0.14, maxShare: 0.15, instanceShares: {},
    ttftCdf: [], hitRateSeries: [], bucketMs: 1000,
    ...extra,
  };
}

describe("--seed", () => {
  it("takes integers and inclusive ranges", () => {
    expect(parseSeeds(["1-3,7", "9"])).toEqual([1, 2, 3, 7, 9]);
    expect(parseSeeds(["0"])).toEqual([0]);
    expect(parseSeeds(undefined)).toBeUndefined();
  });

  it.each(["3-1", "a", "-1", "1.5", "1-2000"])("rejects %s with ERR_BENCH_OPTION", (v) => {
    expect(() => parseSeeds([v])).toThrow(expect.objectContaining({ code: "ERR_BENCH_OPTION", message: expect.stringContaining(`"${v}"`) }));
    try {
      parseSeeds([v]);
    } catch (e) {
      expect(isBenchError(e)).toBe(true);
    }
  });
});

describe("statistics over seeds", () => {
  it("gives the mean and Student's-t 95% half-width, none for one value", () => {
    const e = estimate([1, 2, 3]);
    expect(e.mean).toBe(2);
    expect(e.halfWidth).toBeCloseTo((4.303 * 1) / Math.sqrt(3), 6);
    expect(estimate([5]).halfWidth).toBeNaN();
    expect(estimate([4, 4, 4]).halfWidth).toBe(0);
  });

  it("groups rows that differ only by seed and keeps the worst share", () => {
    const rows = [row("a", 1, 70, 0.8), row("a", 2, 72, 0.9, { maxShare: 0.2 }), row("b", 1, 60, 0.5)];
    const s = summarizeSeeds(rows);
    expect(s.map((x) => [x.row.strategy, x.seeds, x.ttftP50Ms.mean, x.maxShare])).toEqual([
      ["a", [1, 2], 71, 0.2],
      ["b", [1], 60, 0.15],
    ]);
  });

  it("pairs by seed: a consistent small difference counts, seed-to-seed noise larger than it does not hide it", () => {
    // The workload moves P50 by ±5 ms from seed to seed; the reference is 0.05 ms lower in every seed.
    const base = [70, 75, 65, 72, 68];
    const rows = base.flatMap((p, s) => [row("longest-prefix", s, p - 0.05, 0.85), row("peer:x", s, p, 0.85)]);
    const [c] = compareAcrossSeeds(rows, "longest-prefix");
    expect(c!.ttftP50DiffMs.mean).toBeCloseTo(-0.05, 9);
    expect(c!.ttftP50).toBe("lower");
    expect(c!.tokenHitRate).toBe("tie");
  });

  it("calls a difference whose interval contains 0 a tie, and any single-seed difference a tie", () => {
    const noisy = [row("longest-prefix", 1, 70.1, 0.8), row("p", 1, 70, 0.8), row("longest-prefix", 2, 69.9, 0.8), row("p", 2, 70, 0.8)];
    expect(compareAcrossSeeds(noisy, "longest-prefix")[0]!.ttftP50).toBe("tie");
    const one = [row("longest-prefix", 1, 10, 0.8), row("p", 1, 70, 0.8)];
    expect(compareAcrossSeeds(one, "longest-prefix")[0]!.ttftP50).toBe("tie");
  });

  it("is antisymmetric: swapping reference and row mirrors the verdict", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.double({ min: 50, max: 90, noNaN: true }), fc.double({ min: 50, max: 90, noNaN: true })), { minLength: 2, maxLength: 8 }), (pairs) => {
        const rows = pairs.flatMap(([a, b], s) => [row("A", s, a, 0.5), row("B", s, b, 0.5)]);
        const ab = compareAcrossSeeds(rows, "A")[0]!;
        const ba = compareAcrossSeeds(rows, "B")[0]!;
        const mirror = { lower: "higher", higher: "lower", tie: "tie" } as const;
        expect(ba.ttftP50).toBe(mirror[ab.ttftP50]);
        expect(ba.ttftP50DiffMs.mean).toBeCloseTo(-ab.ttftP50DiffMs.mean, 9);
      }),
    );
  });
});

describe("longest-prefix vs the other strategies", () => {
  it("compares with the prefix-aware length of lowest mean P50, needs a strict win over peers, and checks every seed's share", () => {
    const rows = [1, 2, 3].flatMap((s) => [
      row("longest-prefix", s, 70 + s * 0.001, 0.85, { maxShare: s === 3 ? 0.18 : 0.15 }),
      row("prefix-aware", s, 71, 0.86, { prefixLength: 1024 }),
      row("prefix-aware", s, 70.5, 0.84, { prefixLength: 4096 }),
      row("peer:slow", s, 72 + s * 0.01, 0.8),
      row("peer:same", s, 70 + (s === 2 ? 0.01 : -0.01), 0.85),
    ]);
    const goals = checkLongestPrefix(rows).map((g) => [g.goal, g.met]);
    expect(goals).toEqual([
      ["P50 ≤ best prefix-aware (4096)", true],
      ["hit rate ≥ best prefix-aware (4096)", true],
      ["P50 < peer:slow", true],
      ["P50 < peer:same", false],
      ["max share ≤ 1.25 × mean", false],
    ]);
  });
});

describe("longest-prefix vs the other strategies, with several longest-prefix configurations", () => {
  it("checks the first configuration of each scenario, once", () => {
    const rows = [1, 2].flatMap((s) => [
      row("longest-prefix", s, 70, 0.85, { concurrencyThreshold: 32 }),
      row("longest-prefix", s, 90, 0.5, { concurrencyThreshold: 64 }),
      row("prefix-aware", s, 71, 0.8, { prefixLength: 4096, concurrencyThreshold: 32 }),
    ]);
    expect(checkLongestPrefix(rows).map((g) => [g.goal, g.measured, g.met])).toEqual([
      ["P50 ≤ best prefix-aware (4096)", "-1.000 ± 0.000 ms", true],
      ["hit rate ≥ best prefix-aware (4096)", "+5.000 ± 0.000 pts", true],
      ["max share ≤ 1.25 × mean", "1.05 × mean", true],
    ]);
  });
});

describe("prefix-router bench with several seeds", () => {
  it("prints means with intervals, the paired comparison and the longest-prefix checks", async () => {
    const err: string[] = [];
    const code = await runBenchCommand(
      ["--workload", "rag", "--strategies", "prefix-aware,longest-prefix,peer:litellm-affinity", "--prefix-length", "4096", "--duration", "20s", "--seed", "1-2", "--routers", "1,2", "-q"],
      { out: (l) => void err.push(l), err: (l) => void err.push(l) },
    );
    expect(code).toBe(0);
    const text = err.join("\n");
    expect(text).toMatch(/Across seeds[\s\S]*longest-prefix\s+-\s+32\s+2\s+\d+\.\d{3} ± \d+\.\d{3}/);
    expect(text).toContain("longest-prefix against each row, paired by seed");
    expect(text).toMatch(/longest-prefix vs the other strategies \(paired by seed[\s\S]*P50 < peer:litellm-affinity/);
    // Two router processes: their own rows, labelled, compared with longest-prefix ×2.
    expect(text).toMatch(/longest-prefix ×2\s+-\s+32\s+2\s+/);
    expect(text).toMatch(/rag\s+peer:litellm-affinity ×2\s+-\s+-\s+2\s+[+-]\d/);
  });
});
