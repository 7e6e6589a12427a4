/**
 * Comparisons of result rows: each row against the random row of the same scenario, and every
 * configuration across seeds (means with 95% intervals, differences paired by seed). Pure
 * functions of the rows.
 */
import type { BenchRow } from "./simulate.js";

/** A row compared with the `random` row of the same scenario. */
export interface Comparison {
  readonly row: BenchRow;
  readonly baseline: BenchRow;
  /** Relative change of P50 TTFT vs random (−0.8 = 80% lower). */
  readonly ttftP50Change: number;
  /** Relative change of P90 TTFT vs random. */
  readonly ttftP90Change: number;
  /** Relative change of P99 TTFT vs random. */
  readonly ttftP99Change: number;
  /** Relative change of throughput vs random. */
  readonly throughputChange: number;
  /** tokenHitRate / idealHitRate (1 = as good as one infinite cache). */
  readonly hitRateOfIdeal: number;
}

/** Key of the scenario a row belongs to (everything but the policy configuration). */
export function scenarioKey(r: BenchRow): string {
  return JSON.stringify([r.workload, r.instances, r.capacityTokens, r.rateMultiplier, r.durationMs, r.routers ?? 1, r.seed]);
}

/** Compares every non-random row with the random row of its scenario (rows without one are skipped). */
export function compareToRandom(rows: readonly BenchRow[]): Comparison[] {
  const baselines = new Map<string, BenchRow>();
  for (const r of rows) if (r.strategy === "random") baselines.set(scenarioKey(r), r);
  const out: Comparison[] = [];
  for (const row of rows) {
    if (row.strategy === "random") continue;
    const baseline = baselines.get(scenarioKey(row));
    if (baseline === undefined) continue;
    out.push({
      row,
      baseline,
      ttftP50Change: change(row.ttftP50Ms, baseline.ttftP50Ms),
      ttftP90Change: change(row.ttftP90Ms, baseline.ttftP90Ms),
      ttftP99Change: change(row.ttftP99Ms, baseline.ttftP99Ms),
      throughputChange: change(row.throughput, baseline.throughput),
      hitRateOfIdeal: row.idealHitRate > 0 ? row.tokenHitRate / row.idealHitRate : 1,
    });
  }
  return out;
}

function change(value: number, base: number): number {
  return base === 0 ? 0 : value / base - 1;
}

/**
 * A mean over seeds with its 95% confidence interval, `mean ± halfWidth` (Student's t with
 * n − 1 degrees of freedom; `halfWidth` is `NaN` for one seed, where no interval exists).
 */
export interface Estimate {
  readonly mean: number;
  readonly halfWidth: number;
  /** Number of seeds. */
  readonly n: number;
}

/** Two-sided 97.5% quantiles of Student's t for 1–30 degrees of freedom; 1.96 beyond. */
const T_975 = [
  12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11,
  2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042,
];

/** Mean and 95% confidence half-width of `values` (see {@link Estimate}). */
export function estimate(values: readonly number[]): Estimate {
  const n = values.length;
  if (n === 0) return { mean: Number.NaN, halfWidth: Number.NaN, n };
  const mean = values.reduce((s, v) => s + v, 0) / n;
  if (n === 1) return { mean, halfWidth: Number.NaN, n };
  const variance = values.reduce((s, v) => s + (v - mean) ** 2, 0) / (n - 1);
  const t = T_975[n - 2] ?? 1.96;
  return { mean, halfWidth: t * Math.sqrt(variance / n), n };
}

/** Key of a row's policy configuration on its scenario, without the seed. */
export function configKey(r: BenchRow): string {
  return JSON.stringify([r.workload, r.instances, r.capacityTokens, r.rateMultiplier, r.durationMs, r.routers ?? 1, r.strategy, r.prefixLength, r.concurrencyThreshold, r.loadView ?? "local", r.loadViewModel ?? null]);
}

/** Key of a row's scenario without the seed. */
export function scenarioKeyWithoutSeed(r: BenchRow): string {
  return JSON.stringify([r.workload, r.instances, r.capacityTokens, r.rateMultiplier, r.durationMs, r.routers ?? 1]);
}

