/**
 * The OpenAI adapter's public types: its targets, its options, what it returns and what it
 * reports per attempt. Both the request side (routed-fetch.ts) and the response side (body.ts)
 * use them.
 */
import type { LeaseOutcome, PickKind, TargetSpec } from "../types.js";
import type { Router } from "../router/types.js";
import type { RouterOptions } from "../options.js";
import type { TenantOptions } from "../adapter/tenant.js";
import type { OpenAITenantRequest } from "./tenant.js";

/** How a routed request treats a 3xx answer (see {@link RoutedFetchOptions.redirect}). */
export type RedirectPolicy = "manual" | "same-origin";
import type { ResponseAffinityOptions } from "./responses.js";

/** The `fetch` signature the adapter takes and returns (WHATWG fetch, as Node.js ≥ 20 ships it). */
export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** A replica of an OpenAI-compatible server (vLLM, SGLang, TGI, …). */
export interface OpenAITarget extends TargetSpec {
  /**
   * Absolute `http:` or `https:` URL the OpenAI-compatible API lives under, as you would pass it
   * to the openai client, e.g. `"http://10.0.0.7:8000/v1"`.
   */
  readonly baseURL: string;
  /**
   * Headers set on every request to this target, over the client's own (for example a
   * per-replica `Authorization`).
   * @default {}
   */
  readonly headers?: Readonly<Record<string, string>>;
}

/** What one attempt of a routed request did, as passed to {@link RoutedFetchOptions.onRequestEnd}. */
export interface RoutedRequestInfo<T extends OpenAITarget = OpenAITarget> {
  target: T;
  /** How the target was picked. */
  kind: PickKind;
  /** Position of the target in the key's ranking (0 = first choice). */
  rank: number;
  /** Prompt tokens the strategy expected the target to serve from its cache (`Lease.predictedCachedTokens`). */
  predictedCachedTokens: number | undefined;
  /** 1-based attempt number; above 1 after a connection failure on another target. */
  attempt: number;
  /** HTTP status; `undefined` when the attempt failed before any response. */
  status: number | undefined;
  /** How the lease ended. */
  outcome: LeaseOutcome;
  /** True for a `text/event-stream` response. */
  streaming: boolean;
  /**
   * Time to the first body byte (TTFT for streams; for a Responses API stream, to its first
   * output event), ms; `null` when none arrived.
   */
  ttftMs: number | null;
  /** From sending the request to the end of the body (or the failure), ms. */
  durationMs: number;
  /** Prompt tokens, when the server reported cached tokens too. */
  promptTokens: number | undefined;
  /** Cached prompt tokens (`usage.prompt_tokens_details.cached_tokens`), when reported. */
  cachedTokens: number | undefined;
  /** The error that ended the attempt (connection failure, abort reason), if any. */
  error: unknown;
}

/**
 * Options of {@link createRoutedFetch}: every router option, how requests are sent, and the
 * tenant of each request (`tenant`, `isolation`, `cacheSaltSecret`; docs/tenants.md).
 */
export interface RoutedFetchOptions<T extends OpenAITarget = OpenAITarget> extends RouterOptions<T>, TenantOptions<OpenAITenantRequest> {
  /** The replicas. Each has a unique `id` and a `baseURL`; `weight`, `models` and `headers` are optional. */
  targets: readonly T[];
  /**
   * The `fetch` that sends requests to the targets.
   * @default globalThis.fetch
   */
  fetch?: FetchLike;
  /**
   * The base URL the calling client is configured with. A request URL under it is routed and
   * keeps the part after it (appended to the target's `baseURL`); a URL elsewhere is passed to
   * `fetch` unchanged. Without it every request is routed, and a path that starts with the
   * chosen target's base path (`/v1/chat/completions` for a target at `…/v1`) keeps only what
   * follows it.
   * @default undefined
   */
  baseURL?: string;
  /**
   * Attempts per request, from 1 to 16: a connection that failed before the request was written
   * (refused, DNS, unreachable, connect timeout) is retried on the key's next target until this
   * many targets were tried; no other failure is retried. Requests whose body is a stream (not
   * replayable) get one attempt.
   * @default 2
   */
  attempts?: number;
  /**
   * Called once per attempt when its lease ends, with the target, pick kind, status, outcome,
   * TTFT, duration and token usage. Synchronous; an exception it throws is ignored, so metrics
   * never break a request.
   * @default undefined
   */
  onRequestEnd?: (info: RoutedRequestInfo<T>) => void;
  /**
   * What a 3xx answer from a target does. `"manual"`: it is the answer (status and `Location`
   * reach the caller); nothing is resent. `"same-origin"`: a redirect to the target's own origin
   * is followed (at most 5 times), one anywhere else is the answer. A redirect never carries the
   * request, its body or the target's `headers` to another origin.
   * @default "manual"
   */
  redirect?: RedirectPolicy;
  /**
   * Add an `x-prefix-router-target` header ({@link TARGET_HEADER}) naming the target to every
   * routed response. Off by default: passed on to your own callers it tells them where each
   * prompt went, which helps anyone crafting prompts to overload one replica (docs/security.md).
   * @default false
   */
  targetHeader?: boolean;
  /**
   * Add an `x-prefix-router-reason` header ({@link REASON_HEADER}) to every routed response:
   * why its target was picked, as `name=value` pairs (docs/observability.md#the-reason-header).
   * For debugging; it is never sent to the target. Off by default for the same reason as
   * `targetHeader`: it tells whoever sees the response where the prompt went and how loaded it was.
   * @default false
   */
  explainHeader?: boolean;
  /**
   * Response affinity for the Responses API: a request that refers to a stored response
   * (`previous_response_id`, `/responses/{id}`) goes to the target that served it, as vLLM keeps
   * stored responses in that replica's memory. Ids are remembered per routed fetch, at most
   * `maxEntries`; when the target has left the target set, such a request fails with
   * `ERR_TARGET_GONE`; an id this fetch never saw is routed like any request — unless `store`
   * shares the ids between processes (Redis; docs/openai.md), where it is looked up first
   * (at most `store.timeoutMs`). `stats().responseAffinity` counts hits, misses and store
   * errors. `false` turns it off.
   * @default { maxEntries: 100000 } ({@link DEFAULT_RESPONSE_AFFINITY}), no store
   */
  responseAffinity?: ResponseAffinityOptions | false;
}

/** What {@link createRoutedFetch} returns. */
export interface RoutedFetch<T extends OpenAITarget = OpenAITarget> {
  /** A drop-in `fetch`. Hand it to any client that accepts one. */
  fetch: FetchLike;
  /** The router behind it: `stats()`, `setTargets()`, `rank()`. */
  router: Router<T>;
}
