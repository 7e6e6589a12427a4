import { describe, expect, it } from "vitest";
import { IdealCache, RunRecorder, analyzeScaleEvent } from "../../../tools/bench/metrics.js";
import { parseDuration, parseTokenCount } from "../../../tools/common/cli.js";
import { parseScaleEvent } from "../../../tools/bench/options.js";

describe("IdealCache", () => {
  it("hits the longest run of leading blocks seen before, capped so one token is recomputed", () => {
    const ideal = new IdealCache(16);
    expect(ideal.observe([1, 2, 3], 50)).toBe(0);
    expect(ideal.observe([1, 2, 4], 50)).toBe(32); // blocks 1, 2
    expect(ideal.observe([1, 2, 3], 48)).toBe(32); // all 3 seen, but (48 − 1) / 16 → 2 blocks
    expect(ideal.observe([9], 20)).toBe(0);
    expect(ideal.hitRate).toBeCloseTo(64 / 168, 10);
    expect(ideal.blocks).toBe(5);
  });
});

describe("RunRecorder", () => {
  it("reports exact (nearest-rank) percentiles, hit rate, shares and spillover", () => {
    const rec = new RunRecorder({ bucketMs: 1000 });
    rec.registerInstance("idle");
    for (let i = 1; i <= 1000; i++) {
      rec.recordDecision(i % 4 === 0 ? "b" : "a", i % 10 === 0);
      rec.recordCompletion({ arrivalMs: i, firstTokenMs: i + i, finishMs: i + 2000, queueMs: 1, promptTokens: 100, cachedTokens: i <= 500 ? 0 : 50, outputTokens: 10 });
    }
    const m = rec.finish();
    expect([m.ttftP50Ms, m.ttftP90Ms, m.ttftP99Ms]).toEqual([500, 900, 990]);
    expect(m.ttftCdf[0]).toEqual([1, 10]);
    expect(m.tokenHitRate).toBeCloseTo(0.25, 10);
    expect(m.spilloverRate).toBeCloseTo(0.1, 10);
    expect(m.instanceShares).toEqual({ idle: 0, a: 0.75, b: 0.25 });
    expect(m.minShare).toBe(0);
    expect(m.maxShare).toBe(0.75);
    expect(m.queueMeanMs).toBe(1);
    expect(m.throughput).toBeCloseTo(1000 / ((3000 - 1) / 1000), 6);
    expect(m.ttftCdf.at(-1)![0]).toBe(99.9);
    expect(m.hitRateSeries.map((p) => p.requests)).toEqual([999, 1]);
  });

  it("tells apart TTFTs 10 µs apart near 70 ms, and orders recordings that arrive out of order", () => {
    const p50 = (base: number) => {
      const rec = new RunRecorder({ bucketMs: 1000 });
      for (const i of [3, 1, 4, 0, 2]) rec.recordCompletion({ arrivalMs: 0, firstTokenMs: base + i * 0.01, finishMs: 100, queueMs: 0, promptTokens: 1, cachedTokens: 0, outputTokens: 1 });
      return rec.finish().ttftP50Ms;
    };
    expect(p50(70)).toBeCloseTo(70.02, 9);
    expect(p50(70.01)).toBeCloseTo(70.03, 9);
  });

  it("reports zeros for a run with no completed request", () => {
    const m = new RunRecorder({ bucketMs: 1000 }).finish();
    expect([m.requests, m.ttftP50Ms, m.ttftP99Ms, m.ttftCdf.length]).toEqual([0, 0, 0, 0]);
  });
});

describe("analyzeScaleEvent", () => {
  const series = (rates: number[]) => rates.map((r, i) => ({ tMs: i * 1000, prompt: 100, cached: r * 100 }));
  const event = { atMs: 10_000, delta: 1, instances: 8 };

  it("measures the dip below the level before the event and the time until it is back", () => {
    const rates = [...Array(10).fill(0.8), 0.5, 0.5, 0.5, 0.6, 0.7, 0.8, 0.8, 0.8, 0.8, 0.8];
    const r = analyzeScaleEvent(event, series(rates), 1000, 0, 20_000);
    expect(r.baselineHitRate).toBeCloseTo(0.8, 10);
    expect(r.minHitRate).toBeCloseTo(0.5, 10);
    expect(r.dip).toBeCloseTo(0.3, 10);
    // First 3-bucket window within 2 points of 0.8: buckets 15..17, ends at 18 s.
    expect(r.recoveryMs).toBe(8000);
  });

  it("reports 0 when the hit rate never left the baseline and null when it never came back", () => {
    expect(analyzeScaleEvent(event, series(Array(20).fill(0.8)), 1000, 0, 20_000).recoveryMs).toBe(0);
    const never = analyzeScaleEvent(event, series([...Array(10).fill(0.8), ...Array(10).fill(0.4)]), 1000, 0, 20_000);
    expect(never.dip).toBeCloseTo(0.4, 10);
    expect(never.recoveryMs).toBeNull();
  });
});

describe("command-line values", () => {
  it("parses durations, token counts and scale events", () => {
    expect(parseDuration("1h30m", "--duration")).toBe(5_400_000);
    expect(parseDuration("90s", "--duration")).toBe(90_000);
    expect(parseDuration("250ms", "--duration")).toBe(250);
    expect(parseTokenCount("1.2M", "--capacity")).toBe(1_200_000);
    expect(parseTokenCount("600k", "--capacity")).toBe(600_000);
    expect(parseScaleEvent("30m:+1")).toEqual({ atMs: 1_800_000, delta: 1 });
    expect(parseScaleEvent("45m:-2")).toEqual({ atMs: 2_700_000, delta: -2 });
  });

  it.each([
    () => parseDuration("5", "--duration"),
    () => parseDuration("1x", "--duration"),
    () => parseTokenCount("-3", "--capacity"),
    () => parseScaleEvent("30m"),
    () => parseScaleEvent("30m:+0"),
  ])("rejects malformed values %#", (f) => {
    expect(f).toThrow(expect.objectContaining({ code: "ERR_BENCH_OPTION" }));
  });
});
