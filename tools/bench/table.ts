/**
 * Plain-text output of the benchmark: the result table, the comparison with random, the scale
 * events, the means across seeds and the checks of goals.ts. Pure string formatting, no
 * dependencies.
 */
import { type Estimate, compareAcrossSeeds, compareToRandom, summarizeSeeds } from "./compare.js";
import {
  LONGEST_PREFIX_CHECKS_TITLE,
  PUBLISHED_GAINS_TITLE,
  type PublishedGainCheck,
  SHORT_PROMPTS_CHECKS_TITLE,
  checkLongestPrefix,
  checkPublishedGains,
  checkShortPrompts,
} from "./goals.js";
import type { BenchRow } from "./simulate.js";

type Align = "l" | "r";

/** Renders rows as a fixed-width table (columns padded, header underlined). */
function grid(header: readonly string[], align: readonly Align[], body: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => (align[i] === "r" ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join("  ").trimEnd();
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)].join("\n");
}

/** The strategy the paired comparison measures everything against, when it ran. */
const PAIRED_REFERENCE = "longest-prefix";

const pct = (v: number, digits = 1) => `${(100 * v).toFixed(digits)}`;
const ms = (v: number) => (v >= 1000 ? v.toFixed(0) : v.toFixed(1));
const signed = (v: number) => `${v > 0 ? "+" : ""}${(100 * v).toFixed(1)}%`;

/** The strategy, with `×N` when the row ran behind N > 1 independent router processes, and its shared load view. */
function strategyLabel(r: BenchRow): string {
  const base = (r.routers ?? 1) > 1 ? `${r.strategy} ×${r.routers}` : r.strategy;
  if (r.loadView === undefined) return base;
  const poll = r.loadViewModel?.enginePollMs;
  return `${base} ${r.loadView}${poll === undefined ? "" : ` ${formatDuration(poll)}`}`;
}

/** Human-readable duration: 90000 → "1m30s". */
export function formatDuration(msValue: number): string {
  if (msValue < 1000) return `${msValue}ms`;
  let s = Math.round(msValue / 1000);
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  return `${h ? `${h}h` : ""}${m ? `${m}m` : ""}${s ? `${s}s` : ""}` || "0s";
}

/**
 * The main result table: one line per row. Rates in percent, times in milliseconds; `dec/s`
 * is the router's own decision rate (wall clock).
 */
export function formatTable(rows: readonly BenchRow[]): string {
  const header = [
    "workload", "strategy", "inst", "prefix", "thr", "dur", "rate",
    "P50 ms", "P90 ms", "P99 ms", "queue ms", "hit %", "ideal %", "req/s", "spill %", "share min-max %", "dec/s",
  ];
  const align: Align[] = ["l", "l", "r", "r", "r", "r", "r", "r", "r", "r", "r", "r", "r", "r", "r", "r", "r"];
  const body = rows.map((r) => [
    r.workload,
    strategyLabel(r),
    String(r.instances),
    r.prefixLength === null ? "-" : String(r.prefixLength),
    r.concurrencyThreshold === null ? "-" : String(r.concurrencyThreshold),
    formatDuration(r.durationMs),
    `x${r.rateMultiplier}`,
    ms(r.ttftP50Ms),
    ms(r.ttftP90Ms),
    ms(r.ttftP99Ms),
    ms(r.queueMeanMs),
    pct(r.tokenHitRate),
    pct(r.idealHitRate),
    r.throughput.toFixed(2),
    pct(r.spilloverRate),
    `${pct(r.minShare)}-${pct(r.maxShare)}`,
    r.wall.decisionsPerSecond >= 1e6 ? `${(r.wall.decisionsPerSecond / 1e6).toFixed(2)}M` : `${Math.round(r.wall.decisionsPerSecond / 1000)}k`,
  ]);
  return grid(header, align, body);
}

/** Each non-random row against the random row of its scenario. Empty when there is none. */
export function formatComparison(rows: readonly BenchRow[]): string {
  const cmp = compareToRandom(rows);
  if (cmp.length === 0) return "";
  const header = ["workload", "strategy", "prefix", "thr", "P50 vs random", "P90 vs random", "P99 vs random", "req/s vs random", "hit / ideal"];
  const align: Align[] = ["l", "l", "r", "r", "r", "r", "r", "r", "r"];
  const body = cmp.map((c) => [
    ...configCells(c.row),
    signed(c.ttftP50Change),
    signed(c.ttftP90Change),
    signed(c.ttftP99Change),
    signed(c.throughputChange),
    `${pct(c.hitRateOfIdeal)}%`,
  ]);
  return grid(header, align, body);
}

