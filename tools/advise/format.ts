/**
 * The advisor's terminal summary: the log, its reuse ceilings, the drift findings, what each
 * strategy gets on it (the bench's own tables) and the recommendation with options to paste.
 */
import { formatComparison, formatDuration, formatTable } from "../bench/table.js";
import type { AdviseReport } from "./advise.js";

const pct = (v: number) => `${(100 * v).toFixed(1)}%`;
const int = (v: number) => Math.round(v).toLocaleString("en-US");
/** Skipped lines printed with their reason. */
const SHOWN_SKIPPED = 3;
const quote = (s: string) => JSON.stringify(s.length > 60 ? `${s.slice(0, 57)}...` : s);

/** The terminal summary of `report`. */
export function formatAdvice(report: AdviseReport): string {
  const out: string[] = [];
  const span = report.timestamps ? `over ${formatDuration(report.durationMs)} of timestamps` : "no timestamps (Poisson arrivals)";
  out.push(
    `${report.source}: ${int(report.requests)} ${report.kind === "trace" ? "trace records" : "requests"}, ${int(report.promptTokens)} prompt tokens, ${span}` +
      (report.tenants > 0 ? `, ${int(report.tenants)} tenants` : ""),
  );
  if (report.skippedLines > 0) {
    out.push(`Skipped ${int(report.skippedLines)} bad ${report.skippedLines === 1 ? "line" : "lines"}${report.skippedLines > SHOWN_SKIPPED ? `, the first ${SHOWN_SKIPPED}` : ""}:`);
    for (const s of report.skipped.slice(0, SHOWN_SKIPPED)) out.push(`  ${s.message}`);
  }
  out.push(
    "",
    "Reuse (share of prompt tokens a prefix cache could serve):",
  );
  const reuse: [string, number][] = [
    ["ceiling, one infinite cache", report.ceilingHitRate],
    [`pooled ideal, ${report.instances} replicas × ${int(report.capacityTokens)} tokens`, report.pooledHitRate],
  ];
  if (report.findings.length > 0) reuse.push(["pooled ideal with every drift below fixed", report.pooledHitRateFixed]);
  const width = Math.max(...reuse.map(([label]) => label.length));
  for (const [label, v] of reuse) out.push(`  ${label.padEnd(width)}  ${(label.startsWith("ceiling") && report.ceilingCapped ? "≥ " : "") + pct(v).padStart(6)}`);
  out.push("");
  if (report.kind === "trace") {
    out.push("Drift: not analysed (a Mooncake trace carries block ids, not prompts).");
  } else if (report.findings.length === 0) {
    out.push("Drift: none found — requests that share a beginning send it identically.");
  } else {
    out.push("Drift: where requests that should share a prefix diverge, costliest first:");
    report.findings.forEach((f, i) => {
      out.push(`  ${i + 1}. ${f.summary}`);
      const s = f.samples[0];
      if (s !== undefined) {
        const values = f.kind === "value" ? `, ${int(f.values)} distinct values` : "";
        out.push(`     e.g. ${quote(s.seen)} where others send ${quote(s.expected)} (in ${int(f.requests)} requests${values})`);
      }
    });
  }
  for (const h of report.handled) out.push(`  - ${h.summary}`);
  if (report.rows.length > 0) {
    out.push("", `On the virtual fleet (${report.instances} instances, ${int(report.capacityTokens)}-token caches):`, formatTable(report.rows));
    const comparison = formatComparison(report.rows);
    if (comparison !== "") out.push("", comparison);
  }
  const rec = report.recommendation;
  if (rec !== undefined) {
    out.push("", "Recommendation:", `  ${JSON.stringify(rec.options)}`, `  ${rec.why}`);
    const fixed = report.fixedRow;
    if (fixed !== undefined) {
      out.push(
        `  With every drift above fixed, the same settings get ${pct(fixed.tokenHitRate)} hit (now ${pct(rec.row.tokenHitRate)}), ` +
          `P50 ${fixed.ttftP50Ms.toFixed(1)} ms (now ${rec.row.ttftP50Ms.toFixed(1)}), P90 ${fixed.ttftP90Ms.toFixed(1)} ms (now ${rec.row.ttftP90Ms.toFixed(1)}).`,
      );
    }
  }
  return out.join("\n");
}
