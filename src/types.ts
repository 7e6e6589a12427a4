/**
 * The router's public vocabulary: targets, requests, leases, decisions, stats. Types only.
 */
import type { InputKind } from "./routing/raw-prefix.js";
import type { RoutingMode } from "./routing/routing-input.js";
import type { LatencySummary } from "./router/target-state.js";
import type { PrefixIndexStats } from "./strategies/longest-prefix/blocks.js";
import type { PrefillStats } from "./strategies/helpers/prefill-saturation.js";

/** A place requests can go: a replica, an endpoint, an inference component. */
export interface TargetSpec {
  /** Unique, non-empty. It is the target's rendezvous identity: keep it stable across restarts. */
  readonly id: string;
  /**
   * Relative share of new prefixes. `0` drains the target: it is never picked for new requests,
   * but its open leases release normally.
   * @default 1
   */
  readonly weight?: number;
  /** Models / LoRA adapters this target serves. Absent: it serves every model. */
  readonly models?: readonly string[];
}

/** Routing strategies. `longest-prefix`: see `docs/longest-prefix.md`. */
export type Strategy = "prefix-aware" | "least-outstanding" | "random" | "longest-prefix" | "precise-prefix"; // precise-prefix registration (to move onto the strategy registry at merge)

/**
 * What a pick was: the key's first choice, a later choice, a load-based pick, or the target the
 * caller named ({@link RouteOptions.target}: response affinity).
 */
export type PickKind = "preferred" | "spillover" | "fallback" | "random" | "least-outstanding" | "affinity";

/** An injectable time source, in milliseconds. */
export interface Clock {
  now(): number;
}

/** One request to route. */
export interface RouteRequest {
  /**
   * The request body: an object, JSON text or bytes. In text mode an OpenAI-style JSON body; in
   * bytes mode anything. Absent (or, in text mode, a body without prompt text): the request has
   * no prefix and goes by least-outstanding.
   */
  body?: unknown;
  /** Tenant id (SageMaker `PrefixAwareId`, OpenAI `prompt_cache_key`): 1–64 printable ASCII. */
  tenant?: string;
  /** The model or adapter; only targets serving it are eligible. Text mode falls back to `body.model`. */
  model?: string;
}

/** Per-call options of {@link Router.route}. */
export interface RouteOptions {
  /** Target ids not to pick (already tried by this request). They keep their place in the ranking. */
  exclude?: ReadonlySet<string> | readonly string[];
  /** 1-based attempt number, reported in decisions; an integer from 1 to 1,024. @default 1 */
  attempt?: number;
  /**
   * The id of the target that must serve the request, because only it holds the state the
   * request refers to (the Responses API's `previous_response_id`). The strategy is skipped:
   * the pick is `kind: "affinity"`, whatever the target's load, ejection or weight (a draining
   * target still finishes what it started). Throws `ERR_TARGET_GONE` when the target is no
   * longer in the target set or no longer serves the request's model.
   * @default undefined — the strategy picks
   */
  target?: string;
  /**
   * Compute {@link Lease.reason}: why this target was picked. Off by default, so a decision
   * nobody explains allocates nothing for it (`onDecision` always gets a reason).
   * @default false
   */
  explain?: boolean;
}

/**
 * Why a pick went where it went: its kind and the figures that decided it
 * (docs/observability.md#decision-reasons). Figures a strategy does not have are absent.
 */
export interface DecisionReason {
  kind: PickKind;
  /** Position of the chosen target in the key's ranking (0 = first choice). */
  rank: number;
  /** Requests in flight on the chosen target when it was picked, this one not counted (the shared view's figure under one). */
  inflight: number;
  /** The router's `concurrencyThreshold`. */
  threshold: number;
  /** The key's first choice, when the pick went elsewhere. */
  preferred?: string;
  /** Requests in flight on {@link DecisionReason.preferred} at the decision. */
  preferredInflight?: number;
  /**
   * Why {@link DecisionReason.preferred} was passed over: `"excluded"` (this request tried it),
   * `"ejected"` (ejected or failing health checks), `"full"` (at the threshold, or at this
   * process's share of it under a shared load view), `"load"` (open, but the strategy's own load
   * rule chose another: bounded load, queued prefill, two choices).
   */
  passedOver?: "excluded" | "ejected" | "full" | "load";
  /** Prompt tokens predicted cached on the chosen target (prefix-aware, longest-prefix). */
  predictedCachedTokens?: number;
  /** `longest-prefix`: leading blocks of the request the chosen target holds. */
  matchedBlocks?: number;
  /** `longest-prefix`: the most leading blocks any eligible target holds. */
  longestMatchBlocks?: number;
  /** `longest-prefix`: the request's blocks (the last one partial). */
  blocks?: number;
  /** `precise-prefix`: where the chosen target's match came from — its KV events, or what this router sent it (feed not in sync). Blocks are token blocks then. */
  matchedBy?: "events" | "approximate"; // precise-prefix registration (to move onto the strategy registry at merge)
}