/**
 * `prefix-aware` vs random against AWS's published gains, on the prefix-aware rows of
 * long-context and sharegpt (see `checkPublishedGains`). Empty when none apply.
 */
export function formatPublishedGains(rows: readonly BenchRow[]): string {
  const checks = checkPublishedGains(rows);
  if (checks.length === 0) return "";
  const header = ["workload", "prefix", "thr", "goal", "measured", "result"];
  const align: Align[] = ["l", "r", "r", "l", "r", "l"];
  const body = checks.map((c) => [
    c.row.workload,
    String(c.row.prefixLength),
    String(c.row.concurrencyThreshold),
    c.goal,
    c.measured,
    publishedGainResult(c, "MISSED"),
  ]);
  return grid(header, align, body);
}

/**
 * The verdict of one published-gains check: `met`, `<missed> by …`, or, for a run shorter than the
 * workload's calibrated duration, that the check needs that duration.
 */
export function publishedGainResult(c: PublishedGainCheck, missed: string): string {
  if (c.needsDurationMs !== undefined) {
    const needs = formatDuration(c.needsDurationMs);
    return `not checked: needs the calibrated duration ${needs} (--duration ${needs}; this run ${formatDuration(c.row.durationMs)})`;
  }
  return c.met ? "met" : `${missed} by ${c.shortfall}`;
}

/** Hit-rate dip and recovery after each scale event, per row. Empty without events. */
export function formatScaleEvents(rows: readonly BenchRow[]): string {
  const body: string[][] = [];
  for (const r of rows) {
    for (const e of r.scaleEvents) {
      body.push([
        r.workload,
        strategyLabel(r),
        r.prefixLength === null ? "-" : String(r.prefixLength),
        `${formatDuration(e.atMs)} ${e.delta > 0 ? "+" : ""}${e.delta} → ${e.instances}`,
        e.baselineHitRate === null ? "-" : pct(e.baselineHitRate),
        e.minHitRate === null ? "-" : pct(e.minHitRate),
        e.dip === null ? "-" : pct(e.dip),
        e.recoveryMs === null ? (e.dip === null ? "-" : "not recovered") : formatDuration(e.recoveryMs),
      ]);
    }
  }
  if (body.length === 0) return "";
  const header = ["workload", "strategy", "prefix", "event", "hit before %", "lowest %", "dip pts", "recovery"];
  return grid(header, ["l", "l", "r", "l", "r", "r", "r", "r"], body);
}

/** Per restart and row: the gap to the same run without restarts, and the time to recover (restarts.ts). Empty without restarts. */
export function formatRestarts(rows: readonly BenchRow[]): string {
  const body: string[][] = [];
  const pts = (v: number | null) => (v === null ? "-" : (100 * v).toFixed(1));
  for (const r of rows) {
    for (const e of r.restarts ?? []) {
      body.push([
        r.workload,
        strategyLabel(r),
        `${formatDuration(e.atMs)} ${e.instance}${e.downMs ? ` down ${formatDuration(e.downMs)}` : ""}`,
        e.referenceHitRate === null ? "-" : pct(e.referenceHitRate),
        e.hitRate === null ? "-" : pct(e.hitRate),
        e.hitRateAfterUp === null ? "-" : pct(e.hitRateAfterUp),
        pts(e.dip),
        ...e.gaps.map((g) => pts(g.gap)),
        e.recoveryMs === null ? (e.dip === null ? "-" : "not recovered") : formatDuration(e.recoveryMs),
        e.recoveryAfterUpMs === null ? "-" : formatDuration(e.recoveryAfterUpMs),
      ]);
    }
  }
  if (body.length === 0) return "";
  const gapHeads = (rows.find((r) => r.restarts?.length)?.restarts?.[0]?.gaps ?? []).map((g) => `gap +${formatDuration(g.afterMs)}`);
  const header = ["workload", "strategy", "restart", "hit no restart %", "hit %", "hit 5m up %", "dip pts", ...gapHeads, "recovery", "after up"];
  return grid(header, ["l", "l", "l", "r", "r", "r", "r", ...gapHeads.map((): Align => "r"), "r", "r"], body);
}

/** `mean ± half-width` with `digits` decimals (× `scale`); just the mean for one seed. */
function pm(e: Estimate, digits: number, scale = 1): string {
  const mean = (scale * e.mean).toFixed(digits);
  return Number.isNaN(e.halfWidth) ? mean : `${mean} ± ${(scale * e.halfWidth).toFixed(digits)}`;
}

const signedPm = (e: Estimate, digits: number, scale = 1) => (e.mean > 0 ? "+" : "") + pm(e, digits, scale);

