/**
 * The strategy interface: how a router chooses among its targets.
 *
 * A strategy is a plug-in behind this one small interface (the grpc-js `Picker` idea). The router
 * reads the request once, builds an immutable snapshot of its targets and hands the strategy a
 * {@link PickContext}: the eligible candidates and their load, as of now. Then:
 *
 * 1. {@link RoutingStrategy.read} turns the request into the strategy's routing input (a key, a
 *    block chain…) — once per request, reused by every retry;
 * 2. {@link RoutingStrategy.pick} chooses a target: a pure, synchronous read that changes no
 *    state, so a pick that is rejected or retried leaves nothing behind;
 * 3. {@link RoutingStrategy.commit} records the pick once the lease is taken, and may return
 *    hooks that run at the response's first byte and at the lease's release.
 */
import type { RoutingMode } from "../routing/routing-input.js";
import type { Clock, LeaseOutcome, PickKind, ReleaseInfo, TargetSpec } from "../types.js";
import type { BuiltInReasonFields, Strategy } from "./built-in.js";
import type { BuiltInStrategyStats } from "./built-in-stats.js";

/** A request as strategies see it, read and validated once by the router. */
export interface StrategyRequest {
  /** The body; in text mode, JSON text or bytes are already parsed into the object they encode. */
  readonly body: unknown;
  /** Validated tenant id. */
  readonly tenant: string | undefined;
  /** The model: `RouteRequest.model`, else (text mode) `body.model`. */
  readonly model: string | undefined;
}

/**
 * What a strategy sees of the router at one decision. Targets are addressed by their index in
 * {@link PickContext.targets}; {@link PickContext.candidates} lists the eligible ones (serving the
 * request's model, weight > 0), never empty.
 */
export interface PickContext<T extends TargetSpec = TargetSpec> {
  /** The current target set (the snapshot's order). */
  readonly targets: readonly T[];
  /** `weights[i]`: target i's weight. */
  readonly weights: Float64Array;
  /** Indices of the eligible targets. Non-empty. */
  readonly candidates: Int32Array;
  /** Clock time of the decision, ms. */
  readonly now: number;
  /** The router's `concurrencyThreshold`. */
  readonly concurrencyThreshold: number;
  /** The router's random source, in [0, 1). */
  readonly random: () => number;
  /**
   * True when {@link PickContext.inflight} includes other routers' requests, from a shared load
   * view refreshed in the background (`loadView: "engine"` or `"redis"`): the figures can be one
   * refresh old, so several routers may see the same target as the least busy at once. Strategies
   * then spread spillover at random among the key's next choices (two choices) instead of sending
   * it all to the next one. Absent or false: the router's own requests only (the local view).
   */
  readonly sharedLoad?: boolean;
  /** Requests in flight on target i: this router's, plus other routers' under a shared load view. */
  inflight(i: number): number;
  /**
   * Under a shared load view that carries it (`redis`): the {@link StrategyPick.work} other
   * routers' picks queued on target i that has not reached its first byte yet, as last seen.
   * 0 (or absent) otherwise.
   */
  othersQueuedWork?(i: number): number;
  /**
   * Under a shared load view that carries it (`engine`, for a target that exports a
   * waiting-uncached-tokens gauge): prompt tokens queued for prefill on target i that its cache
   * does not hold and that are not this router's, as last seen — other routers' and any other
   * client's. `NaN` (or absent) when unknown. Where both are known it is the fuller figure of the
   * two: `longest-prefix` counts it instead of {@link PickContext.othersQueuedWork}.
   */
  othersQueuedTokens?(i: number): number;
  /** Whether target i is ejected (passive outlier detection) or failing its active health check. */
  isEjected(i: number): boolean;
  /** Whether target i was already tried by this request (`RouteOptions.exclude`). */
  isExcluded(i: number): boolean;
  /** Not excluded, not ejected and below `concurrencyThreshold`: target i can take the request. */
  isOpen(i: number): boolean;
  /**
   * Weighted rendezvous score of target i for a 64-bit key given as two uint32 halves; higher
   * wins. The target's hash is precomputed in the snapshot.
   */
  score(i: number, keyHi: number, keyLo: number): number;
}

/**
 * A strategy's choice. A registered strategy adds the reason fields it declares
 * (`StrategyDefinition.reasonFields`; the built-ins': {@link BuiltInReasonFields}), reported in the
 * decision's reason (`Decision.reason`).
 */
export interface StrategyPick extends Readonly<BuiltInReasonFields> {
  /** Index of the chosen target in {@link PickContext.targets}. */
  readonly index: number;
  /** What the pick was (`preferred`, `spillover`, `fallback`, …). */
  readonly kind: PickKind;
  /** Position of the target in the request's ranking (0 = first choice); 0 for load-based picks. */
  readonly rank: number;
  /** The routing key reported in decisions and leases (as 16 hex digits), if the strategy has one. */
  readonly key?: bigint | undefined;
  /**
   * Prompt tokens the strategy expects the target to serve from its prefix cache, if it makes a
   * prediction: what it believes the target holds of this request's prefix, in characters (or
   * bytes) divided by the target's characters per token, learned from its `promptTokens`
   * (`TokenRatio`, starting at 4). Compared with the `cachedTokens` the server reports
   * (docs/observability.md, "Closed loop").
   */
  readonly predictedCachedTokens?: number | undefined;
  /**
   * Work this pick queues on the target until the response's first byte, in the strategy's own
   * unit (uncached blocks, say). A shared load view that carries it (`redis`) adds
   * it to the fleet-wide figure other routers read through {@link PickContext.othersQueuedWork}.
   */
  readonly work?: number;
  /**
   * The same work in prompt tokens (uncached blocks × block size at the target's learned
   * characters per token, say), for a view that counts tokens (`engine`): it subtracts this
   * router's own from the engine's figure, so they are not counted twice.
   */
  readonly workTokens?: number;
}

