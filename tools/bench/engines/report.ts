/**
 * What a real-engine run says: one row per engine kind and strategy (engine-reported hit, the
 * pooled ideal, client TTFT, shares, prediction accuracy), the checks a user would ask of it,
 * the emulated fleet against llama.cpp on the same sessions, and the text and HTML reports.
 */
import { DEFAULTS } from "prefix-router";
import { type ChartSpec, type SvgRenderer, REPORT_STYLE, escapeHtml, htmlTable, loadSvgRenderer } from "../../common/html.js";
import type { EngineBenchResult, EngineKind, EngineRecord, EngineStrategy } from "./run.js";

/** A prediction is accurate when within this fraction of the engine's cached tokens. */
export const PREDICTION_TOLERANCE = 0.1;

/** One strategy on one kind of engine, with some number of router processes. */
export interface EngineRow {
  readonly engine: EngineKind;
  readonly strategy: EngineStrategy;
  /** Application processes, each with its own router (1: the bench's own). */
  readonly routers: number;
  readonly requests: number;
  readonly errors: number;
  /** Σ cached_tokens ÷ Σ prompt_tokens, as the engines reported them. */
  readonly hitRate: number;
  /** The pooled ideal's hit rate on the same requests. */
  readonly idealHitRate: number;
  readonly ttftP50Ms: number;
  readonly ttftP90Ms: number;
  /** Share of the requests per target. */
  readonly shares: Readonly<Record<string, number>>;
  /**
   * Requests after their shared prefix's first sight whose prediction was within
   * {@link PREDICTION_TOLERANCE} of the engine's cached tokens, of those; `undefined` when the
   * strategy predicts nothing.
   */
  readonly predictions: { readonly tested: number; readonly within: number } | undefined;
}

/** The value at quantile `q` of `xs` (nearest rank). */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}

/** Whether `predicted` is within the tolerance of `cached`. */
export function accurate(predicted: number | undefined, cached: number): boolean {
  return Math.abs((predicted ?? 0) - cached) <= PREDICTION_TOLERANCE * Math.max(cached, 1);
}

function rowOf(engine: EngineKind, strategy: EngineStrategy, routers: number, records: readonly EngineRecord[], targets: readonly string[]): EngineRow {
  const ok = records.filter((r) => r.error === undefined);
  const sum = (f: (r: EngineRecord) => number) => ok.reduce((a, r) => a + f(r), 0);
  const prompt = sum((r) => r.promptTokens);
  const chars = sum((r) => r.idealPromptTokens);
  const shares: Record<string, number> = Object.fromEntries(targets.map((t) => [t, 0]));
  for (const r of ok) if (r.target !== undefined) shares[r.target] = (shares[r.target] ?? 0) + 1 / ok.length;
  const predicting = ok.some((r) => r.predictedCachedTokens !== undefined);
  const tested = ok.filter((r) => r.seenPrefix);
  return {
    engine,
    strategy,
    routers,
    requests: records.length,
    errors: records.length - ok.length,
    hitRate: prompt === 0 ? 0 : sum((r) => r.cachedTokens) / prompt,
    idealHitRate: chars === 0 ? 0 : sum((r) => r.idealCachedTokens) / chars,
    ttftP50Ms: quantile(ok.map((r) => r.ttftMs), 0.5),
    ttftP90Ms: quantile(ok.map((r) => r.ttftMs), 0.9),
    shares,
    predictions: predicting ? { tested: tested.length, within: tested.filter((r) => accurate(r.predictedCachedTokens, r.cachedTokens)).length } : undefined,
  };
}

/** The rows of a result, in its runs' order. */
export function engineRows(result: EngineBenchResult): EngineRow[] {
  return result.runs.map((r) => rowOf(r.engine, r.strategy, r.routers, r.records, r.targets));
}

/** One check of a run, as a user would ask it. */
export interface EngineCheck {
  readonly engine: EngineKind;
  /** The router processes of the rows checked. */
  readonly routers: number;
  readonly what: string;
  readonly met: boolean;
  readonly detail: string;
}

const pct = (v: number) => (Number.isFinite(v) ? `${(100 * v).toFixed(1)}%` : "—");