/** One policy configuration on one scenario, over every seed it ran with. */
export interface SeedSummary {
  /** The configuration's row of the first seed (for its labels). */
  readonly row: BenchRow;
  readonly seeds: readonly number[];
  readonly ttftP50Ms: Estimate;
  readonly ttftP90Ms: Estimate;
  readonly tokenHitRate: Estimate;
  /** Largest share of requests any instance received, over every seed (fraction of 1). */
  readonly maxShare: number;
}

/** Groups rows that differ only by seed; one summary per configuration, in first-seen order. */
export function summarizeSeeds(rows: readonly BenchRow[]): SeedSummary[] {
  const groups = new Map<string, BenchRow[]>();
  for (const r of rows) {
    const k = configKey(r);
    const g = groups.get(k);
    if (g === undefined) groups.set(k, [r]);
    else g.push(r);
  }
  return [...groups.values()].map((g) => ({
    row: g[0] as BenchRow,
    seeds: g.map((r) => r.seed),
    ttftP50Ms: estimate(g.map((r) => r.ttftP50Ms)),
    ttftP90Ms: estimate(g.map((r) => r.ttftP90Ms)),
    tokenHitRate: estimate(g.map((r) => r.tokenHitRate)),
    maxShare: Math.max(...g.map((r) => r.maxShare)),
  }));
}

/** Which side of zero a 95% interval of a difference lies on; `tie` when it contains 0. */
export type Verdict = "lower" | "higher" | "tie";

/** A configuration against the reference strategy on the same scenarios, paired by seed. */
export interface PairedComparison {
  /** The configuration's row of the first shared seed. */
  readonly row: BenchRow;
  readonly reference: string;
  readonly seeds: readonly number[];
  /** The reference's P50 TTFT minus the row's, ms, per seed, averaged (negative: reference lower). */
  readonly ttftP50DiffMs: Estimate;
  /** The reference's token hit rate minus the row's (fraction of 1; positive: reference higher). */
  readonly tokenHitRateDiff: Estimate;
  /** Where the reference's P50 lies against the row's. */
  readonly ttftP50: Verdict;
  /** Where the reference's hit rate lies against the row's. */
  readonly tokenHitRate: Verdict;
}

/**
 * Compares every configuration with `reference` (a strategy name) on the seeds both ran with.
 * Each seed is the same request sequence for both, so the per-seed differences cancel the
 * workload's own variation (a paired comparison); a difference counts only when its 95%
 * interval excludes 0, and never with a single seed (`tie`). Scenarios without a reference row
 * are skipped; when the reference ran in several configurations (thresholds), its first one in
 * each scenario is the reference and the others are compared with it like any row.
 */
export function compareAcrossSeeds(rows: readonly BenchRow[], reference: string): PairedComparison[] {
  const refs = new Map<string, Map<number, BenchRow>>();
  for (const r of rows) {
    if (r.strategy !== reference) continue;
    const k = scenarioKeyWithoutSeed(r);
    const bySeed = refs.get(k) ?? new Map<number, BenchRow>();
    if (!bySeed.has(r.seed)) bySeed.set(r.seed, r);
    refs.set(k, bySeed);
  }
  const out: PairedComparison[] = [];
  for (const s of summarizeSeeds(rows.filter((r) => r.strategy !== reference))) {
    const bySeed = refs.get(scenarioKeyWithoutSeed(s.row));
    if (bySeed === undefined) continue;
    const pairs = rows
      .filter((r) => configKey(r) === configKey(s.row) && bySeed.has(r.seed))
      .map((r) => [bySeed.get(r.seed) as BenchRow, r] as const);
    if (pairs.length === 0) continue;
    const p50 = estimate(pairs.map(([a, b]) => a.ttftP50Ms - b.ttftP50Ms));
    const hit = estimate(pairs.map(([a, b]) => a.tokenHitRate - b.tokenHitRate));
    out.push({
      row: pairs[0]![1],
      reference,
      seeds: pairs.map(([, b]) => b.seed),
      ttftP50DiffMs: p50,
      tokenHitRateDiff: hit,
      ttftP50: verdict(p50),
      tokenHitRate: verdict(hit),
    });
  }
  return out;
}

/** Which side of zero the 95% interval of `e` lies on (`tie` when it holds 0, or from one seed). */
export function verdict(e: Estimate): Verdict {
  if (e.n < 2 || !(e.halfWidth >= 0)) return "tie";
  if (e.mean + e.halfWidth < 0) return "lower";
  if (e.mean - e.halfWidth > 0) return "higher";
  return "tie";
}
