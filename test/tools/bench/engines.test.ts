/**
 * The real-engine bench's parts that do not need llama.cpp: its workloads, the figures it derives
 * from records (hit, pooled ideal, predictions, checks, the emulator check, the fitted timing),
 * its command line, and a whole run on the emulated fleet over loopback. The llama run itself is
 * in test/tools/fleet/llama/real-engines.test.ts.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { runBenchCommand } from "../../../tools/bench/cli.js";
import { parseEngineArgs } from "../../../tools/bench/engines/cli.js";
import { ENGINE_BENCH_DOC, accurate, emulatorCheck, engineChecks, engineRows, engineTable, formatEngineReport, quantile } from "../../../tools/bench/engines/report.js";
import { commonPrefix, fitEmulated, routerOf, runEngineBench, type EngineBenchResult, type EngineRecord } from "../../../tools/bench/engines/run.js";
import { ENGINE_WORKLOAD_DEFAULTS, engineWorkload } from "../../../tools/bench/engines/workloads.js";
import { isBenchError } from "../../../tools/common/errors.js";

function record(over: Partial<EngineRecord>): EngineRecord {
  return {
    session: 0,
    turn: 0,
    group: 0,
    target: "i0",
    startMs: 0,
    ttftMs: 100,
    durationMs: 200,
    decisionMs: 1,
    promptTokens: 1000,
    cachedTokens: 0,
    completionTokens: 16,
    predictedCachedTokens: undefined,
    idealCachedTokens: 0,
    idealPromptTokens: 1000,
    seenPrefix: false,
    engineTtftMs: undefined,
    engineQueueMs: undefined,
    ...over,
  };
}

function result(runs: { engine: "llama" | "emulated"; strategy: string; routers?: number; records: EngineRecord[] }[]): EngineBenchResult {
  return { workload: "short-prompts", sessions: 1, timing: undefined, runs: runs.map((r) => ({ routers: 1, ...r, strategy: r.strategy as never, targets: ["i0", "i1"], publishes: false })) };
}

describe("engine workloads", () => {
  it("are drawn from the seed: same seed, same sessions; another seed, others", () => {
    const a = engineWorkload("short-prompts", 1);
    expect(engineWorkload("short-prompts", 1)).toEqual(a);
    expect(engineWorkload("short-prompts", 2).sessions[0]!.turns).not.toEqual(a.sessions[0]!.turns);
  });

  it("short-prompts: 12 shared prompts of 1,500 characters, skewed popularity, one distinct question each", () => {
    const w = engineWorkload("short-prompts", 1);
    expect(w.sessions).toHaveLength(ENGINE_WORKLOAD_DEFAULTS["short-prompts"].sessions);
    const prompts = new Set(w.sessions.map((s) => s.system));
    expect(prompts.size).toBeLessThanOrEqual(12);
    for (const p of prompts) expect(p.length).toBe(1500);
    const counts = Array.from({ length: 12 }, (_, g) => w.sessions.filter((s) => s.group === g).length);
    expect(counts[0]).toBeGreaterThan(2 * counts[11]!);
    const questions = w.sessions.flatMap((s) => s.turns);
    expect(new Set(questions).size).toBe(questions.length);
    expect(w.sessions.every((s) => s.turns.length === 1)).toBe(true);
    // ASCII (the text the tiny llama model's BPE was learned from).
    expect(w.sessions.every((s) => /^[\x20-\x7e\n]*$/.test(s.system + s.turns.join("")))).toBe(true);
  });

  it("long-documents: 8 documents of 6,000 characters, three turns a session", () => {
    const w = engineWorkload("long-documents", 3);
    expect(new Set(w.sessions.map((s) => s.group)).size).toBeLessThanOrEqual(8);
    expect(w.sessions.every((s) => s.system.length === 6000 && s.turns.length === 3)).toBe(true);
  });

  it("refuses parameters out of range with a RangeError naming them", () => {
    expect(() => engineWorkload("short-prompts", 1, { sessions: 0 })).toThrow(/`sessions`.*got 0/);
    expect(() => engineWorkload("short-prompts", 1, { zipf: Number.NaN })).toThrow(RangeError);
  });
});

describe("engine figures", () => {
  it("commonPrefix is the length of the longest common prefix", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.string(), (p, a, b) => {
        const n = commonPrefix(p + a, p + b);
        expect(n).toBeGreaterThanOrEqual(p.length);
        expect((p + a).slice(0, n)).toBe((p + b).slice(0, n));
        if (n < Math.min(p.length + a.length, p.length + b.length)) expect((p + a)[n]).not.toBe((p + b)[n]);
      }),
    );
  });

  it("quantile takes the nearest rank", () => {
    expect(quantile([5, 1, 3, 2, 4], 0.5)).toBe(3);
    expect(quantile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.9)).toBe(9);
    expect(quantile([], 0.5)).toBeNaN();
  });

  it("a prediction is accurate within 10% of the engine's cached tokens; none predicted counts as 0", () => {
    expect(accurate(950, 1000)).toBe(true);
    expect(accurate(1100, 1000)).toBe(true);
    expect(accurate(1101, 1000)).toBe(false);
    expect(accurate(undefined, 0)).toBe(true);
    expect(accurate(undefined, 500)).toBe(false);
  });

  it("rows: engine-reported hit, the pooled ideal, shares, predictions after a prefix's first sight; failures counted apart", () => {
    const [row] = engineRows(
      result([
        {
          engine: "llama",
          strategy: "prefix-aware",
          records: [
            record({ target: "i0", predictedCachedTokens: 0 }),
            record({ target: "i0", cachedTokens: 900, idealCachedTokens: 950, seenPrefix: true, predictedCachedTokens: 880 }),
            record({ target: "i1", cachedTokens: 0, idealCachedTokens: 950, seenPrefix: true, predictedCachedTokens: 900 }),
            record({ target: "i1", error: "boom", promptTokens: 0 }),
          ],
        },
      ]),
    );
    expect(row!.hitRate).toBeCloseTo(900 / 3000);
    expect(row!.idealHitRate).toBeCloseTo(1900 / 3000);
    expect(row!.shares).toEqual({ i0: 2 / 3, i1: 1 / 3 });
    expect(row!.predictions).toEqual({ tested: 2, within: 1 });
    expect(row!.errors).toBe(1);
  });

  it("checks: the default strategy against least-outstanding + 10 points, 80% of the ideal, and P50s", () => {
    const rows = engineRows(
      result([
        { engine: "llama", strategy: "random", records: [record({ ttftMs: 1000, cachedTokens: 100, idealCachedTokens: 800 })] },
        { engine: "llama", strategy: "least-outstanding", records: [record({ ttftMs: 400, cachedTokens: 500, idealCachedTokens: 800 })] },
        { engine: "llama", strategy: "prefix-aware", records: [record({ ttftMs: 300, cachedTokens: 700, idealCachedTokens: 800 })] },
      ]),
    );
    const checks = engineChecks(rows);
    expect(checks.map((c) => [c.what, c.met])).toEqual([
      ["prefix-aware: hit ≥ least-outstanding + 10 points", true],
      ["prefix-aware: P50 ≤ least-outstanding's", true],
      ["prefix-aware: hit ≥ 80% of the pooled ideal", true],
      ["prefix-aware: P50 ≤ 0.35 × random's", true],
    ]);
  });

  it("the report explains its columns, says whether a missed check fails the run, and has no emulator lines without the emulator", () => {
    const runs = (engine: "llama" | "emulated") => [
      { engine, strategy: "random" as const, records: [record({ ttftMs: 1000, cachedTokens: 100, idealCachedTokens: 800 })] },
      { engine, strategy: "prefix-aware" as const, records: [record({ ttftMs: 600, cachedTokens: 700, idealCachedTokens: 800 })] },
    ];
    const timing = { overheadMs: 1, prefillMsPerToken: 0.01, decodeMsPerToken: 1 };
    const llamaOnly = { ...result(runs("llama")), timing };
    const text = formatEngineReport(llamaOnly, engineRows(llamaOnly));
    for (const term of ["hit (engine)", "pooled ideal", "of ideal", "P50/P90 ms", "shares %", "predictions within 10%"]) expect(text).toContain(`\n${term}`);
    expect(text).toContain("Checks (1 missed: exit code 1 (--no-checks: report only)):");
    expect(text).toContain(`More: ${ENGINE_BENCH_DOC}`);
    expect(text).not.toMatch(/Emulated/);
    expect(formatEngineReport(llamaOnly, engineRows(llamaOnly), false)).toContain("Checks (1 missed (not enforced: --no-checks)):");
    const both = { ...result([...runs("llama"), ...runs("emulated")]), timing };
    expect(formatEngineReport(both, engineRows(both))).toMatch(/\nEmulated timing \(fitted to the llama run/);
  });

  it("the emulator check compares hit rates per strategy and whether the rankings agree", () => {
    const rows = engineRows(
      result([
        { engine: "llama", strategy: "random", records: [record({ cachedTokens: 300 })] },
        { engine: "llama", strategy: "prefix-aware", records: [record({ cachedTokens: 700 })] },
        { engine: "emulated", strategy: "random", records: [record({ cachedTokens: 350 })] },
        { engine: "emulated", strategy: "prefix-aware", records: [record({ cachedTokens: 650 })] },
      ]),
    );
    const check = emulatorCheck(rows)!;
    expect(check.rankingsAgree).toBe(true);
    expect(check.maxDifferencePoints).toBeCloseTo(5);
    expect(check.llamaRanking).toEqual(["prefix-aware", "random"]);
    expect(emulatorCheck(rows.filter((r) => r.engine === "llama"))).toBeUndefined();
  });

  it("fitEmulated recovers the engine's prefill line and decode time from its records", () => {
    const records = Array.from({ length: 20 }, (_, i) =>
      record({ promptTokens: 2000, cachedTokens: 100 * i, engineTtftMs: 12 + 0.5 * (2000 - 100 * i) + 30, engineQueueMs: 30, ttftMs: 50, durationMs: 50 + 15 * 8, completionTokens: 9 }),
    );
    const t = fitEmulated(records)!;
    expect(t.overheadMs).toBeCloseTo(12);
    expect(t.prefillMsPerToken).toBeCloseTo(0.5);
    expect(t.decodeMsPerToken).toBeCloseTo(15);
    expect(fitEmulated(records.slice(0, 3))).toBeUndefined();
  });
});

describe("bench --engine: the command line", () => {
  it("parses its options with defaults", () => {
    const a = parseEngineArgs(["--engine", "llama,emulated", "--sessions", "20", "--time-limit", "5m"]);
    expect(a).toMatchObject({ engines: ["llama", "emulated"], workload: "short-prompts", instances: 4, slots: 4, concurrency: 4, sessions: 20, seeds: [1], timeLimitMs: 300_000 });
    expect(a.strategies).toEqual(["random", "least-outstanding", "prefix-aware", "longest-prefix"]);
    expect(a.routers).toEqual([1]);
    expect(parseEngineArgs(["--engine", "llama", "--routers", "1,4", "--routers", "4"]).routers).toEqual([1, 4]);
    expect(parseEngineArgs(["--engine", "llama", "--seed", "1-3,7", "--seed", "2"]).seeds).toEqual([1, 2, 3, 7]);
  });

  it.each([
    [["--engine", "gpu"], /Unknown engine `gpu`/],
    [["--engine", "llama", "--workload", "rag"], /Unknown workload `rag`/],
    [["--engine", "llama", "--strategies", "fastest"], /Unknown strategy `fastest`/],
    [["--engine", "llama", "--slots", "0"], /`--slots` to be an integer from 1 to 64, got "0"/],
    [["--engine", "llama", "--prefix-length", "10"], /`--prefix-length`/],
    [["--engine", "llama", "--routers", "0"], /`--routers` to be integers from 1 to 64, got 0/],
    [["--engine", "llama", "--routers", "two"], /`--routers` to hold integers, got "two"/],
    [["--engine", "llama", "--seed", "3-1"], /`--seed` to hold integers ≥ 0 or ranges like 1-5/],
    [["--engine", "llama", "--seed", "one"], /`--seed` to hold integers ≥ 0/],
    [["--engine", "llama", "--seed", "4294967296"], /`--seed` to hold integers from 0 to 2147483647, got 4294967296/],
    [["--engine", "llama", "--seed", "1-2", "--report", "r.html"], /`--report` draws one run: give it one `--seed`/],
  ])("refuses %j with a BenchError naming the option", (argv, message) => {
    let error: unknown;
    try {
      parseEngineArgs(argv);
    } catch (e) {
      error = e;
    }
    expect(isBenchError(error) && error.code).toBe("ERR_BENCH_OPTION");
    expect((error as Error).message).toMatch(message);
  });

  it("is reached from `bench` with --engine; a usage error exits with 2", async () => {
    const err: string[] = [];
    const code = await runBenchCommand(["--engine", "gpu"], { out: () => {}, err: (l) => err.push(l) });
    expect(code).toBe(2);
    expect(err.join("\n")).toMatch(/Unknown engine/);
    const out: string[] = [];
    expect(await runBenchCommand(["--engine", "llama", "--help"], { out: (l) => out.push(l), err: () => {} })).toBe(0);
    expect(out.join("\n")).toMatch(/--context-size/);
    expect(out.join("\n")).toMatch(/--no-checks/);
  });

  it("exits with 1 when a printed check is missed, 0 with --no-checks", { timeout: 120_000 }, async () => {
    const argv = ["--engine", "emulated", "--sessions", "4", "--strategies", "random,prefix-aware", "--instances", "2", "--slots", "2", "--context-size", "2048", "--concurrency", "2", "--max-tokens", "2", "-q"];
    const out: string[] = [];
    const code = await runBenchCommand(argv, { out: (l) => out.push(l), err: () => {} });
    const missed = /^\s+missed\s/m.test(out.join("\n"));
    expect(code).toBe(missed ? 1 : 0);
    expect(parseEngineArgs([...argv, "--no-checks"]).checks).toBe(false);
    expect(parseEngineArgs(argv).checks).toBe(true);
  });
});

describe("a run on the emulated fleet", () => {
  it("plays every session through the router for each strategy, on fleets of its own", { timeout: 60_000 }, async () => {
    const workload = engineWorkload("short-prompts", 1, { sessions: 12, prefixChars: 600 });
    const res = await runEngineBench({
      engines: ["emulated"],
      workload,
      strategies: ["random", "prefix-aware"],
      instances: 2,
      slots: 2,
      contextSize: 2048,
      concurrency: 2,
      maxTokens: 4,
      seed: 1,
      timing: { overheadMs: 1, prefillMsPerToken: 0.01, decodeMsPerToken: 1 },
    });
    expect(res.sessions).toBe(12);
    expect(res.runs.map((r) => [r.strategy, r.publishes])).toEqual([
      ["random", false],
      ["prefix-aware", false],
    ]);
    for (const run of res.runs) {
      expect(run.records).toHaveLength(12);
      expect(run.records.every((r) => r.error === undefined && r.promptTokens > 0 && run.targets.includes(r.target!))).toBe(true);
      expect(run.records.every((r) => r.ttftMs > 0 && r.ttftMs <= r.durationMs)).toBe(true);
    }
    // Every record says why its target was picked (the decision's reason).
    for (const run of res.runs) expect(run.records.every((r) => typeof r.reason?.kind === "string" && r.reason.rank >= 0)).toBe(true);
    // prefix-aware predicts (0 on a first sight); random never does.
    expect(res.runs[1]!.records.every((r) => r.predictedCachedTokens !== undefined)).toBe(true);
    expect(res.runs[0]!.records.every((r) => r.predictedCachedTokens === undefined)).toBe(true);
  });

  it("--routers 1,2: a run per number of router processes; with 2, each turn through the process drawn from the seed, every session played", { timeout: 120_000 }, async () => {
    const workload = engineWorkload("long-documents", 1, { sessions: 6, prefixChars: 600 });
    const res = await runEngineBench({
      engines: ["emulated"],
      workload,
      strategies: ["prefix-aware"],
      routers: [1, 2],
      instances: 2,
      slots: 2,
      contextSize: 2048,
      concurrency: 2,
      maxTokens: 4,
      seed: 1,
      timing: { overheadMs: 1, prefillMsPerToken: 0.01, decodeMsPerToken: 1 },
    });
    expect(res.runs.map((r) => [r.strategy, r.routers])).toEqual([
      ["prefix-aware", 1],
      ["prefix-aware", 2],
    ]);
    const [one, two] = res.runs;
    expect(one!.records.every((r) => r.router === undefined)).toBe(true);
    expect(two!.records).toHaveLength(18);
    for (const r of two!.records) {
      expect(r.error).toBeUndefined();
      expect(r.router).toBe(routerOf(1, r.session, r.turn, 2));
      expect(r.promptTokens).toBeGreaterThan(0);
      expect(two!.targets).toContain(r.target);
      expect(r.predictedCachedTokens).toBeDefined();
      // The reason crosses the process boundary with the outcome.
      expect(r.reason).toMatchObject({ kind: expect.any(String), predictedCachedTokens: r.predictedCachedTokens });
    }
    // Both processes played turns, and some session's turns went through both.
    expect(new Set(two!.records.map((r) => r.router)).size).toBe(2);
    const sessions = [...new Set(two!.records.map((r) => r.session))];
    expect(sessions.some((s) => new Set(two!.records.filter((r) => r.session === s).map((r) => r.router)).size === 2)).toBe(true);
    // Rows per number of routers; the table shows the column only then.
    const rows = engineRows(res);
    expect(rows.map((r) => r.routers)).toEqual([1, 2]);
    expect(engineTable(rows)[0]).toContain("| routers |");
    expect(engineTable(rows.slice(0, 1))[0]).not.toContain("routers");
    expect(formatEngineReport(res, rows)).toContain("emulated ×2");
  });
});
