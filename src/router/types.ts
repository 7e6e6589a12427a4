/**
 * The router's public face: the {@link Router} `createRouter` returns, and the {@link RouterStats}
 * it reports — composed from the figures each feature declares beside itself (the strategies',
 * the load view's, membership's, the shadow's, the OpenAI adapter's response affinity).
 */
import type { MembershipStats } from "../background/membership.js";
import type { LoadViewStats } from "../load-view/view.js";
import type { ResponseAffinityStats } from "../openai/stats.js";
import type { RoutingMode } from "../routing/routing-input.js";
import type { BuiltInStrategyStats } from "../strategies/built-in-stats.js";
import type { Lease, RouteOptions, RouteRequest, StrategyName, TargetSpec } from "../types.js";
import type { ShadowStats } from "./shadow.js";
import type { LatencySummary } from "./target-state.js";

/** Per-target counters in {@link RouterStats}. */
export interface TargetStats {
  id: string;
  /** False for a target removed by `setTargets` that still has open leases. */
  active: boolean;
  inflight: number;
  routed: number;
  preferred: number;
  spillover: number;
  fallback: number;
  random: number;
  leastOutstanding: number;
  /** Requests routed here by {@link RouteOptions.target} (response affinity). */
  affinity: number;
  /** routed / all routed, fraction of 1. */
  share: number;
  /** (spillover + fallback) / routed, fraction of 1 (0 when nothing was routed). */
  spilloverRate: number;
  failures: number;
  ejected: boolean;
  /** Clock time the ejection ends, ms; `null` when not ejected. */
  ejectedUntilMs: number | null;
  /** True while active health checks (`healthCheck`) take the target out; false without them. */
  failingHealthCheck: boolean;
  /** Time to first byte of the body (TTFT for streams), ms; `null` before any sample. */
  ttftMs: LatencySummary | null;
  /** Lease duration, ms; `null` before any sample. */
  durationMs: LatencySummary | null;
  /** Σ prompt tokens the server reported (responses that reported cached tokens too). */
  promptTokens: number;
  /** Σ prompt tokens the server served from its prefix cache. */
  cachedTokens: number;
  /** cachedTokens / promptTokens; `null` when no server reported tokens. */
  cachedTokenRatio: number | null;
  /**
   * Σ cached tokens the strategy predicted for the same responses (`Lease.predictedCachedTokens`),
   * to compare with `cachedTokens` (docs/observability.md, "Closed loop").
   */
  predictedCachedTokens: number;
  /** Responses that tested a prediction (it predicted at least 256 tokens cached and the server reported usage). */
  predictions: number;
  /** Of those, the ones where the server served under `closedLoop.ratio` of the prediction. */
  predictionMisses: number;
  /** Times the strategy forgot what it believed this target caches after `closedLoop.misses` misses in a row. */
  indexResets: number;
}

/**
 * A plain snapshot of the router's counters: JSON-safe, and mergeable over several processes
 * with `mergeStats` (its latency summaries carry their histograms).
 */
export interface RouterStats extends BuiltInStrategyStats {
  targets: TargetStats[];
  /** The same counters summed over every target (rates over the fleet, latencies from the merged histograms). */
  totals: Pick<
    TargetStats,
    | "inflight"
    | "routed"
    | "preferred"
    | "spillover"
    | "fallback"
    | "random"
    | "leastOutstanding"
    | "affinity"
    | "spilloverRate"
    | "failures"
    | "ttftMs"
    | "durationMs"
    | "promptTokens"
    | "cachedTokens"
    | "cachedTokenRatio"
    | "predictedCachedTokens"
    | "predictions"
    | "predictionMisses"
    | "indexResets"
  >;
  /** The shared load view (`loadView` other than `"local"`): its source, health and figures. */
  loadView?: LoadViewStats;
  /** Membership refreshes; present only with the `membership` option. */
  membership?: MembershipStats;
  /** Response affinity of the OpenAI adapter (Responses API); present only there, when it is on. */
  responseAffinity?: ResponseAffinityStats;
  /** The shadow strategy's figures; present only with the `shadow` option. */
  shadow?: ShadowStats;
}

/** The key's ranking of eligible targets, as {@link Router.rank} returns it. */
export interface Ranking<T extends TargetSpec = TargetSpec> {
  /** The routing key as 16 lowercase hex digits; `undefined` when the request has none. */
  key: string | undefined;
  /** Eligible targets, best first (for a request without prefix, in target order). */
  targets: T[];
}

/**
 * A request read once by {@link Router.prepare}: validated, its body parsed and its routing input
 * computed, for several `route` calls (retries on other targets) without reading it again.
 */
export interface PreparedRequest {
  readonly tenant: string | undefined;
  readonly model: string | undefined;
  /** Targets eligible for the request in the router's current target set (serving its model, weight > 0). */
  eligibleCount(): number;
}

/** A router. Create one with {@link createRouter}. */
export interface Router<T extends TargetSpec = TargetSpec> {
  /** The strategy's name. */
  readonly strategy: StrategyName;
  readonly mode: RoutingMode;
  readonly prefixLength: number;
  readonly concurrencyThreshold: number;
  /** Picks a target and opens a lease on it. Synchronous; never returns nothing. */
  route(request: RouteRequest | PreparedRequest, options?: RouteOptions): Lease<T>;
  /** The key's ranking, without picking or counting anything. For tests and debugging. */
  rank(request: RouteRequest | PreparedRequest): Ranking<T>;
  /**
   * Reads a request once — validates it, parses its body, computes its routing input — for
   * several {@link Router.route} calls: an adapter retrying on the next target passes the
   * prepared request instead of the request. Throws what `route` would for a bad request.
   */
  prepare(request: RouteRequest): PreparedRequest;
  /**
   * Resolves (never rejects) when the strategy can read a prepared request as well as it will
   * shortly — `precise-prefix` waits, bounded, for a cold prompt's tokens — or returns `undefined`
   * at once when there is nothing to wait for. The adapters await it before the first `route`;
   * call it yourself between `prepare` and `route` when routing directly.
   */
  settle(request: PreparedRequest): Promise<void> | undefined;
  /** Replaces the target set. Counters of ids that stay are kept; open leases still release. */
  setTargets(targets: readonly T[]): void;
  /** The current targets. */
  targets(): readonly T[];
  /** A snapshot of the counters. */
  stats(): RouterStats;
  /**
   * Stops the router's background work — load view refreshes (a `redis` view also removes this
   * process's counts from Redis), membership refreshes, health checks — and ends their timers
   * and connections. Routing still works afterwards, on the local view. Idempotent.
   */
  close(): Promise<void>;
}