/** The cells naming a row's configuration: workload, strategy, prefix length, threshold. */
function configCells(r: BenchRow): string[] {
  return [
    r.workload,
    strategyLabel(r),
    r.prefixLength === null ? "-" : String(r.prefixLength),
    r.concurrencyThreshold === null ? "-" : String(r.concurrencyThreshold),
  ];
}

/**
 * Every configuration that ran with two or more seeds: means with 95% confidence intervals over
 * the seeds, and the largest share any instance had in any seed. Empty with one seed per row.
 */
export function formatSeedSummary(rows: readonly BenchRow[]): string {
  const summaries = summarizeSeeds(rows).filter((s) => s.seeds.length > 1);
  if (summaries.length === 0) return "";
  const header = ["workload", "strategy", "prefix", "thr", "seeds", "P50 ms", "P90 ms", "hit %", "max share %"];
  const body = summaries.map((s) => [
    ...configCells(s.row),
    String(s.seeds.length),
    pm(s.ttftP50Ms, 3),
    pm(s.ttftP90Ms, 2),
    pm(s.tokenHitRate, 3, 100),
    pct(s.maxShare),
  ]);
  return grid(header, ["l", "l", "r", "r", "r", "r", "r", "r", "r"], body);
}

/**
 * Every configuration against `reference`, paired by seed (see `compareAcrossSeeds`): the mean
 * per-seed difference reference − row with its 95% interval, and which side of 0 it lies on.
 * Empty when no configuration shares two or more seeds with the reference.
 */
export function formatPaired(rows: readonly BenchRow[], reference: string): string {
  const cmp = compareAcrossSeeds(rows, reference).filter((c) => c.seeds.length > 1);
  if (cmp.length === 0) return "";
  const header = ["workload", "strategy", "prefix", "thr", "seeds", "Δ P50 ms", "P50", "Δ hit pts", "hit"];
  const body = cmp.map((c): string[] => [
    ...configCells(c.row),
    String(c.seeds.length),
    signedPm(c.ttftP50DiffMs, 3),
    c.ttftP50,
    signedPm(c.tokenHitRateDiff, 3, 100),
    c.tokenHitRate,
  ]);
  return grid(header, ["l", "l", "r", "r", "r", "r", "l", "r", "l"], body);
}

/**
 * `longest-prefix` vs the other strategies, per scenario (see `checkLongestPrefix`). Empty
 * without longest-prefix and prefix-aware rows.
 */
export function formatLongestPrefixChecks(rows: readonly BenchRow[]): string {
  const goals = checkLongestPrefix(rows);
  if (goals.length === 0) return "";
  const body = goals.map((g) => [g.row.workload, g.goal, g.measured, g.met ? "met" : "MISSED"]);
  return grid(["workload", "goal (longest-prefix)", "measured (longest-prefix − row)", "result"], ["l", "l", "r", "l"], body);
}

/** The `short-prompts` goals, per cache-aware row (see `checkShortPrompts`). Empty without such rows. */
export function formatShortPromptsChecks(rows: readonly BenchRow[]): string {
  const goals = checkShortPrompts(rows);
  if (goals.length === 0) return "";
  const body = goals.map((g) => [g.row.strategy, g.goal, g.measured, g.met ? "met" : "MISSED"]);
  return grid(["strategy", "goal", "measured", "result"], ["l", "l", "r", "l"], body);
}

/** Where the bench's columns are explained at length. */
export const BENCH_TABLE_DOC = "docs/bench.md#reading-the-table";

/** What each column of {@link formatTable} means (and each variant the rows name), one line each. */
export function formatLegend(rows: readonly BenchRow[]): string {
  const lines = [
    "inst, prefix, thr: instances, prefixLength (characters), concurrencyThreshold (- : a strategy that reads none)",
    "dur, rate: simulated duration, arrival-rate multiplier  ·  P50/P90/P99 ms: TTFT in simulated ms",
    "queue ms: mean time ready but not yet admitted by the engine  ·  hit %: Σ cached ÷ Σ prompt tokens",
    "ideal %: the hit of one unbounded cache that saw every earlier request (the same for every strategy of a scenario)",
    "req/s: completed requests per simulated second  ·  spill %: picks off the key's first choice",
    "share min-max %: the least and the most loaded instance's share of the requests  ·  dec/s: route() calls per wall second",
  ];
  if (rows.some((r) => r.strategy === "longest-prefix:exclusive")) {
    lines.push("longest-prefix:exclusive: longest-prefix with `longestPrefix: { exclusive: true }`, for a router that sees all of its fleet's traffic");
  }
  lines.push(`More: ${BENCH_TABLE_DOC}`);
  return lines.join("\n");
}

