/**
 * The HTML report's charts: axes fitted to the data, at most four series per chart, small
 * multiples sharing axes and colours.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type BenchRow, renderHtmlReport, runBenchmark } from "prefix-router/bench";
import { type ChartSpec } from "../../../tools/common/html.js";
import { MAX_SERIES_PER_CHART, logDomain, smallMultiples } from "../../../tools/bench/chart-layout.js";
import { chartSpecs, seriesLabel, ttftCdfSpec } from "../../../tools/bench/report.js";

describe("smallMultiples", () => {
  it("splits into the fewest groups of at most four, as even as possible, keeping the order", () => {
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 40 }), (items) => {
        const groups = smallMultiples(items);
        expect(groups.flat()).toEqual(items);
        expect(groups).toHaveLength(Math.max(1, Math.ceil(items.length / MAX_SERIES_PER_CHART)));
        const sizes = groups.map((g) => g.length);
        expect(Math.max(...sizes)).toBeLessThanOrEqual(MAX_SERIES_PER_CHART);
        expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
      }),
    );
  });
});

describe("logDomain", () => {
  it("spans the data with a tenth of a decade either side, whatever its range", () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: 0.01, max: 1e6, noNaN: true }), { minLength: 1 }), (values) => {
        const [lo, hi] = logDomain(values);
        expect(lo).toBeCloseTo(Math.min(...values) / 10 ** 0.1, 6);
        expect(hi).toBeCloseTo(Math.max(...values) * 10 ** 0.1, 6);
      }),
    );
    expect(logDomain([])).toEqual([0.001, 1]);
  });
});

/** Series labels, x domains and colour domains of a spec, through its layers. */
function seriesOf(spec: ChartSpec): Set<string> {
  const layers = (spec.layer as ChartSpec[] | undefined) ?? [spec];
  const values = layers.flatMap((l) => ((l.data as { values: { series?: string }[] } | undefined)?.values ?? []).map((v) => v.series));
  return new Set(values.filter((s): s is string => s !== undefined && !s.startsWith("ideal")));
}

function encodingOf(spec: ChartSpec): Record<string, { scale?: { domain?: unknown } }> {
  const layers = (spec.layer as ChartSpec[] | undefined) ?? [spec];
  return layers[0]!.encoding as Record<string, { scale?: { domain?: unknown } }>;
}

describe("report charts", () => {
  it("fit the TTFT axis to the data, not to 10–1000 ms", async () => {
    const [row] = await runBenchmark({ workloads: ["long-context"], strategies: ["random"], durationsMs: [20_000] });
    const slow: BenchRow = { ...row!, ttftCdf: row!.ttftCdf.map(([p, ms]) => [p, 2000 + 70 * p]) };
    const [lo, hi] = encodingOf(ttftCdfSpec([slow])).x!.scale!.domain as [number, number];
    expect(lo).toBeGreaterThan(1000);
    expect(lo).toBeLessThan(2000);
    expect(hi).toBeGreaterThan(9000);
    expect(hi).toBeLessThan(12_000);
  });

  it("draw eight strategies as two small multiples of four per chart, sharing axes and colours", async () => {
    const base = await runBenchmark({ workloads: ["hot-prefix"], strategies: ["random", "prefix-aware"], durationsMs: [20_000] });
    const rows = Array.from({ length: 8 }, (_, i): BenchRow => {
      const r = base[i % 2]!;
      return { ...r, strategy: `strategy-${i}`, ttftCdf: r.ttftCdf.map(([p, ms]) => [p, ms * (1 + i)]) };
    });
    const specs = chartSpecs(rows);
    expect(specs.map((s) => s.title)).toEqual([
      "TTFT CDF (1/2)",
      "TTFT CDF (2/2)",
      "Share of requests per instance (1/2)",
      "Share of requests per instance (2/2)",
      "Token hit rate over time (dashed: ideal; red: scale events) (1/2)",
      "Token hit rate over time (dashed: ideal; red: scale events) (2/2)",
    ]);
    for (const spec of specs) expect(seriesOf(spec).size).toBeLessThanOrEqual(MAX_SERIES_PER_CHART);
    const labels = rows.map(seriesLabel);
    for (const spec of specs) expect(encodingOf(spec).color!.scale!.domain).toEqual(labels);
    const [cdf1, cdf2] = specs;
    expect(encodingOf(cdf1!).x!.scale!.domain).toEqual(encodingOf(cdf2!).x!.scale!.domain);
    expect(encodingOf(cdf1!).x!.scale!.domain).toEqual(logDomain(rows.flatMap((r) => r.ttftCdf.map(([, ms]) => ms))));
    const drawn: ChartSpec[] = [];
    const html = await renderHtmlReport(rows, async (spec) => {
      drawn.push(spec);
      return "<svg></svg>";
    });
    expect(drawn).toEqual(specs);
    expect(html.match(/<svg/g)).toHaveLength(6);
  });
});
