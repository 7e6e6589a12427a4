/**
 * The HTML report: for each scenario, a TTFT CDF per strategy, the per-instance request share,
 * and the token hit rate over time (with the ideal and the scale events marked), drawn by
 * vega-lite and rendered to inline SVG headlessly (no browser, no canvas), plus the result,
 * comparison and goal tables. Axes are fitted to the data; a chart draws at most four series,
 * more make small multiples sharing axes and colours (chart-layout.ts).
 *
 * vega and vega-lite are optional peer dependencies, loaded with `import()` only here; the
 * simulation never needs them.
 */
import { BenchError } from "../common/errors.js";
import { type ChartScales, MIN_TTFT_MS, chartScales, smallMultiples } from "./chart-layout.js";
import { compareToRandom, scenarioKey } from "./compare.js";
import { PUBLISHED_GAINS_TITLE, checkPublishedGains } from "./goals.js";
import type { BenchRow } from "./simulate.js";
import { formatDuration, publishedGainResult } from "./table.js";
import { type ChartSpec, type SvgRenderer, REPORT_STYLE, escapeHtml, htmlTable, loadSvgRenderer } from "../common/html.js";

/** Series label of a row: the strategy, plus its prefix length and threshold when it has them. */
export function seriesLabel(r: BenchRow): string {
  let label = r.strategy;
  if (r.prefixLength !== null) label += ` p${r.prefixLength}`;
  if (r.concurrencyThreshold !== null) label += ` t${r.concurrencyThreshold}`;
  return label;
}

/** The colour encoding of a series, with the scenario's colour domain when given. */
function colorOf(scales: ChartScales | undefined): ChartSpec {
  return { field: "series", type: "nominal", title: "strategy", legend: { labelLimit: 400 }, ...(scales ? { scale: { domain: scales.series } } : {}) };
}

/**
 * vega-lite spec: TTFT CDF, one line per row, log-scaled time axis fitted to the data (to
 * `scales.ttftMs` when charts must share it).
 */
export function ttftCdfSpec(rows: readonly BenchRow[], scales: ChartScales = chartScales(rows, seriesLabel), title = "TTFT CDF"): ChartSpec {
  const values = rows.flatMap((r) => r.ttftCdf.map(([p, ms]) => ({ series: seriesLabel(r), ttftMs: Math.max(ms, MIN_TTFT_MS), percentile: p })));
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title,
    width: 520,
    height: 280,
    data: { values },
    mark: { type: "line", interpolate: "step-after" },
    encoding: {
      x: { field: "ttftMs", type: "quantitative", scale: { type: "log", domain: scales.ttftMs, nice: false }, title: "TTFT (ms, log scale)" },
      y: { field: "percentile", type: "quantitative", title: "percentile", scale: { domain: [0, 100] } },
      color: colorOf(scales),
    },
  };
}

/** vega-lite spec: share of requests per instance, grouped by row. */
export function shareSpec(rows: readonly BenchRow[], scales: ChartScales = chartScales(rows, seriesLabel), title = "Share of requests per instance"): ChartSpec {
  const values = rows.flatMap((r) =>
    Object.entries(r.instanceShares).map(([instance, share]) => ({ series: seriesLabel(r), instance, share: 100 * share })),
  );
  const instances = [...new Set(values.map((v) => v.instance))].sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)));
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title,
    width: 520,
    height: 240,
    data: { values },
    mark: "bar",
    encoding: {
      x: { field: "instance", type: "nominal", sort: instances, title: "instance" },
      xOffset: { field: "series", type: "nominal" },
      y: { field: "share", type: "quantitative", title: "share of requests (%)", scale: { domain: [0, scales.shareMaxPct] } },
      color: colorOf(scales),
    },
  };
}

/** vega-lite spec: token hit rate over time per row, the ideal dashed, scale events as rules. */
export function hitRateSpec(
  rows: readonly BenchRow[],
  scales: ChartScales = chartScales(rows, seriesLabel),
  title = "Token hit rate over time (dashed: ideal; red: scale events)",
): ChartSpec {
  const values = rows.flatMap((r) =>
    r.hitRateSeries.filter((p) => p.hitRate !== null).map((p) => ({ series: seriesLabel(r), minute: p.tMs / 60_000, hitRate: 100 * p.hitRate! })),
  );
  const first = rows[0];
  const ideal = (first?.hitRateSeries ?? [])
    .filter((p) => p.idealHitRate !== null)
    .map((p) => ({ series: "ideal (one infinite cache)", minute: p.tMs / 60_000, hitRate: 100 * p.idealHitRate! }));
  const events = (first?.scaleEvents ?? []).map((e) => ({
    minute: e.atMs / 60_000,
    label: `${e.delta > 0 ? "+" : ""}${e.delta} → ${e.instances}`,
  }));
  const layers: ChartSpec[] = [
    {
      data: { values },
      mark: { type: "line" },
      encoding: {
        x: { field: "minute", type: "quantitative", title: "arrival time (min)" },
        y: { field: "hitRate", type: "quantitative", title: "token hit rate (%)", scale: { domain: [0, 100] } },
        color: colorOf(scales),
      },
    },
    {
      data: { values: ideal },
      mark: { type: "line", strokeDash: [4, 3], color: "#555" },
      encoding: { x: { field: "minute", type: "quantitative" }, y: { field: "hitRate", type: "quantitative" } },
    },
  ];
  if (events.length > 0) {
    layers.push(
      { data: { values: events }, mark: { type: "rule", color: "#d62728", strokeWidth: 2 }, encoding: { x: { field: "minute", type: "quantitative" } } },
      {
        data: { values: events },
        mark: { type: "text", color: "#d62728", align: "left", dx: 4, dy: -4, baseline: "bottom" },
        encoding: { x: { field: "minute", type: "quantitative" }, y: { value: 12 }, text: { field: "label" } },
      },
    );
  }
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title,
    width: 520,
    height: 260,
    layer: layers,
  };
}

