/**
 * Comparisons of result rows against the random baseline of the same scenario, and the goals of
 * issue 6 checked on them. Pure functions of the rows.
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

/** One goal of issue 6, checked on one prefix-aware row. */
export interface GoalCheck {
  readonly row: BenchRow;
  /** What is checked, e.g. "P50 TTFT vs random ≤ −80%". */
  readonly goal: string;
  /** Measured value, formatted. */
  readonly measured: string;
  readonly met: boolean;
  /** By how much the goal is missed, formatted ("" when met). */
  readonly shortfall: string;
}

/**
 * The goals of issue 6 on every `prefix-aware` row of the `long-context` and `sharegpt`
 * workloads that has a random baseline:
 * - long-context: P50 ≤ −80%, P90 ≤ −40%, token hit rate ≥ 95% of ideal, every share in
 *   [13.3%, 15.4%];
 * - sharegpt: P50 ≤ −16%, P90 ≤ −37%.
 */
export function checkGoals(rows: readonly BenchRow[]): GoalCheck[] {
  const checks: GoalCheck[] = [];
  const pct = (v: number) => `${(100 * v).toFixed(1)}%`;
  const pts = (v: number) => `${(100 * v).toFixed(1)} points`;
  for (const c of compareToRandom(rows)) {
    const r = c.row;
    if (r.strategy !== "prefix-aware") continue;
    const change = (goal: string, value: number, limit: number) =>
      checks.push({
        row: r,
        goal,
        measured: pct(value),
        met: value <= limit,
        shortfall: value <= limit ? "" : pts(value - limit),
      });
    if (r.workload === "long-context") {
      change("P50 TTFT vs random ≤ −80%", c.ttftP50Change, -0.8);
      change("P90 TTFT vs random ≤ −40%", c.ttftP90Change, -0.4);
      checks.push({
        row: r,
        goal: "token hit rate ≥ 95% of ideal",
        measured: pct(c.hitRateOfIdeal),
        met: c.hitRateOfIdeal >= 0.95,
        shortfall: c.hitRateOfIdeal >= 0.95 ? "" : pts(0.95 - c.hitRateOfIdeal),
      });
      const low = Math.max(0, 0.133 - r.minShare);
      const high = Math.max(0, r.maxShare - 0.154);
      checks.push({
        row: r,
        goal: "every instance share in 13.3%–15.4%",
        measured: `${pct(r.minShare)}–${pct(r.maxShare)}`,
        met: low === 0 && high === 0,
        shortfall: low === 0 && high === 0 ? "" : [low > 0 ? `min ${pts(low)} low` : "", high > 0 ? `max ${pts(high)} high` : ""].filter(Boolean).join(", "),
      });
    } else if (r.workload === "sharegpt") {
      change("P50 TTFT vs random ≤ −16%", c.ttftP50Change, -0.16);
      change("P90 TTFT vs random ≤ −37%", c.ttftP90Change, -0.37);
    }
  }
  return checks;
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
function configKey(r: BenchRow): string {
  return JSON.stringify([r.workload, r.instances, r.capacityTokens, r.rateMultiplier, r.durationMs, r.routers ?? 1, r.strategy, r.prefixLength, r.concurrencyThreshold]);
}

/** Key of a row's scenario without the seed. */
function scenarioKeyWithoutSeed(r: BenchRow): string {
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

function verdict(e: Estimate): Verdict {
  if (e.n < 2 || !(e.halfWidth >= 0)) return "tie";
  if (e.mean + e.halfWidth < 0) return "lower";
  if (e.mean - e.halfWidth > 0) return "higher";
  return "tie";
}

/** One goal of issue 7, checked on one scenario over its seeds. */
export interface LongestPrefixGoal {
  /** The `longest-prefix` row of the scenario's first seed. */
  readonly row: BenchRow;
  /** What is checked, e.g. "P50 ≤ best prefix-aware (4096)". */
  readonly goal: string;
  /** Measured difference or value, formatted. */
  readonly measured: string;
  readonly met: boolean;
}

/**
 * The goals of issue 7 on every scenario that ran `longest-prefix` and `prefix-aware`:
 *
 * - against the best `prefix-aware` row — the prefix length with the lowest mean P50 TTFT, the
 *   one a user tuning `prefixLength` for latency would keep — P50 and token hit rate no worse:
 *   the paired 95% interval of the difference does not lie on the wrong side of 0;
 * - against every `peer:*` row, P50 lower: the interval lies below 0 (a tie is not a win);
 * - every instance's share of requests at most 1.25 × the mean, in every seed.
 *
 * With one seed the intervals do not exist and every paired verdict is a tie.
 */
export function checkLongestPrefixGoals(rows: readonly BenchRow[]): LongestPrefixGoal[] {
  const reference = "longest-prefix";
  const goals: LongestPrefixGoal[] = [];
  const paired = compareAcrossSeeds(rows, reference);
  const summaries = summarizeSeeds(rows);
  const ms = (e: Estimate) => `${e.mean > 0 ? "+" : ""}${e.mean.toFixed(3)}${Number.isNaN(e.halfWidth) ? "" : ` ± ${e.halfWidth.toFixed(3)}`} ms`;
  const pts = (e: Estimate) =>
    `${e.mean > 0 ? "+" : ""}${(100 * e.mean).toFixed(3)}${Number.isNaN(e.halfWidth) ? "" : ` ± ${(100 * e.halfWidth).toFixed(3)}`} pts`;
  const done = new Set<string>();
  for (const lp of summaries.filter((s) => s.row.strategy === reference)) {
    const scenario = scenarioKeyWithoutSeed(lp.row);
    // The reference configuration of the scenario is its first one (see compareAcrossSeeds).
    if (done.has(scenario)) continue;
    done.add(scenario);
    const mine = paired.filter((c) => scenarioKeyWithoutSeed(c.row) === scenario && c.row.strategy !== reference);
    const pa = summaries
      .filter((s) => s.row.strategy === "prefix-aware" && scenarioKeyWithoutSeed(s.row) === scenario)
      .sort((a, b) => a.ttftP50Ms.mean - b.ttftP50Ms.mean)[0];
    if (pa === undefined) continue;
    const best = mine.find((c) => configKey(c.row) === configKey(pa.row));
    if (best !== undefined) {
      const label = `${pa.row.prefixLength}`;
      goals.push({ row: lp.row, goal: `P50 ≤ best prefix-aware (${label})`, measured: ms(best.ttftP50DiffMs), met: best.ttftP50 !== "higher" });
      goals.push({ row: lp.row, goal: `hit rate ≥ best prefix-aware (${label})`, measured: pts(best.tokenHitRateDiff), met: best.tokenHitRate !== "lower" });
    }
    for (const peer of mine.filter((c) => c.row.strategy.startsWith("peer:"))) {
      goals.push({ row: lp.row, goal: `P50 < ${peer.row.strategy}`, measured: ms(peer.ttftP50DiffMs), met: peer.ttftP50 === "lower" });
    }
    const limit = 1.25 / lp.row.instances;
    goals.push({
      row: lp.row,
      goal: "max share ≤ 1.25 × mean",
      measured: `${(lp.maxShare * lp.row.instances).toFixed(2)} × mean`,
      met: lp.maxShare <= limit + 1e-12,
    });
  }
  return goals;
}
