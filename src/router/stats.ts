/**
 * The router's counters as a plain snapshot: per target, and summed over the fleet (rates over the
 * fleet, latencies from the merged histograms).
 */
import { type MergedLatency, type TargetState, summarize } from "./target-state.js";
import type { StrategyStats } from "../strategies/strategy.js";
import type { PickKind, RouterStats, TargetStats } from "../types.js";

/** The counter of each pick kind on {@link TargetState}. */
export const KIND_COUNTER = {
  preferred: "preferred",
  spillover: "spillover",
  fallback: "fallback",
  random: "random",
  "least-outstanding": "leastOutstanding",
  affinity: "affinity",
} as const satisfies Record<PickKind, keyof TargetState>;

/** Counters that add up over targets (and over processes). */
export const SUMMED = [
  "inflight",
  "routed",
  "preferred",
  "spillover",
  "fallback",
  "random",
  "leastOutstanding",
  "affinity",
  "failures",
  "promptTokens",
  "cachedTokens",
  "predictedCachedTokens",
  "predictions",
  "predictionMisses",
  "indexResets",
] as const satisfies readonly (keyof TargetStats & keyof TargetState & keyof RouterStats["totals"])[];

/** Totals with every summed counter at 0 and no latencies. */
export function emptyTotals(): RouterStats["totals"] {
  const totals = { spilloverRate: 0, ttftMs: null, durationMs: null, cachedTokenRatio: null } as RouterStats["totals"];
  for (const k of SUMMED) totals[k] = 0;
  return totals;
}

/** Fills the rates of `s` (a target's or the fleet's counters) from its counters. */
export function deriveRates(s: Pick<TargetStats, "routed" | "spillover" | "fallback" | "promptTokens" | "cachedTokens" | "spilloverRate" | "cachedTokenRatio">): void {
  s.spilloverRate = s.routed === 0 ? 0 : (s.spillover + s.fallback) / s.routed;
  s.cachedTokenRatio = s.promptTokens === 0 ? null : s.cachedTokens / s.promptTokens;
}

/** Builds {@link RouterStats} from every state (current targets and removed ones still in use). */
export function buildStats(states: readonly TargetState[], now: number, strategy: StrategyStats | undefined): RouterStats {
  const totals = emptyTotals();
  const merged: MergedLatency = {};
  for (const s of states) {
    for (const k of SUMMED) totals[k] += s[k];
    s.mergeInto(merged);
  }
  deriveRates(totals);
  totals.ttftMs = summarize(merged.ttft);
  totals.durationMs = summarize(merged.duration);
  const targets = states.map((s) => targetStats(s, now, totals.routed));
  return {
    targets,
    totals,
    ...(strategy?.prefixIndex !== undefined && { prefixIndex: strategy.prefixIndex }),
    ...(strategy?.prefill !== undefined && { prefill: strategy.prefill }),
    ...(strategy?.precise !== undefined && { precise: strategy.precise }), // precise-prefix registration (to move onto the strategy registry at merge)
  };
}

function targetStats(s: TargetState, now: number, routed: number): TargetStats {
  const ejected = s.isEjected(now);
  const out = { id: s.id, active: s.active } as TargetStats;
  for (const k of SUMMED) out[k] = s[k];
  out.share = routed === 0 ? 0 : s.routed / routed;
  deriveRates(out);
  out.ejected = ejected;
  out.ejectedUntilMs = ejected ? s.ejectedUntilMs : null;
  out.failingHealthCheck = s.failingHealthCheck;
  out.ttftMs = s.ttftSummary();
  out.durationMs = s.durationSummary();
  return out;
}
