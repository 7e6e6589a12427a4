/**
 * Merging {@link RouterStats} of several router processes (application replicas that each embed
 * a router) into the stats of one router that saw all their requests: counters add, latency
 * histograms add (HDR histograms of the same layout add exactly), then shares, rates and
 * percentiles are derived again. The merged percentiles are those of one process that recorded
 * every sample; the merged `max` is the largest exact maximum.
 */
import { decodeFromCompressedBase64 } from "hdr-histogram-js";
import { describe } from "../internal/validate.js";
import { SUMMED, deriveRates, emptyTotals } from "./stats.js";
import { mergeShadow } from "./shadow.js";
import { mergeStrategyStats } from "../strategies/index.js";
import { type LatencySummary, addInto, summarize } from "./target-state.js";
import type { RouterStats, TargetStats } from "./types.js";
import type { ResponseAffinityStats, ResponseStoreStats } from "../openai/stats.js";

/**
 * The stats of several routers (their `router.stats()`, typically collected as JSON from each
 * process) as one router's. Targets are matched by id: a target is active or ejected if it is in
 * any process; in flight and every counter add up; `share`, the rates and the latency
 * percentiles are computed from the sums. A strategy's own figures add up as it declares (a
 * prefix index's sizes, say: each process keeps its own index).
 *
 * @example
 * const fleetWide = mergeStats(await Promise.all(replicas.map((r) => r.fetchStatsJson())));
 * fleetWide.totals.ttftMs?.p99;
 */
export function mergeStats(parts: readonly RouterStats[]): RouterStats {
  if (!Array.isArray(parts)) throw new TypeError(`Expected \`mergeStats\` to get an array of router stats, got ${describe(parts)}`);
  const byId = new Map<string, TargetStats[]>();
  const totals = emptyTotals();
  const ttft: (LatencySummary | null)[] = [];
  const duration: (LatencySummary | null)[] = [];
  const affinities: ResponseAffinityStats[] = [];
  parts.forEach((part, i) => {
    if (part === null || typeof part !== "object" || !Array.isArray(part.targets) || part.totals === undefined) {
      throw new TypeError(`Expected \`mergeStats\`'s item ${i} to be router stats ({ targets, totals }), got ${describe(part)}`);
    }
    for (const t of part.targets) {
      const list = byId.get(t.id);
      if (list === undefined) byId.set(t.id, [t]);
      else list.push(t);
    }
    for (const k of SUMMED) totals[k] += part.totals[k] ?? 0;
    ttft.push(part.totals.ttftMs);
    duration.push(part.totals.durationMs ?? null);
    if (part.responseAffinity !== undefined) affinities.push(part.responseAffinity);
  });
  deriveRates(totals);
  totals.ttftMs = mergeLatency(ttft);
  totals.durationMs = mergeLatency(duration);
  const targets = [...byId.values()].map((list) => mergeTarget(list, totals.routed));
  // Each strategy's figures merge as its folder declares; per-process ones are left out.
  const merged: RouterStats = { targets, totals, ...mergeStrategyStats(parts as readonly Readonly<Record<string, unknown>>[]) };
  if (affinities.length > 0) merged.responseAffinity = mergeAffinity(affinities);
  const shadow = mergeShadow(parts.map((p) => p.shadow));
  if (shadow !== undefined) merged.shadow = shadow;
  return merged;
}

/** One target's stats from several processes. */
function mergeTarget(list: readonly TargetStats[], routed: number): TargetStats {
  const first = list[0] as TargetStats;
  const out = { id: first.id, active: list.some((t) => t.active) } as TargetStats;
  for (const k of SUMMED) out[k] = list.reduce((sum, t) => sum + (t[k] ?? 0), 0);
  out.share = routed === 0 ? 0 : out.routed / routed;
  deriveRates(out);
  const until = list.map((t) => t.ejectedUntilMs).filter((ms): ms is number => ms !== null);
  out.ejected = list.some((t) => t.ejected);
  out.ejectedUntilMs = until.length === 0 ? null : Math.max(...until);
  out.failingHealthCheck = list.some((t) => t.failingHealthCheck);
  out.ttftMs = mergeLatency(list.map((t) => t.ttftMs));
  out.durationMs = mergeLatency(list.map((t) => t.durationMs));
  return out;
}

/**
 * Latency summaries of several processes as one: their histograms added, percentiles read from
 * the sum and capped at the largest exact maximum. `null` when none has a sample.
 */
export function mergeLatency(parts: readonly (LatencySummary | null | undefined)[]): LatencySummary | null {
  let sum;
  let maxMicros = 0;
  for (const p of parts) {
    if (p === null || p === undefined || p.count === 0) continue;
    if (typeof p.histogram !== "string") {
      throw new TypeError(`Expected a latency summary's \`histogram\` to be a string (router.stats() output), got ${describe(p.histogram)}`);
    }
    sum = addInto(sum, decodeFromCompressedBase64(p.histogram));
    maxMicros = Math.max(maxMicros, Math.round(p.max * 1000));
  }
  return summarize(sum, maxMicros);
}

const STORE_COUNTS = ["hits", "misses", "errors", "timeouts", "skipped", "writes", "writeErrors"] as const;
/** Counts a process may lack (added later): merged only when one has them. */
const STORE_EXTRA_COUNTS = ["writesDropped", "writesExpired", "lateAnswers"] as const;

/** Several processes' response affinity: counts add up; the store is healthy when every process finds it so. */
function mergeAffinity(parts: readonly ResponseAffinityStats[]): ResponseAffinityStats {
  const out: ResponseAffinityStats = { entries: 0, localHits: 0, localMisses: 0 };
  const stores: ResponseStoreStats[] = [];
  for (const p of parts) {
    out.entries += p.entries ?? 0;
    out.localHits += p.localHits ?? 0;
    out.localMisses += p.localMisses ?? 0;
    if (p.store !== undefined) stores.push(p.store);
  }
  if (stores.length > 0) {
    const store: ResponseStoreStats = { source: "redis", healthy: stores.every((s) => s.healthy), hits: 0, misses: 0, errors: 0, timeouts: 0, skipped: 0, writes: 0, writeErrors: 0, lastError: stores.find((s) => s.lastError !== null)?.lastError ?? null };
    for (const s of stores) for (const k of STORE_COUNTS) store[k] += s[k] ?? 0;
    for (const k of STORE_EXTRA_COUNTS) if (stores.some((s) => s[k] !== undefined)) store[k] = stores.reduce((n, s) => n + (s[k] ?? 0), 0);
    out.store = store;
  }
  return out;
}
