/**
 * `bench --engine … --seed 1-5`: the rows of several whole runs summarised per strategy (means
 * with 95% intervals) and paired by seed with the reference strategy; and the command run over
 * two seeds on the emulated fleet.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runBenchCommand } from "../../../tools/bench/cli.js";
import type { EngineRow } from "../../../tools/bench/engines/report.js";
import { type SeedRows, compareEngineSeeds, engineSeedsReport, referenceStrategy, summarizeEngineSeeds } from "../../../tools/bench/engines/seeds.js";

function row(strategy: string, hitRate: number, ttftP50Ms: number, over: Partial<EngineRow> = {}): EngineRow {
  return {
    engine: "llama",
    strategy: strategy as EngineRow["strategy"],
    routers: 1,
    requests: 100,
    errors: 0,
    hitRate,
    idealHitRate: 0.9,
    ttftP50Ms,
    ttftP90Ms: 2 * ttftP50Ms,
    shares: { i0: 0.5, i1: 0.5 },
    predictions: strategy === "random" ? undefined : { tested: 50, within: 40 },
    ...over,
  };
}

/** Three seeds: precise-prefix 5 points above prefix-aware on each, its median 1 ms slower on two and 1 ms faster on one. */
const runs: SeedRows[] = [
  { seed: 1, rows: [row("prefix-aware", 0.7, 30), row("precise-prefix", 0.75, 31)] },
  { seed: 2, rows: [row("prefix-aware", 0.65, 40), row("precise-prefix", 0.7, 41)] },
  { seed: 3, rows: [row("prefix-aware", 0.68, 35), row("precise-prefix", 0.73, 34)] },
];

describe("a real-engine run over several seeds", () => {
  it("summarises each strategy over the seeds: means with 95% intervals, predictions pooled", () => {
    const [pa, precise] = summarizeEngineSeeds(runs);
    expect(pa).toMatchObject({ engine: "llama", routers: 1, strategy: "prefix-aware", seeds: 3 });
    expect(pa!.hitRate.mean).toBeCloseTo((0.7 + 0.65 + 0.68) / 3);
    expect(pa!.ttftP50Ms.mean).toBeCloseTo(35);
    // t(2) = 4.303, sd of 30/40/35 = 5: 4.303 × 5 / √3.
    expect(pa!.ttftP50Ms.halfWidth).toBeCloseTo((4.303 * 5) / Math.sqrt(3), 3);
    expect(precise!.predictionsWithin).toBeCloseTo(0.8);
    expect(summarizeEngineSeeds([{ seed: 1, rows: [row("random", 0.3, 50)] }])[0]!.predictionsWithin).toBeUndefined();
  });

  it("pairs each strategy with the reference by seed: a difference of the same sign on every seed is above or below, a mixed one a tie", () => {
    const [c] = compareEngineSeeds(runs, "prefix-aware");
    expect(c).toMatchObject({ strategy: "precise-prefix", reference: "prefix-aware", hit: "above", ttftP50: "tie" });
    expect(c!.hitDiff.mean).toBeCloseTo(0.05);
    expect(c!.ttftP50DiffMs.mean).toBeCloseTo(1 / 3);
    // Slower on every seed: below is for the hit only, TTFT says above (the row's median is higher).
    const slower = runs.map((r, k) => ({ seed: r.seed, rows: [r.rows[0]!, { ...r.rows[1]!, ttftP50Ms: r.rows[0]!.ttftP50Ms + 3 + k / 10, hitRate: r.rows[0]!.hitRate - 0.02 - k / 1000 }] }));
    expect(compareEngineSeeds(slower, "prefix-aware")[0]).toMatchObject({ hit: "below", ttftP50: "above" });
    // One seed has no interval: a tie whatever the difference.
    expect(compareEngineSeeds(runs.slice(0, 1), "prefix-aware")[0]).toMatchObject({ hit: "tie", ttftP50: "tie" });
  });

  it("pairs only rows of the same engine kind and number of router processes, on seeds where both ran", () => {
    const mixed: SeedRows[] = runs.map((r) => ({ seed: r.seed, rows: [...r.rows, row("precise-prefix", 0.6, 50, { routers: 4 })] }));
    const paired = compareEngineSeeds(mixed, "prefix-aware");
    // The 4-process row has no prefix-aware row with 4 processes to be paired with.
    expect(paired.map((c) => [c.strategy, c.routers])).toEqual([["precise-prefix", 1]]);
  });

  it("pairs with prefix-aware when it ran, else with the first strategy", () => {
    expect(referenceStrategy(["random", "prefix-aware", "precise-prefix"])).toBe("prefix-aware");
    expect(referenceStrategy(["least-outstanding", "longest-prefix"])).toBe("least-outstanding");
    expect(referenceStrategy([])).toBeUndefined();
  });

  it("prints both tables", () => {
    const text = engineSeedsReport(runs, ["prefix-aware", "precise-prefix"]).join("\n");
    expect(text).toMatch(/Across seeds 1, 2, 3/);
    expect(text).toMatch(/\| llama \| precise-prefix \| 3 \| 72\.7 ± [\d.]+ \| 35\.3 ± [\d.]+ \|/);
    expect(text).toMatch(/Against prefix-aware, paired by seed/);
    expect(text).toMatch(/\| llama \| precise-prefix \| \+5\.0 ± 0\.0 \| above \| \+0\.3 ± [\d.]+ \| tie \|/);
  });

  it("`bench --engine emulated --seed 1-2`: a whole run per seed, then the tables across seeds; --json holds each seed's rows and the comparison", { timeout: 180_000 }, async () => {
    const dir = await mkdtemp(join(tmpdir(), "engine-seeds-"));
    try {
      const file = join(dir, "out.json");
      const argv = ["--engine", "emulated", "--seed", "1-2", "--sessions", "4", "--strategies", "prefix-aware,random", "--instances", "2", "--slots", "2"];
      const out: string[] = [];
      const code = await runBenchCommand([...argv, "--context-size", "2048", "--concurrency", "2", "--max-tokens", "2", "--no-checks", "-q", "--json", file], { out: (l) => out.push(l), err: () => {} });
      expect(code).toBe(0);
      const text = out.join("\n");
      expect(text.indexOf("Seed 1:")).toBeGreaterThanOrEqual(0);
      expect(text.indexOf("Seed 2:")).toBeGreaterThan(text.indexOf("Seed 1:"));
      expect(text).toMatch(/Across seeds 1, 2/);
      expect(text).toMatch(/\| emulated \| random \| 2 \|/);
      expect(text).toMatch(/Against prefix-aware, paired by seed/);
      const json = JSON.parse(await readFile(file, "utf8")) as { seeds: { seed: number; rows: EngineRow[]; runs: unknown[] }[]; acrossSeeds: { reference: string; paired: { strategy: string }[] } };
      expect(json.seeds.map((s) => s.seed)).toEqual([1, 2]);
      for (const s of json.seeds) expect(s.rows.map((r) => r.strategy)).toEqual(["prefix-aware", "random"]);
      expect(json.acrossSeeds.reference).toBe("prefix-aware");
      expect(json.acrossSeeds.paired.map((c) => c.strategy)).toEqual(["random"]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