/**
 * How a lease ended. Connection errors and server errors count toward ejection; a success resets
 * the count; client errors (the request was not served: 3xx, 4xx) and cancellations count
 * neither way.
 */
export type LeaseOutcome = "success" | "cancelled" | "client-error" | "server-error" | "connect-error";

/** Facts a finished request reports with its release. */
export interface ReleaseInfo {
  /** Prompt tokens the server counted. */
  promptTokens?: number;
  /** Prompt tokens the server served from its prefix cache. */
  cachedTokens?: number;
}

/** A routing decision, as passed to `onDecision`. JSON-safe when your target objects are. */
export interface Decision<T extends TargetSpec = TargetSpec> {
  /**
   * The routing key as 16 lowercase hex digits (a 64-bit value); `undefined` when the request has
   * no prefix or the strategy reads none.
   */
  key: string | undefined;
  target: T;
  /** Position of the target in the key's ranking (0 = first choice); for load-based picks, 0. */
  rank: number;
  kind: PickKind;
  strategy: StrategyName;
  tenant: string | undefined;
  model: string | undefined;
  attempt: number;
  /** Clock time of the decision, ms. */
  atMs: number;
  /**
   * How the routing input was read: `"canonical"`, or `"raw"` when the body's prefix could not be
   * canonicalized (nested deeper than 1,024 levels inside it) and the router routed on the raw
   * prefix instead (docs/prefix-aware.md#the-raw-prefix-fallback).
   */
  input: InputKind;
  /**
   * Prompt tokens the strategy expects the target to serve from its prefix cache (see
   * docs/observability.md, "Predicted cached tokens"); `undefined` when it makes no prediction.
   */
  predictedCachedTokens: number | undefined;
  /** Why the target was picked: the figures that decided. */
  reason: DecisionReason;
}

/**
 * A pick, held until {@link Lease.release}. While held it counts as in flight on its target.
 */
export interface Lease<T extends TargetSpec = TargetSpec> {
  readonly target: T;
  readonly kind: PickKind;
  readonly rank: number;
  /** The routing key as 16 lowercase hex digits; `undefined` when the request has none. */
  readonly key: string | undefined;
  readonly attempt: number;
  /** How the routing input was read (see {@link Decision.input}). */
  readonly input: InputKind;
  /** Prompt tokens the strategy expects the target to serve from its prefix cache; `undefined`: no prediction. */
  readonly predictedCachedTokens: number | undefined;
  /** Why the target was picked, when the route asked ({@link RouteOptions.explain}) or `onDecision` is set; else `undefined`. */
  readonly reason: DecisionReason | undefined;
  /** True once released. */
  readonly released: boolean;
  /**
   * Marks the first byte of the answer's body (TTFT for streams): the prompt was prefilled. Only
   * the first call counts. Not for the body of an error response (4xx, 5xx).
   */
  firstByte(): void;
  /**
   * Ends the lease. Runs once; later calls do nothing. With `longest-prefix`, a `connect-error`,
   * `client-error` or `server-error` before {@link Lease.firstByte} also takes the blocks this
   * pick added back out of the prefix index: the target never computed them. Invalid arguments (an
   * unknown outcome, token counts that are not integers ≥ 0, more cached than prompt tokens)
   * throw a TypeError or RangeError and release nothing.
   */
  release(outcome?: LeaseOutcome, info?: ReleaseInfo): void;
  /** The public fields as a plain object, so that `JSON.stringify(lease)` works. */
  toJSON(): LeaseRecord<T>;
}

/** A lease's public fields, as {@link Lease.toJSON} returns them. */
export type LeaseRecord<T extends TargetSpec = TargetSpec> = Pick<
  Lease<T>,
  "target" | "kind" | "rank" | "key" | "attempt" | "predictedCachedTokens" | "input" | "released"
>;

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
export interface RouterStats {
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
  /** The `longest-prefix` strategy's block index; present only with that strategy. */
  prefixIndex?: PrefixIndexStats;
  /** The `precise-prefix` strategy: tokenizer, KV-event index, feed, prediction accuracy. */
  precise?: import("./strategies/precise-prefix/strategy.js").PrecisePrefixStats; // precise-prefix registration (to move onto the strategy registry at merge)
  /**
   * `prefix-aware` with `saturation: "tokens"`: per target, this router's uncached prefill tokens
   * in flight, its calibrated prefill throughput and bound. Per process: `mergeStats` leaves it out.
   */
  prefill?: PrefillStats;
  /** The shared load view (`loadView` other than `"local"`): its source, health and figures. */
  loadView?: LoadViewStats;
  /** Membership refreshes; present only with the `membership` option. */
  membership?: MembershipStats;
  /** Response affinity of the OpenAI adapter (Responses API); present only there, when it is on. */
  responseAffinity?: ResponseAffinityStats;
  /** The shadow strategy's figures; present only with the `shadow` option. */
  shadow?: ShadowStats;
}