/**
 * The checks of a run with `random` and `least-outstanding` beside cache-aware strategies: each
 * of the default strategy and `longest-prefix` gets an engine-reported hit ≥ least-outstanding's
 * + 10 points and ≥ 80% of the pooled ideal, a TTFT P50 ≤ least-outstanding's and ≤ 0.35 ×
 * random's; its predictions are within 10% for ≥ 90% of the requests after a prefix's first sight.
 */
export function engineChecks(rows: readonly EngineRow[]): EngineCheck[] {
  const checks: EngineCheck[] = [];
  const groups = new Map<string, { engine: EngineKind; routers: number }>();
  for (const r of rows) groups.set(`${r.engine} ${r.routers}`, { engine: r.engine, routers: r.routers });
  for (const { engine, routers } of groups.values()) {
    const of = (s: string) => rows.find((r) => r.engine === engine && r.routers === routers && r.strategy === s);
    const random = of("random");
    const lo = of("least-outstanding");
    for (const name of new Set([DEFAULTS.strategy, "longest-prefix"])) {
      const r = of(name);
      if (r === undefined) continue;
      if (lo !== undefined) {
        checks.push({ engine, routers, what: `${name}: hit ≥ least-outstanding + 10 points`, met: r.hitRate >= lo.hitRate + 0.1, detail: `${pct(r.hitRate)} vs ${pct(lo.hitRate)}` });
        checks.push({ engine, routers, what: `${name}: P50 ≤ least-outstanding's`, met: r.ttftP50Ms <= lo.ttftP50Ms, detail: `${r.ttftP50Ms.toFixed(0)} vs ${lo.ttftP50Ms.toFixed(0)} ms` });
      }
      if (r.idealHitRate > 0) {
        checks.push({ engine, routers, what: `${name}: hit ≥ 80% of the pooled ideal`, met: r.hitRate >= 0.8 * r.idealHitRate, detail: `${pct(r.hitRate / r.idealHitRate)} of ${pct(r.idealHitRate)}` });
      }
      if (random !== undefined) {
        const ratio = r.ttftP50Ms / random.ttftP50Ms;
        checks.push({ engine, routers, what: `${name}: P50 ≤ 0.35 × random's`, met: ratio <= 0.35, detail: `${ratio.toFixed(2)}×` });
      }
      if (r.predictions !== undefined && r.predictions.tested > 0) {
        const share = r.predictions.within / r.predictions.tested;
        checks.push({ engine, routers, what: `${name}: predictions within 10% for ≥ 90%`, met: share >= 0.9, detail: `${pct(share)} of ${r.predictions.tested}` });
      }
    }
  }
  return checks;
}

/** The emulated fleet against llama.cpp, per strategy: hit rates and whether the rankings agree. */
export interface EmulatorCheck {
  readonly rows: readonly { strategy: EngineStrategy; llama: number; emulated: number; llamaP50Ms: number; emulatedP50Ms: number }[];
  /** Strategies by hit rate, best first, on each. */
  readonly llamaRanking: readonly EngineStrategy[];
  readonly emulatedRanking: readonly EngineStrategy[];
  readonly rankingsAgree: boolean;
  /** Largest hit-rate difference, in points. */
  readonly maxDifferencePoints: number;
}

/** The emulator check of `rows` (those with the fewest router processes), `undefined` unless both kinds ran. */
export function emulatorCheck(rows: readonly EngineRow[]): EmulatorCheck | undefined {
  const fewest = Math.min(...rows.map((r) => r.routers));
  const llama = rows.filter((r) => r.engine === "llama" && r.routers === fewest);
  const emulated = rows.filter((r) => r.engine === "emulated" && r.routers === fewest);
  if (llama.length === 0 || emulated.length === 0) return undefined;
  const pairs = llama.flatMap((l) => {
    const e = emulated.find((x) => x.strategy === l.strategy);
    return e === undefined ? [] : [{ strategy: l.strategy, llama: l.hitRate, emulated: e.hitRate, llamaP50Ms: l.ttftP50Ms, emulatedP50Ms: e.ttftP50Ms }];
  });
  const rank = (key: "llama" | "emulated") => [...pairs].sort((a, b) => b[key] - a[key]).map((p) => p.strategy);
  // Rankings agree when every pair the llama run separates by more than 3 points is ordered alike.
  const agree = pairs.every((a) => pairs.every((b) => !(a.llama > b.llama + 0.03) || a.emulated > b.emulated));
  return {
    rows: pairs,
    llamaRanking: rank("llama"),
    emulatedRanking: rank("emulated"),
    rankingsAgree: agree,
    maxDifferencePoints: Math.max(0, ...pairs.map((p) => 100 * Math.abs(p.llama - p.emulated))),
  };
}

