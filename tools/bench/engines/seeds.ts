/**
 * A real-engine run over several seeds (`bench --engine … --seed 1-5`): each seed is a whole run
 * (its own sessions, router seeds and model), so one strategy's rows across seeds vary with the
 * workload and with the machine; every strategy plays the same sessions within a seed, so the
 * difference between two strategies on a seed cancels the workload's part (a paired comparison).
 * On a shared machine one run cannot tell a few milliseconds of median TTFT from noise; five can
 * say on which side of zero the difference lies. Pure functions of the rows.
 */
import { type Estimate, estimate, verdict } from "../compare.js";
import type { EngineRow } from "./report.js";
import type { EngineKind, EngineStrategy } from "./run.js";

/** The rows of one seed's run. */
export interface SeedRows {
  readonly seed: number;
  readonly rows: readonly EngineRow[];
}

/** One strategy on one engine kind with some number of router processes, over every seed. */
export interface EngineSeedSummary {
  readonly engine: EngineKind;
  readonly routers: number;
  readonly strategy: EngineStrategy;
  readonly seeds: number;
  readonly hitRate: Estimate;
  readonly ttftP50Ms: Estimate;
  readonly ttftP90Ms: Estimate;
  /** Predictions within 10%, of every seed's tested requests pooled; `undefined` for a strategy that predicts nothing. */
  readonly predictionsWithin: number | undefined;
}

/** Which side of zero a 95% interval lies on; `tie` when it holds 0 (or from one seed). */
export type SeedVerdict = "above" | "below" | "tie";

/** A strategy against the reference on the same engines and router processes, paired by seed. */
export interface EnginePairedComparison {
  readonly engine: EngineKind;
  readonly routers: number;
  readonly strategy: EngineStrategy;
  readonly reference: EngineStrategy;
  /** The row's hit minus the reference's, per seed (fraction of 1). */
  readonly hitDiff: Estimate;
  /** The row's median TTFT minus the reference's, per seed, ms (negative: the row is faster). */
  readonly ttftP50DiffMs: Estimate;
  readonly hit: SeedVerdict;
  readonly ttftP50: SeedVerdict;
}

const keyOf = (r: Pick<EngineRow, "engine" | "routers" | "strategy">): string => `${r.engine}\u0000${r.routers}\u0000${r.strategy}`;

/** One summary per (engine, routers, strategy), in the order of the first seed's rows. */
export function summarizeEngineSeeds(runs: readonly SeedRows[]): EngineSeedSummary[] {
  const groups = new Map<string, EngineRow[]>();
  for (const run of runs) {
    for (const r of run.rows) {
      const k = keyOf(r);
      const g = groups.get(k);
      if (g === undefined) groups.set(k, [r]);
      else g.push(r);
    }
  }
  return [...groups.values()].map((g) => {
    const first = g[0] as EngineRow;
    const tested = g.reduce((n, r) => n + (r.predictions?.tested ?? 0), 0);
    const within = g.reduce((n, r) => n + (r.predictions?.within ?? 0), 0);
    return {
      engine: first.engine,
      routers: first.routers,
      strategy: first.strategy,
      seeds: g.length,
      hitRate: estimate(g.map((r) => r.hitRate)),
      ttftP50Ms: estimate(g.map((r) => r.ttftP50Ms)),
      ttftP90Ms: estimate(g.map((r) => r.ttftP90Ms)),
      predictionsWithin: first.predictions === undefined || tested === 0 ? undefined : within / tested,
    };
  });
}

/** The strategy the others are paired with: `prefix-aware` when it ran, else the first strategy. */
export function referenceStrategy(strategies: readonly EngineStrategy[]): EngineStrategy | undefined {
  return strategies.includes("prefix-aware") ? "prefix-aware" : strategies[0];
}

/**
 * Every other strategy against `reference` on the same engine kind and number of router
 * processes, on the seeds where both have a row. A difference counts only when its 95% interval
 * excludes 0, and never from a single seed.
 */
