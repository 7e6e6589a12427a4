/**
 * Comparisons of result rows against the random baseline of the same scenario, and the goals of
 * issue 6 checked on them. Pure functions of the rows.
 */
import type { BenchRow } from "./run.js";

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
  return JSON.stringify([r.workload, r.instances, r.capacityTokens, r.rateMultiplier, r.durationMs, r.seed]);
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