function sharesText(shares: Readonly<Record<string, number>>): string {
  return Object.values(shares)
    .map((s) => Math.round(100 * s))
    .join("/");
}

/** Whether any row ran with more than one router process: then the tables show how many. */
function severalRouters(rows: readonly EngineRow[]): boolean {
  return rows.some((r) => r.routers !== 1);
}

/** The table of `rows`, as lines of Markdown (a `routers` column when some row had several). */
export function engineTable(rows: readonly EngineRow[]): string[] {
  const several = severalRouters(rows);
  const lines = [
    `| engine |${several ? " routers |" : ""} strategy | hit (engine) | pooled ideal | of ideal | P50 ms | P90 ms | P50 vs random | shares % | predictions within 10% | errors |`,
    `|---|${several ? "---:|" : ""}---|---:|---:|---:|---:|---:|---:|---|---:|---:|`,
  ];
  for (const r of rows) {
    const random = rows.find((x) => x.engine === r.engine && x.routers === r.routers && x.strategy === "random");
    const vs = random === undefined ? "—" : `${(r.ttftP50Ms / random.ttftP50Ms).toFixed(2)}×`;
    const p = r.predictions === undefined || r.predictions.tested === 0 ? "—" : `${pct(r.predictions.within / r.predictions.tested)} of ${r.predictions.tested}`;
    lines.push(
      `| ${r.engine} |${several ? ` ${r.routers} |` : ""} ${r.strategy} | ${pct(r.hitRate)} | ${pct(r.idealHitRate)} | ${pct(r.hitRate / r.idealHitRate)} | ${r.ttftP50Ms.toFixed(0)} | ${r.ttftP90Ms.toFixed(0)} | ${vs} | ${sharesText(r.shares)} | ${p} | ${r.errors} |`,
    );
  }
  return lines;
}

/** Where the real-engine bench's columns, checks and rounds are explained at length. */
export const ENGINE_BENCH_DOC = "docs/real-engines.md#benchmark-on-real-engines";

/** What each column of {@link engineTable} means, one line each. */
export const ENGINE_LEGEND: readonly string[] = [
  "hit (engine)     Σ cached_tokens ÷ Σ prompt_tokens, as the engines reported them",
  "pooled ideal     the hit of one unbounded cache that saw every earlier prompt and answer of this row's run: it depends on",
  "                 the order requests went out and, with follow-ups, on the answers, so it differs a little between rows",
  "of ideal         hit ÷ pooled ideal",
  "P50/P90 ms       client TTFT: request sent → first content; P50 vs random: this P50 ÷ random's",
  "shares %         the requests each engine served, i0/i1/…",
  "predictions within 10%  of the requests whose shared prefix was seen before, those whose predicted cached tokens were",
  "                 within 10% of the engine's (— for strategies that predict nothing)",
];

/**
 * The text report: the table and its legend, the checks, the emulator check and the fitted
 * timing (only when the emulated fleet ran). `enforced`: whether a missed check fails the run.
 */