export function compareEngineSeeds(runs: readonly SeedRows[], reference: EngineStrategy): EnginePairedComparison[] {
  const out: EnginePairedComparison[] = [];
  for (const s of summarizeEngineSeeds(runs)) {
    if (s.strategy === reference) continue;
    const pairs: [EngineRow, EngineRow][] = [];
    for (const run of runs) {
      const row = run.rows.find((r) => keyOf(r) === keyOf(s));
      const ref = run.rows.find((r) => keyOf(r) === keyOf({ ...s, strategy: reference }));
      if (row !== undefined && ref !== undefined) pairs.push([row, ref]);
    }
    if (pairs.length === 0) continue;
    const hitDiff = estimate(pairs.map(([r, f]) => r.hitRate - f.hitRate));
    const ttftP50DiffMs = estimate(pairs.map(([r, f]) => r.ttftP50Ms - f.ttftP50Ms));
    out.push({ engine: s.engine, routers: s.routers, strategy: s.strategy, reference, hitDiff, ttftP50DiffMs, hit: side(hitDiff), ttftP50: side(ttftP50DiffMs) });
  }
  return out;
}

/** The side of zero of a row-minus-reference difference. */
function side(e: Estimate): SeedVerdict {
  const v = verdict(e);
  return v === "higher" ? "above" : v === "lower" ? "below" : "tie";
}

const pm = (e: Estimate, scale: number, digits: number, sign = false): string => {
  const m = (scale * e.mean).toFixed(digits);
  const mean = sign && e.mean >= 0 ? `+${m}` : m;
  return Number.isNaN(e.halfWidth) ? mean : `${mean} ± ${(scale * e.halfWidth).toFixed(digits)}`;
};

/** The two tables of a run over several seeds, as lines of Markdown, with their legend. */
export function engineSeedsReport(runs: readonly SeedRows[], strategies: readonly EngineStrategy[]): string[] {
  const several = runs.some((r) => r.rows.some((x) => x.routers !== 1));
  const seeds = runs.map((r) => r.seed).join(", ");
  const lines = [
    `Across seeds ${seeds} (mean ± 95% interval of the mean):`,
    "",
    `| engine |${several ? " routers |" : ""} strategy | seeds | hit % | P50 ms | P90 ms | predictions within 10% |`,
    `|---|${several ? "---:|" : ""}---|---:|---:|---:|---:|---:|`,
  ];
  for (const s of summarizeEngineSeeds(runs)) {
    const p = s.predictionsWithin === undefined ? "—" : `${(100 * s.predictionsWithin).toFixed(1)}%`;
    lines.push(`| ${s.engine} |${several ? ` ${s.routers} |` : ""} ${s.strategy} | ${s.seeds} | ${pm(s.hitRate, 100, 1)} | ${pm(s.ttftP50Ms, 1, 1)} | ${pm(s.ttftP90Ms, 1, 1)} | ${p} |`);
  }
  const reference = referenceStrategy(strategies);
  const paired = reference === undefined ? [] : compareEngineSeeds(runs, reference);
  if (paired.length > 0) {
    lines.push(
      "",
      `Against ${reference}, paired by seed (Δ = row − ${reference}; above/below when the 95% interval excludes 0):`,
      "",
      `| engine |${several ? " routers |" : ""} strategy | Δ hit pts | hit | Δ P50 ms | P50 |`,
      `|---|${several ? "---:|" : ""}---|---:|---|---:|---|`,
    );
    for (const c of paired) {
      lines.push(`| ${c.engine} |${several ? ` ${c.routers} |` : ""} ${c.strategy} | ${pm(c.hitDiff, 100, 1, true)} | ${c.hit} | ${pm(c.ttftP50DiffMs, 1, 1, true)} | ${c.ttftP50} |`);
    }
  }
  return lines;
}