/**
 * The charts of one scenario: TTFT CDFs, then shares, then hit rates, each as small multiples of
 * at most four series that share the scenario's axes and colours ("TTFT CDF (1/2)", …).
 */
export function chartSpecs(rows: readonly BenchRow[]): ChartSpec[] {
  const scales = chartScales(rows, seriesLabel);
  const groups = smallMultiples(rows);
  const part = (title: string, i: number) => (groups.length === 1 ? title : `${title} (${i + 1}/${groups.length})`);
  return [
    ...groups.map((g, i) => ttftCdfSpec(g, scales, part("TTFT CDF", i))),
    ...groups.map((g, i) => shareSpec(g, scales, part("Share of requests per instance", i))),
    ...groups.map((g, i) => hitRateSpec(g, scales, part("Token hit rate over time (dashed: ideal; red: scale events)", i))),
  ];
}

const pct = (v: number) => `${(100 * v).toFixed(1)}%`;

/**
 * The full HTML report of `rows`: one section per scenario with its three charts and tables.
 * Deterministic for given rows apart from the wall-clock decision rates they carry.
 *
 * @param render - SVG renderer; defaults to {@link loadSvgRenderer} (vega + vega-lite)
 * @throws {BenchError} `ERR_MISSING_PACKAGE` when vega or vega-lite is not installed
 */
export async function renderHtmlReport(rows: readonly BenchRow[], render?: SvgRenderer): Promise<string> {
  const draw = render ?? (await loadSvgRenderer());
  const groups = new Map<string, BenchRow[]>();
  for (const r of rows) {
    const k = scenarioKey(r);
    const g = groups.get(k);
    if (g) g.push(r);
    else groups.set(k, [r]);
  }
  const sections: string[] = [];
  for (const g of groups.values()) {
    const s = g[0]!;
    const title = `${s.workload} — ${s.instances} instances, ${formatDuration(s.durationMs)}, rate ×${s.rateMultiplier}, cache ${s.capacityTokens.toLocaleString("en-US")} tokens, seed ${s.seed}${(s.routers ?? 1) > 1 ? `, ${s.routers} router processes` : ""}`;
    const table = htmlTable(
      ["strategy", "P50 ms", "P90 ms", "P99 ms", "queue ms", "hit", "ideal", "req/s", "spill", "share min–max", "decisions/s"],
      g.map((r) => [
        seriesLabel(r),
        r.ttftP50Ms.toFixed(1),
        r.ttftP90Ms.toFixed(1),
        r.ttftP99Ms.toFixed(1),
        r.queueMeanMs.toFixed(1),
        pct(r.tokenHitRate),
        pct(r.idealHitRate),
        r.throughput.toFixed(2),
        pct(r.spilloverRate),
        `${pct(r.minShare)}–${pct(r.maxShare)}`,
        String(r.wall.decisionsPerSecond),
      ]),
    );
    const cmp = compareToRandom(g);
    const cmpTable =
      cmp.length === 0
        ? ""
        : htmlTable(
            ["strategy", "P50 vs random", "P90 vs random", "P99 vs random", "hit / ideal"],
            cmp.map((c) => [seriesLabel(c.row), pct(c.ttftP50Change), pct(c.ttftP90Change), pct(c.ttftP99Change), pct(c.hitRateOfIdeal)]),
          );
    const events = g.flatMap((r) =>
      r.scaleEvents.map((e) => [
        seriesLabel(r),
        `${formatDuration(e.atMs)} ${e.delta > 0 ? "+" : ""}${e.delta} → ${e.instances}`,
        e.baselineHitRate === null ? "-" : pct(e.baselineHitRate),
        e.dip === null ? "-" : pct(e.dip),
        e.recoveryMs === null ? "not recovered" : formatDuration(e.recoveryMs),
      ]),
    );
    const eventTable = events.length === 0 ? "" : htmlTable(["strategy", "event", "hit before", "dip", "recovery"], events);
    const charts = await Promise.all(chartSpecs(g).map(draw));
    sections.push(
      `<section><h2>${escapeHtml(title)}</h2>\n${table}\n${cmpTable}\n${eventTable}\n<div class="charts">${charts
        .map((svg) => `<figure>${svg}</figure>`)
        .join("\n")}</div></section>`,
    );
  }
  const goals = checkPublishedGains(rows);
  const goalTable =
    goals.length === 0
      ? ""
      : `<section><h2>${escapeHtml(PUBLISHED_GAINS_TITLE)}</h2>${htmlTable(
          ["workload", "strategy", "goal", "measured", "result"],
          goals.map((c) => [c.row.workload, seriesLabel(c.row), c.goal, c.measured, publishedGainResult(c, "missed")]),
        )}</section>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>prefix-router bench</title>
<style>
${REPORT_STYLE}
</style></head><body>
<h1>prefix-router bench</h1>
<p>Virtual-time fleet; every strategy replays the same request sequence. Rates are token rates; shares are shares of requests. Decisions/s is wall clock and varies between runs.</p>
${goalTable}
${sections.join("\n")}
</body></html>
`;
}