/**
 * What `stats().shadow` reports: another strategy's picks computed beside the live ones and
 * never acted on (docs/observability.md#shadow). Hit rates are over the responses that
 * reported token usage; a prediction counts at most the response's prompt tokens.
 */
export interface ShadowStats {
  /** The shadow strategy's name. */
  strategy: string;
  /** Whether the shadow's state follows its own picks or the live placement. */
  placement: "own" | "live";
  /** Requests the shadow picked for (first attempts routed by the strategy). */
  decisions: number;
  /** Of those, the ones where it picked the live target. */
  agreements: number;
  /** agreements / decisions; `null` before any. */
  agreementRate: number | null;
  /** Responses that reported token usage. */
  responses: number;
  promptTokens: number;
  /** Cached tokens the servers reported for those responses. */
  cachedTokens: number;
  livePredictedCachedTokens: number;
  shadowPredictedCachedTokens: number;
  /** cachedTokens / promptTokens: what the live strategy measured. */
  liveHitRate: number | null;
  /** livePredictedCachedTokens / promptTokens. */
  livePredictedHitRate: number | null;
  /** shadowPredictedCachedTokens / promptTokens: what switching would be expected to yield. */
  shadowPredictedHitRate: number | null;
  /** shadowPredictedHitRate − livePredictedHitRate. */
  predictedHitRateDifference: number | null;
  /** Exceptions the shadow strategy threw (counted, never thrown). */
  errors: number;
  lastError: string | null;
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

/** A strategy's name: a built-in one, or a custom strategy's `name`. */
export type StrategyName = Strategy | (string & {});

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

/** What `stats().loadView` reports. */
export interface LoadViewStats {
  /** `"local"`, `"engine"`, `"redis"` or a custom view's name. */
  source: string;
  /**
   * True while the shared figures are fresh (every target's, for `engine`). When false, the
   * router counts only its own requests for the targets without a fresh figure.
   */
  healthy: boolean;
  /** Router clock time of the last successful refresh, ms; `null` before the first. */
  lastRefreshAtMs: number | null;
  /** Failed refreshes (and, for `redis`, failed writes) since the router started. */
  errors: number;
  /** Successful refreshes since the router started. */
  refreshes: number;
  /** The last error's message, `null` when there was none. */
  lastError: string | null;
  /** Per target: other routers' requests in flight as last seen (`null`: unknown). */
  others: Record<string, number | null>;
}

/** What `stats().membership` reports. */
export interface MembershipStats {
  /** Router clock time of the last successful refresh, ms; `null` before the first. */
  lastRefreshAtMs: number | null;
  refreshes: number;
  /** Refreshes that failed (threw, timed out, returned no or invalid targets). */
  errors: number;
  lastError: string | null;
  /** Refreshes that changed the target set. */
  changes: number;
}

/** What `stats().responseAffinity` reports (OpenAI adapter, response affinity on; exported by `prefix-router/openai`). */
export interface ResponseAffinityStats {
  /** Response ids in this process's map. */
  entries: number;
  /** Requests referring to a stored response that this process's map placed. */
  localHits: number;
  /** Requests referring to a stored response this process's map did not know (the store, if any, was asked). */
  localMisses: number;
  /** The shared store; present only with `responseAffinity.store`. */
  store?: ResponseStoreStats;
}

/** What `stats().responseAffinity.store` reports (exported by `prefix-router/openai`). */
export interface ResponseStoreStats {
  source: "redis";
  /** Connected, and reads are not backing off after a failure. */
  healthy: boolean;
  /** Reads that named a current target. */
  hits: number;
  /** Reads that found nothing (or a value naming no current target). */
  misses: number;
  /** Reads that failed, timeouts included. */
  errors: number;
  /** Of `errors`, reads that took longer than `timeoutMs`. */
  timeouts: number;
  /** Reads not sent: not connected, or backing off after a failure. */
  skipped: number;
  /** Writes Redis acknowledged. */
  writes: number;
  /** Writes that failed or were dropped (not connected, or too many waiting). */
  writeErrors: number;
  /** The last error's message (credentials redacted), `null` when there was none. */
  lastError: string | null;
}