export function formatEngineReport(result: EngineBenchResult, rows: readonly EngineRow[], enforced = true): string {
  const out = [`${result.workload}: ${result.sessions} sessions per strategy`, "", ...engineTable(rows), "", ...ENGINE_LEGEND];
  const checks = engineChecks(rows);
  if (checks.length > 0) {
    const missed = checks.filter((c) => !c.met).length;
    const verdict = missed === 0 ? "all met" : `${missed} missed${enforced ? ": exit code 1 (--no-checks: report only)" : " (not enforced: --no-checks)"}`;
    out.push("", `Checks (${verdict}):`);
    const several = severalRouters(rows);
    for (const c of checks) out.push(`  ${c.met ? "met   " : "missed"}  ${c.engine}${several ? ` ×${c.routers}` : ""}  ${c.what}  (${c.detail})`);
  }
  const emu = emulatorCheck(rows);
  if (emu !== undefined) {
    out.push(
      "",
      `Emulated vs llama.cpp: largest hit difference ${emu.maxDifferencePoints.toFixed(1)} points; rankings ${emu.rankingsAgree ? "agree" : "disagree"} (llama: ${emu.llamaRanking.join(" > ")}; emulated: ${emu.emulatedRanking.join(" > ")})`,
    );
  }
  if (result.timing !== undefined && rows.some((r) => r.engine === "emulated")) {
    const t = result.timing;
    out.push(`Emulated timing (fitted to the llama run, or measured here without one): overhead ${t.overheadMs.toFixed(1)} ms, prefill ${t.prefillMsPerToken.toFixed(3)} ms/token, decode ${t.decodeMsPerToken.toFixed(1)} ms/token`);
  }
  out.push(`More: ${ENGINE_BENCH_DOC}`);
  return out.join("\n");
}

/** vega-lite spec: client TTFT CDF per engine and strategy. */
export function engineTtftSpec(result: EngineBenchResult): ChartSpec {
  const values = result.runs.flatMap((run) => {
    const ttft = run.records.filter((r) => r.error === undefined).map((r) => r.ttftMs).sort((a, b) => a - b);
    return ttft.map((ms, i) => ({ series: `${run.engine} ${run.strategy}${run.routers === 1 ? "" : ` ×${run.routers}`}`, ttftMs: Math.max(ms, 1), percentile: (100 * (i + 1)) / ttft.length }));
  });
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: "TTFT CDF (client, first content)",
    width: 520,
    height: 280,
    data: { values },
    mark: { type: "line", interpolate: "step-after" },
    encoding: {
      x: { field: "ttftMs", type: "quantitative", scale: { type: "log" }, title: "TTFT (ms, log scale)" },
      y: { field: "percentile", type: "quantitative", scale: { domain: [0, 100] } },
      color: { field: "series", type: "nominal" },
    },
  };
}

/**
 * The HTML report: the table, the checks and the TTFT CDF.
 * @throws {BenchError} `ERR_MISSING_PACKAGE` when vega or vega-lite is not installed (and no renderer is given)
 */
export async function renderEngineHtml(result: EngineBenchResult, rows: readonly EngineRow[], render?: SvgRenderer): Promise<string> {
  const draw = render ?? (await loadSvgRenderer());
  const several = severalRouters(rows);
  const table = htmlTable(
    ["engine", ...(several ? ["routers"] : []), "strategy", "hit", "pooled ideal", "of ideal", "P50 ms", "P90 ms", "shares %", "predictions within 10%", "errors"],
    rows.map((r) => [
      r.engine,
      ...(several ? [String(r.routers)] : []),
      r.strategy,
      pct(r.hitRate),
      pct(r.idealHitRate),
      pct(r.hitRate / r.idealHitRate),
      r.ttftP50Ms.toFixed(0),
      r.ttftP90Ms.toFixed(0),
      sharesText(r.shares),
      r.predictions === undefined || r.predictions.tested === 0 ? "—" : pct(r.predictions.within / r.predictions.tested),
      String(r.errors),
    ]),
  );
  const checks = htmlTable(
    ["engine", "check", "met", "figures"],
    engineChecks(rows).map((c) => [several ? `${c.engine} ×${c.routers}` : c.engine, c.what, c.met ? "yes" : "no", c.detail]),
  );
  const chart = await draw(engineTtftSpec(result));
  return `<!doctype html><meta charset="utf-8"><title>prefix-router on real engines: ${escapeHtml(result.workload)}</title><style>${REPORT_STYLE}</style>
<h1>${escapeHtml(result.workload)}: ${result.sessions} sessions per strategy</h1>
${table}
<h2>Checks</h2>
${checks}
<figure>${chart}</figure>`;
}
