import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { TargetState } from "../../src/router/target-state.js";

describe("latency summaries", () => {
  it("never report a percentile above the recorded maximum", () => {
    // 123.457 ms falls in an HDR bucket whose upper end is 123.903 ms: the bucket's end is no sample.
    const s = new TargetState("a");
    for (const ms of [1.001, 1.234, 5.678, 123.457]) s.recordTtft(ms);
    const summary = s.ttftSummary();
    expect(summary?.max).toBe(123.457);
    expect(summary?.p99).toBe(123.457);
    expect(summary?.p90).toBe(123.457);
  });

  it("orders p50 ≤ p90 ≤ p99 ≤ max, within 1% of the exact percentile (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 10_000_000 }), { minLength: 1, maxLength: 300 }), (micros) => {
        const s = new TargetState("a");
        for (const us of micros) s.recordDuration(us / 1000);
        const d = s.durationSummary()!;
        const sorted = [...micros].sort((a, b) => a - b);
        expect(d.count).toBe(micros.length);
        expect(d.max).toBe(sorted[sorted.length - 1]! / 1000);
        expect(d.p50).toBeLessThanOrEqual(d.p90);
        expect(d.p90).toBeLessThanOrEqual(d.p99);
        expect(d.p99).toBeLessThanOrEqual(d.max);
        for (const [p, v] of [[50, d.p50], [90, d.p90], [99, d.p99]] as const) {
          const exact = sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]! / 1000;
          expect(Math.abs(v - exact)).toBeLessThanOrEqual(exact * 0.01 + 0.001);
        }
      }),
    );
  });
});