/** A ranking of candidates, best first, ignoring load. */
export interface StrategyRanking {
  readonly order: readonly number[];
  readonly key: bigint | undefined;
}

/** Hooks a committed pick keeps until the lease ends. Each runs at most once. */
export interface Commitment {
  /** The response's first byte arrived: the target prefilled the prompt. */
  firstByte?(): void;
  /**
   * The lease ended with `outcome` (after {@link Commitment.firstByte}, if any), with the token
   * usage the server reported, when it did.
   */
  release?(outcome: LeaseOutcome, sawFirstByte: boolean, info?: ReleaseInfo): void;
}

/**
 * What a strategy may report under `router.stats()`: the figures registered strategies declare
 * (`StrategyDefinition.stats`; the built-ins': {@link BuiltInStrategyStats}).
 */
export interface StrategyStats extends BuiltInStrategyStats {}

/**
 * A routing strategy. Only `name` and `pick` are required.
 *
 * @example
 * // Prefer targets in my zone; anywhere else when they are all busy.
 * const zoneFirst: RoutingStrategy<Target> = {
 *   name: "zone-first",
 *   pick(ctx) {
 *     let best = -1;
 *     for (const i of ctx.candidates) {
 *       if (!ctx.isOpen(i)) continue;
 *       if (ctx.targets[i].zone === "eu-west-1a") return { index: i, kind: "preferred", rank: 0 };
 *       if (best === -1 || ctx.inflight(i) < ctx.inflight(best)) best = i;
 *     }
 *     return { index: best === -1 ? ctx.candidates[0] : best, kind: "spillover", rank: 1 };
 *   },
 * };
 * const router = await createRouter({ targets, strategy: zoneFirst });
 */
export interface RoutingStrategy<T extends TargetSpec = TargetSpec, I = unknown> {
  /** Reported in decisions (`Decision.strategy`) and as `router.strategy`. */
  readonly name: string;
  /**
   * The request's routing input, or `undefined` when it has none. Called once per request, also
   * when a retry routes it again. May throw a `RouterError` for a body it cannot read.
   */
  read?(request: StrategyRequest): I | undefined;
  /**
   * A promise when reading the request now would know less of it than the strategy will shortly
   * (`precise-prefix`: a cold prompt's tokens, computed off the event loop), resolving — never
   * rejecting — when it knows more or has waited long enough; `undefined` when there is nothing
   * to wait for. The adapters await it before a request's first route (`router.settle`).
   */
  settle?(request: StrategyRequest): Promise<void> | undefined;
  /** Chooses a target. Must not change any state: {@link RoutingStrategy.commit} does. */
  pick(ctx: PickContext<T>, input: I | undefined): StrategyPick;
  /** The ranking of the candidates, ignoring load (`router.rank()`). Default: the rendezvous ranking of the routing key. */
  rank?(ctx: PickContext<T>, input: I | undefined): StrategyRanking;
  /** Records a pick when its lease is taken. */
  commit?(ctx: PickContext<T>, pick: StrategyPick, input: I | undefined): Commitment | undefined;
  /** The target set changed (also called once with the initial targets). */
  setTargets?(targets: readonly T[]): void;
  /** Statistics merged into `router.stats()`. */
  stats?(): StrategyStats;
}

/** What a {@link StrategyFactory} is given: the router's settings. */
export interface StrategyEnv {
  readonly mode: RoutingMode;
  readonly prefixLength: number;
  readonly concurrencyThreshold: number;
  readonly seed: bigint;
  readonly clock: Clock;
  readonly random: () => number;
  /**
   * The request's routing key (see "Routing key" in the README): the first `prefixLength` of its
   * routing input hashed with its tenant and model, or `undefined` when it has no routing input.
   */
  routingKey(request: StrategyRequest): bigint | undefined;
  /** Builds another strategy for this router — a built-in by name, an object or a factory — for a strategy that wraps it. */
  create<T extends TargetSpec>(strategy: StrategySpec<T>): RoutingStrategy<T>;
}

/** Builds a strategy for one router (strategies keep per-router state). */
export type StrategyFactory<T extends TargetSpec = TargetSpec> = (env: StrategyEnv) => RoutingStrategy<T>;

/** What `RouterOptions.strategy` accepts: a built-in's name, a strategy object, or a factory. */
export type StrategySpec<T extends TargetSpec = TargetSpec> = Strategy | RoutingStrategy<T> | StrategyFactory<T>;
