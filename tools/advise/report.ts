/**
 * The advisor's HTML report: the reuse ceilings against what each strategy gets, the reuse each
 * drift costs, the bench's TTFT CDF and per-instance shares of the strategies on the log, and
 * the tables of the terminal summary. Drawn with the bench's vega-lite helpers (optional peers
 * `vega` and `vega-lite`).
 */
import { seriesLabel, shareSpec, ttftCdfSpec } from "../bench/report.js";
import { type ChartSpec, type SvgRenderer, REPORT_STYLE, escapeHtml, htmlTable, loadSvgRenderer } from "../common/html.js";
import type { AdviseReport } from "./advise.js";

const SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json";
const pct = (v: number) => `${(100 * v).toFixed(1)}%`;

/** vega-lite spec: token hit rate of the ceilings and of each strategy on the log. */
export function reuseSpec(report: AdviseReport): ChartSpec {
  const values = [
    { what: "ceiling (infinite cache)", hit: 100 * report.ceilingHitRate, group: "ideal" },
    { what: "pooled ideal (the fleet's capacity)", hit: 100 * report.pooledHitRate, group: "ideal" },
    ...(report.findings.length > 0 ? [{ what: "pooled ideal, drift fixed", hit: 100 * report.pooledHitRateFixed, group: "ideal" }] : []),
    ...report.rows.map((r) => ({ what: seriesLabel(r), hit: 100 * r.tokenHitRate, group: "strategy" })),
  ];
  return {
    $schema: SCHEMA,
    title: "Token hit rate: what the log allows and what each strategy gets",
    width: 520,
    data: { values },
    mark: "bar",
    encoding: {
      y: { field: "what", type: "nominal", sort: null, title: null, axis: { labelLimit: 300 } },
      x: { field: "hit", type: "quantitative", title: "token hit rate (%)", scale: { domain: [0, 100] } },
      color: { field: "group", type: "nominal", legend: null },
    },
  };
}

/** vega-lite spec: points of reuse each drift costs. */
export function driftSpec(report: AdviseReport): ChartSpec {
  const values = report.findings.map((f, i) => ({ finding: `${i + 1}. ${f.what} — ${f.field}`, points: 100 * f.lostShare }));
  return {
    $schema: SCHEMA,
    title: "Reuse lost to each drift (points of prompt tokens, pooled ideal)",
    width: 520,
    data: { values },
    mark: { type: "bar", color: "#d62728" },
    encoding: {
      y: { field: "finding", type: "nominal", sort: null, title: null, axis: { labelLimit: 360 } },
      x: { field: "points", type: "quantitative", title: "points of reuse lost" },
    },
  };
}

/**
 * The HTML report of `report`.
 * @param render - SVG renderer; defaults to vega + vega-lite
 * @throws {BenchError} `ERR_MISSING_PACKAGE` when vega or vega-lite is not installed
 */
export async function renderAdviceHtml(report: AdviseReport, render?: SvgRenderer): Promise<string> {
  const draw = render ?? (await loadSvgRenderer());
  const charts = [reuseSpec(report)];
  if (report.findings.length > 0) charts.push(driftSpec(report));
  if (report.rows.length > 0) charts.push(ttftCdfSpec(report.rows), shareSpec(report.rows));
  const svgs = await Promise.all(charts.map(draw));
  const findings =
    report.findings.length === 0
      ? `<p>${report.kind === "trace" ? "Drift is not analysed on a Mooncake trace (block ids, not prompts)." : "No drift: requests that share a beginning send it identically."}</p>`
      : htmlTable(
          ["#", "what", "field", "position", "requests", "example (sent → the others)", "affected", "typical prefix lost", "reuse lost"],
          report.findings.map((f, i) => [
            String(i + 1),
            f.what,
            f.field,
            f.position === undefined ? "-" : String(f.position),
            f.requests.toLocaleString("en-US"),
            f.samples[0] === undefined ? "" : `${f.samples[0].seen} → ${f.samples[0].expected}`,
            pct(f.affectedShare),
            `${f.typicalLostTokens.toLocaleString("en-US")} tokens`,
            `${(100 * f.lostShare).toFixed(1)} pts`,
          ]),
        );
  const handled = report.handled.map((h) => `<li>${escapeHtml(h.summary)}</li>`).join("");
  const rows =
    report.rows.length === 0
      ? ""
      : htmlTable(
          ["strategy", "P50 ms", "P90 ms", "mean ms", "hit", "ideal", "share min–max"],
          report.rows.map((r) => [
            seriesLabel(r),
            r.ttftP50Ms.toFixed(1),
            r.ttftP90Ms.toFixed(1),
            r.ttftMeanMs.toFixed(1),
            pct(r.tokenHitRate),
            pct(r.idealHitRate),
            `${pct(r.minShare)}–${pct(r.maxShare)}`,
          ]),
        );
  const rec = report.recommendation;
  const recommendation =
    rec === undefined ? "" : `<h2>Recommendation</h2><pre>${escapeHtml(JSON.stringify(rec.options, null, 2))}</pre><p>${escapeHtml(rec.why)}</p>`;
  const summary = `${report.requests.toLocaleString("en-US")} ${report.kind === "trace" ? "trace records" : "requests"}, ${report.promptTokens.toLocaleString("en-US")} prompt tokens; ${report.instances} replicas of ${report.capacityTokens.toLocaleString("en-US")} tokens`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>prefix-router advise</title>
<style>
${REPORT_STYLE}
</style></head><body>
<h1>prefix-router advise: ${escapeHtml(report.source)}</h1>
<p>${escapeHtml(summary)}</p>
${recommendation}
<h2>Drift</h2>
${findings}
${handled === "" ? "" : `<ul>${handled}</ul>`}
<h2>Strategies on the virtual fleet</h2>
${rows}
<div class="charts">${svgs.map((svg) => `<figure>${svg}</figure>`).join("\n")}</div>
</body></html>
`;
}
