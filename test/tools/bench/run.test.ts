import { runBenchmark } from "prefix-router/bench";
import type { BenchRow, PolicyFactory } from "prefix-router/bench";
import { describe, expect, it } from "vitest";

/** A row without its wall-clock measurements: everything that must be deterministic. */
const simulated = (rows: readonly BenchRow[]) => JSON.stringify(rows.map(({ wall: _wall, ...rest }) => rest));

describe("runBenchmark", () => {
  it("is deterministic: the same seed gives identical JSON results, another seed different ones", async () => {
    const options = {
      workloads: ["sharegpt", "rag"] as const,
      durationsMs: [60_000],
      seeds: [7],
    };
    const a = await runBenchmark({ ...options, workloads: [...options.workloads] });
    const b = await runBenchmark({ ...options, workloads: [...options.workloads] });
    expect(a.length).toBeGreaterThan(0);
    expect(simulated(a)).toBe(simulated(b));
    const c = await runBenchmark({ ...options, workloads: [...options.workloads], seeds: [8] });
    expect(simulated(c)).not.toBe(simulated(a));
  });

  it("replays the same sequence for every strategy and reports TTFT percentiles, hit rate vs ideal, throughput, spillover and shares", async () => {
    const rows = await runBenchmark({
      workloads: ["long-context"],
      strategies: ["random", "least-outstanding", "prefix-aware"],
      durationsMs: [120_000],
      prefixLengths: [1024, 4096],
    });
    expect(rows).toHaveLength(4);
    const keyed = rows.filter((r) => r.prefixLength !== null);
    expect(rows.filter((r) => r.strategy === "random")).toHaveLength(1);
    expect(rows.find((r) => r.strategy === "random")).toMatchObject({ prefixLength: null, concurrencyThreshold: null });
    expect(new Set(keyed.map((r) => r.prefixLength))).toEqual(new Set([1024, 4096]));
    // Same sequence: same request count and the same (strategy-independent) ideal everywhere.
    expect(new Set(rows.map((r) => r.requests)).size).toBe(1);
    expect(new Set(rows.map((r) => r.idealHitRate)).size).toBe(1);
    for (const r of rows) {
      for (const field of ["ttftP50Ms", "ttftP90Ms", "ttftP99Ms", "tokenHitRate", "idealHitRate", "throughput", "spilloverRate", "minShare", "maxShare"] as const) {
        expect(typeof r[field]).toBe("number");
      }
      expect(r.ttftP50Ms).toBeLessThanOrEqual(r.ttftP90Ms);
      expect(r.ttftP90Ms).toBeLessThanOrEqual(r.ttftP99Ms);
      expect(r.tokenHitRate).toBeLessThanOrEqual(r.idealHitRate + 1e-9);
      expect(r.minShare).toBeLessThanOrEqual(r.maxShare);
      expect(Object.values(r.instanceShares).reduce((s, v) => s + v, 0)).toBeCloseTo(1, 4);
      expect(r.wall.decisionsPerSecond).toBeGreaterThan(0);
    }
    const random = rows.find((r) => r.strategy === "random")!;
    const prefixAware = rows.find((r) => r.strategy === "prefix-aware" && r.prefixLength === 4096)!;
    // Requests that share an 8,000-token document: affinity keeps (almost) every reuse the ideal
    // cache would, random loses most of them, and mean TTFT follows.
    expect(prefixAware.tokenHitRate).toBeGreaterThan(0.95 * prefixAware.idealHitRate);
    expect(random.tokenHitRate).toBeLessThan(0.5 * random.idealHitRate);
    expect(prefixAware.ttftMeanMs).toBeLessThan(random.ttftMeanMs);
  });

  it("adds an instance mid-run: the new instance gets traffic only after the event, the dip is reported", async () => {
    const [random, prefixAware] = await runBenchmark({
      workloads: ["long-context"],
      strategies: ["random", "prefix-aware"],
      durationsMs: [240_000],
      scaleEvents: [{ atMs: 120_000, delta: 1 }],
    });
    for (const r of [random!, prefixAware!]) {
      expect(Object.keys(r.instanceShares)).toEqual(["i0", "i1", "i2", "i3", "i4", "i5", "i6", "i7"]);
      // Joined halfway: it gets some traffic, less than the instances that were there all along.
      expect(r.instanceShares["i7"]).toBeGreaterThan(0);
      expect(r.instanceShares["i7"]).toBe(r.minShare);
      expect(r.scaleEvents).toHaveLength(1);
      const e = r.scaleEvents[0]!;
      expect(e).toMatchObject({ atMs: 120_000, delta: 1, instances: 8 });
      expect(e.baselineHitRate).not.toBeNull();
      expect(e.dip).toBeGreaterThanOrEqual(0);
    }
  });

  it("removes instances mid-run: every request still completes, removed instances serve less", async () => {
    const rows = await runBenchmark({
      workloads: ["sharegpt"],
      strategies: ["least-outstanding", "prefix-aware"],
      durationsMs: [120_000],
      scaleEvents: [{ atMs: 60_000, delta: -3 }],
    });
    const full = await runBenchmark({ workloads: ["sharegpt"], strategies: ["least-outstanding"], durationsMs: [120_000] });
    for (const r of rows) {
      expect(r.requests).toBe(full[0]!.requests);
      expect(r.scaleEvents[0]).toMatchObject({ atMs: 60_000, delta: -3, instances: 4 });
      // i4..i6 served only the first half: clearly less than the survivors.
      for (const gone of ["i4", "i5", "i6"]) expect(r.instanceShares[gone]!).toBeLessThan(r.instanceShares["i0"]!);
    }
  });

  it("runs a custom policy through the same loop", async () => {
    let routed = 0;
    let released = 0;
    const firstTarget: PolicyFactory = {
      name: "always-first",
      usesPrefixLength: false,
      usesConcurrencyThreshold: false,
      async create(ctx) {
        let targets = [...ctx.targets];
        return {
          route() {
            routed++;
            return { targetId: targets[0]!, spilled: false, release: () => void released++ };
          },
          setTargets(ids) {
            targets = [...ids];
          },
        };
      },
    };
    const [row] = await runBenchmark({ workloads: ["rag"], strategies: [firstTarget], durationsMs: [30_000] });
    expect(row!.strategy).toBe("always-first");
    expect(row!.maxShare).toBe(1);
    expect(row!.minShare).toBe(0);
    expect(routed).toBe(row!.requests);
    expect(released).toBe(routed);
  });

  it("spreads requests over independent router processes, each with its own state, all released", async () => {
    const made: { routed: number; released: number }[] = [];
    const counting: PolicyFactory = {
      name: "counting",
      usesPrefixLength: false,
      usesConcurrencyThreshold: false,
      async create(ctx) {
        const me = { routed: 0, released: 0 };
        made.push(me);
        return {
          route() {
            me.routed++;
            return { targetId: ctx.targets[me.routed % ctx.targets.length]!, spilled: false, release: () => void me.released++ };
          },
          setTargets() {},
        };
      },
    };
    const [row] = await runBenchmark({ workloads: ["rag"], strategies: [counting], durationsMs: [30_000], routers: [4] });
    expect(row!.routers).toBe(4);
    expect(made).toHaveLength(4);
    expect(made.reduce((s, m) => s + m.routed, 0)).toBe(row!.requests);
    for (const m of made) {
      expect(m.released).toBe(m.routed);
      // Uniform at random per request: each process takes about a quarter.
      expect(m.routed / row!.requests).toBeGreaterThan(0.15);
      expect(m.routed / row!.requests).toBeLessThan(0.35);
    }
  });

  it("keeps a stateless hash's results with any number of router processes; routers: 1 is the default", async () => {
    const options = { workloads: ["rag" as const], strategies: ["prefix-aware"], durationsMs: [60_000], prefixLengths: [4096] };
    const [one, four] = await runBenchmark({ ...options, routers: [1, 4] });
    const [byDefault] = await runBenchmark(options);
    expect(simulated([byDefault!])).toBe(simulated([one!]));
    // Every process hashes a prefix to the same instance, and with nothing at its threshold the
    // in-flight counts, local to each process, never come into play.
    expect(four!.routers).toBe(4);
    expect(four!.tokenHitRate).toBe(one!.tokenHitRate);
    expect(four!.instanceShares).toEqual(one!.instanceShares);
  });

  it("longest-prefix keeps its hit rate with four router processes, exclusive or not", async () => {
    const rows = await runBenchmark({
      workloads: ["sharegpt"],
      strategies: ["longest-prefix", "longest-prefix:exclusive"],
      durationsMs: [180_000],
      routers: [1, 4],
    });
    const hit = (strategy: string, routers: number) => rows.find((r) => r.strategy === strategy && r.routers === routers)!.tokenHitRate;
    // Conversations whose turns arrive through different processes: each process that has not
    // seen the conversation places it anew, so the processes must agree where it goes.
    expect(hit("longest-prefix", 1) - hit("longest-prefix", 4)).toBeLessThan(0.05);
    // exclusive: true acts on smaller gaps in queued prefill, among the same candidates.
    expect(hit("longest-prefix:exclusive", 1) - hit("longest-prefix:exclusive", 4)).toBeLessThan(0.05);
  });

  it.each([
    [{ routers: [0] }, /`routers`/],
    [{ workloads: ["nope" as never] }, /Unknown workload `nope`/],
    [{ strategies: ["fastest"] }, /Unknown strategy `fastest`/],
    [{ instances: [0] }, /`instances`/],
    [{ prefixLengths: [100] }, /`prefixLengths`/],
    [{ concurrencyThresholds: [2000] }, /`concurrencyThresholds`/],
    [{ rateMultipliers: [-1] }, /`rateMultipliers`/],
    [{ scaleEvents: [{ atMs: 1000, delta: -7 }] }, /at least 1 must remain/],
    [{ scaleEvents: [{ atMs: 1000, delta: 0 }] }, /scale event/],
  ])("rejects invalid options %#", async (options, message) => {
    await expect(runBenchmark({ durationsMs: [1000], ...options })).rejects.toMatchObject({ code: "ERR_BENCH_OPTION", message: expect.stringMatching(message) });
  });
});
