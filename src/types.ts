/**
 * The vocabulary every room speaks: targets, requests, leases, decisions. Types only. Each
 * feature's own types (options, stats, reason fields) stand beside the feature.
 */
import type { BuiltInReasonFields, Strategy } from "./strategies/built-in.js";

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

/**
 * How a request's routing input was read: `"canonical"`, or `"raw"` when its prefix could not be
 * canonicalized and the router routed on the raw prefix (routing/raw-prefix.ts).
 */
export type InputKind = "canonical" | "raw";

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
export interface DecisionReason extends BuiltInReasonFields {
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
  /** Prompt tokens predicted cached on the chosen target (strategies that predict). */
  predictedCachedTokens?: number;
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

/** A strategy's name: a built-in one, or a custom strategy's `name`. */
export type StrategyName = Strategy | (string & {});
