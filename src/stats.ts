/**
 * The router's counters as a plain snapshot: per target, and summed over the fleet (rates over the
 * fleet, TTFT from the merged histograms).
 */
import { type LatencySummary, type TargetState, newHistogram, summarize } from "./target-state.js";
import type { StrategyStats } from "./strategies/strategy.js";
import type { PickKind, RouterStats, TargetStats } from "./types.js";

/** The counter of each pick kind on {@link TargetState}. */
export const KIND_COUNTER = {
  preferred: "preferred",
  spillover: "spillover",
  fallback: "fallback",
  random: "random",
  "least-outstanding": "leastOutstanding",
} as const satisfies Record<PickKind, keyof TargetState>;

/** Builds {@link RouterStats} from every state (current targets and removed ones still in use). */
export function buildStats(states: readonly TargetState[], now: number, strategy: StrategyStats | undefined): RouterStats {
  const totals: RouterStats["totals"] = {
    inflight: 0,
    routed: 0,
    preferred: 0,
    spillover: 0,
    fallback: 0,
    random: 0,
    leastOutstanding: 0,
    spilloverRate: 0,
    failures: 0,
    ttftMs: null as LatencySummary | null,
    cachedTokenRatio: null as number | null,
  };
  let promptTokens = 0;
  let cachedTokens = 0;
  const merged: { ttft?: ReturnType<typeof newHistogram> } = {};
  for (const s of states) {
    totals.inflight += s.inflight;
    totals.routed += s.routed;
    totals.preferred += s.preferred;
    totals.spillover += s.spillover;
    totals.fallback += s.fallback;
    totals.random += s.random;
    totals.leastOutstanding += s.leastOutstanding;
    totals.failures += s.failures;
    promptTokens += s.promptTokens;
    cachedTokens += s.cachedTokens;
    s.mergeInto(merged);
  }
  totals.spilloverRate = totals.routed === 0 ? 0 : (totals.spillover + totals.fallback) / totals.routed;
  totals.ttftMs = summarize(merged.ttft);
  totals.cachedTokenRatio = promptTokens === 0 ? null : cachedTokens / promptTokens;
  const targets = states.map((s) => targetStats(s, now, totals.routed));
  return strategy?.prefixIndex === undefined ? { targets, totals } : { targets, totals, prefixIndex: strategy.prefixIndex };
}

function targetStats(s: TargetState, now: number, routed: number): TargetStats {
  const ejected = s.isEjected(now);
  return {
    id: s.id,
    active: s.active,
    inflight: s.inflight,
    routed: s.routed,
    preferred: s.preferred,
    spillover: s.spillover,
    fallback: s.fallback,
    random: s.random,
    leastOutstanding: s.leastOutstanding,
    share: routed === 0 ? 0 : s.routed / routed,
    spilloverRate: s.routed === 0 ? 0 : (s.spillover + s.fallback) / s.routed,
    failures: s.failures,
    ejected,
    ejectedUntilMs: ejected ? s.ejectedUntilMs : null,
    failingHealthCheck: s.failingHealthCheck,
    ttftMs: s.ttftSummary(),
    durationMs: s.durationSummary(),
    promptTokens: s.promptTokens,
    cachedTokens: s.cachedTokens,
    cachedTokenRatio: s.promptTokens === 0 ? null : s.cachedTokens / s.promptTokens,
  };
}