/** Everything the terminal shows after a run, sections separated by blank lines. */
export function formatReport(rows: readonly BenchRow[]): string {
  const sections: string[] = [formatTable(rows), formatLegend(rows)];
  const cmp = formatComparison(rows);
  if (cmp) sections.push(`Compared with random on the same request sequence:\n${cmp}`);
  const events = formatScaleEvents(rows);
  if (events) sections.push(`Scale events (hit rate smoothed over 3 buckets; recovered = within 2 points of the level before):\n${events}`);
  const restarts = formatRestarts(rows);
  if (restarts) sections.push(`Restarts (token hit rate against the same run without them, 30 s windows; recovered = gap within 2 points):\n${restarts}`);
  const seeds = formatSeedSummary(rows);
  if (seeds) sections.push(`Across seeds (mean ± 95% confidence interval of the mean; max share: worst seed):\n${seeds}`);
  const paired = rows.some((r) => r.strategy === PAIRED_REFERENCE) ? formatPaired(rows, PAIRED_REFERENCE) : "";
  if (paired) {
    sections.push(
      `${PAIRED_REFERENCE} against each row, paired by seed (Δ = ${PAIRED_REFERENCE} − row; "lower"/"higher": ${PAIRED_REFERENCE}'s value, when the 95% interval excludes 0):\n${paired}`,
    );
  }
  const gains = formatPublishedGains(rows);
  if (gains) sections.push(`${PUBLISHED_GAINS_TITLE}:\n${gains}`);
  const shadow = formatShadow(rows);
  if (shadow) sections.push(`Shadow strategy beside each run (its picks computed, never acted on; hit rates over the responses that reported usage):\n${shadow}`);
  const precise = formatPrecise(rows);
  if (precise) sections.push(`precise-prefix (routing on the fleet's KV events, delivered after the modelled lag; predictions: responses whose cached tokens were within 10% of the prediction):\n${precise}`);
  const lpChecks = formatLongestPrefixChecks(rows);
  const spChecks = formatShortPromptsChecks(rows);
  if (spChecks) sections.push(`${SHORT_PROMPTS_CHECKS_TITLE}:\n${spChecks}`);
  if (lpChecks) sections.push(`${LONGEST_PREFIX_CHECKS_TITLE} (paired by seed, 95% intervals; with one seed every difference is a tie):\n${lpChecks}`);
  return `${sections.join("\n\n")}\n`;
}

/** `precise-prefix`'s figures per row: decisions on tokens and events, predictions within 10%, events delivered. */
function formatPrecise(rows: readonly BenchRow[]): string {
  const body = rows.flatMap((r) => {
    const p = r.precise;
    if (p === undefined) return [];
    const decided = p.routedPrecise + p.routedApproximate;
    const pct = (n: number, of: number) => (of === 0 ? "-" : ((100 * n) / of).toFixed(1));
    return [[r.workload, r.routers > 1 ? `${r.strategy} ×${r.routers}` : r.strategy, `${(r.capacityTokens / 1000).toFixed(0)}k`, `${r.kvLagMs ?? 0}`, pct(p.routedPrecise, decided), `${pct(p.predictionsWithin10Percent, p.predictionsTested)} of ${p.predictionsTested}`, String(p.events)]];
  });
  if (body.length === 0) return "";
  const head = ["workload", "strategy", "cache", "lag ms", "on tokens %", "predictions within 10 %", "events"];
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((row) => (row[i] as string).length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ").trimEnd();
  return [line(head), line(widths.map((w) => "-".repeat(w))), ...body.map(line)].join("\n");
}

/** The shadow's figures per row: agreement, the live strategy's measured and predicted hit rates, the shadow's predicted one. */
function formatShadow(rows: readonly BenchRow[]): string {
  const pct = (v: number | null) => (v === null ? "-" : (v * 100).toFixed(1));
  const body = rows.flatMap((r) => {
    const s = r.shadow;
    if (s === undefined) return [];
    const diff = s.predictedHitRateDifference === null ? "-" : `${s.predictedHitRateDifference >= 0 ? "+" : ""}${(s.predictedHitRateDifference * 100).toFixed(1)}`;
    return [[r.workload, r.strategy, r.prefixLength === null ? "-" : String(r.prefixLength), s.strategy, s.placement, String(s.decisions), pct(s.agreementRate), pct(s.liveHitRate), pct(s.livePredictedHitRate), pct(s.shadowPredictedHitRate), diff, String(s.errors)]];
  });
  if (body.length === 0) return "";
  const head = ["workload", "strategy", "prefix", "shadow", "placement", "decisions", "agree %", "live hit %", "live pred %", "shadow pred %", "Δ pred pts", "errors"];
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((row) => (row[i] as string).length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => (i < 5 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ").trimEnd();
  return [line(head), line(widths.map((w) => "-".repeat(w))), ...body.map(line)].join("\n");
}
