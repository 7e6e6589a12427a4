import { runBenchmark } from "prefix-router/bench";
import { describe, expect, it } from "vitest";
import { FINE_BUCKET_MS, FineSeries, analyzeRestart } from "../../../tools/bench/restarts.js";
import { parseRestartEvent } from "../../../tools/bench/options.js";
import { parseBenchArgs } from "../../../tools/bench/options.js";

describe("--restart-at", () => {
  it.each([
    ["10m:i3", { atMs: 600_000, instance: "i3" }],
    ["90s:3", { atMs: 90_000, instance: "i3" }],
    ["10m:i3:1m", { atMs: 600_000, instance: "i3", downMs: 60_000 }],
  ])("parses %s", (text, event) => {
    expect(parseRestartEvent(text)).toEqual(event);
  });

  it("names the option and the value when it cannot parse", () => {
    expect(() => parseBenchArgs(["--restart-at", "10m"])).toThrow('Expected `--restart-at` like 10m:i3 or 10m:i3:1m (down for a minute), got "10m"');
    expect(parseBenchArgs(["--restart-at", "1m:i0", "--restart-at", "2m:i1:30s"]).restarts).toEqual([
      { atMs: 60_000, instance: "i0" },
      { atMs: 120_000, instance: "i1", downMs: 30_000 },
    ]);
  });
});

describe("analyzeRestart", () => {
  /** A series with one request of 1,000 tokens per bucket, hit rate `rate(t)`. */
  const series = (rate: (tMs: number) => number, untilMs: number) => {
    const s = new FineSeries();
    for (let t = 0; t < untilMs; t += FINE_BUCKET_MS) s.record(t, 1000, Math.round(1000 * rate(t)));
    return s;
  };

  it("measures the gap to the run without the restart and the time until it is within 2 points", () => {
    const reference = series(() => 0.9, 20 * 60_000);
    // 30 points below for 60 s after 10 min, then back.
    const run = series((t) => (t >= 600_000 && t < 660_000 ? 0.6 : 0.9), 20 * 60_000);
    const r = analyzeRestart({ atMs: 600_000, instance: "i3" }, run, reference, 20 * 60_000);
    expect(r.dip).toBeCloseTo(0.3, 6);
    // The first 30 s window wholly after the dip ends at 1m30s.
    expect(r.recoveryMs).toBe(90_000);
    expect(r.recoveryAfterUpMs).toBe(90_000);
    expect(r.gaps.map((g) => [g.afterMs, Number(g.gap?.toFixed(3))])).toEqual([
      [30_000, 0.3],
      [60_000, 0.3],
      [120_000, 0],
      [300_000, 0],
    ]);
    // 5 minutes from the restart (no downtime): 12 buckets at 0.6, 48 at 0.9.
    expect(r.hitRateAfterUp).toBeCloseTo((12 * 0.6 + 48 * 0.9) / 60, 6);
    // With a minute down, the 5 minutes start when it serves again; past the run, none.
    expect(analyzeRestart({ atMs: 600_000, instance: "i3", downMs: 60_000 }, run, reference, 20 * 60_000).hitRateAfterUp).toBeCloseTo(0.9, 6);
    expect(analyzeRestart({ atMs: 600_000, instance: "i3" }, run, reference, 14 * 60_000).hitRateAfterUp).toBeNull();
  });

  it("reports no recovery when the gap never closes, and 0 when it never opened", () => {
    const reference = series(() => 0.9, 15 * 60_000);
    const worse = series((t) => (t >= 600_000 ? 0.5 : 0.9), 15 * 60_000);
    expect(analyzeRestart({ atMs: 600_000, instance: "i0" }, worse, reference, 15 * 60_000).recoveryMs).toBeNull();
    expect(analyzeRestart({ atMs: 600_000, instance: "i0" }, reference, reference, 15 * 60_000)).toMatchObject({ dip: 0, recoveryMs: 0 });
  });
});

describe("runBenchmark with restarts", () => {
  it("reports per row the gap to the same run without the restart; the closed loop recovers no later than without it", async () => {
    const rows = await runBenchmark({
      workloads: ["long-context"],
      strategies: ["longest-prefix", "longest-prefix:open-loop"],
      durationsMs: [180_000],
      rateMultipliers: [3],
      restarts: [{ atMs: 90_000, instance: "i3", downMs: 20_000 }],
    });
    expect(rows.map((r) => r.strategy)).toEqual(["longest-prefix", "longest-prefix:open-loop"]);
    const [closed, open] = rows.map((r) => r.restarts![0]!);
    for (const r of [closed!, open!]) {
      expect(r).toMatchObject({ atMs: 90_000, instance: "i3", downMs: 20_000 });
      expect(r.dip).toBeGreaterThan(0.02);
      expect(r.referenceHitRate!).toBeGreaterThan(r.hitRate!);
    }
    expect(closed!.hitRate!).toBeGreaterThan(open!.hitRate!);
    expect(closed!.recoveryMs!).toBeLessThanOrEqual(open!.recoveryMs ?? Number.POSITIVE_INFINITY);
  });

  it("refuses an instance the fleet does not have, and peer models when the instance is down", async () => {
    await expect(runBenchmark({ workloads: ["hot-prefix"], strategies: ["random"], durationsMs: [20_000], restarts: [{ atMs: 10_000, instance: "i9" }] })).rejects.toThrow(
      "Cannot restart `i9` at 10000 ms: the fleet has i0, i1, i2, i3, i4, i5, i6",
    );
    await expect(
      runBenchmark({ workloads: ["hot-prefix"], strategies: ["peer:kubeai-prefixhash"], durationsMs: [20_000], restarts: [{ atMs: 10_000, instance: "i0", downMs: 5_000 }] }),
    ).rejects.toThrow("`peer:kubeai-prefixhash` cannot route around an instance that is down");
  });
});
