/**
 * The OpenAI adapter's public types: its targets, its options, what it returns and what it
 * reports per attempt. Both the request side (routed-fetch.ts) and the response side (body.ts)
 * use them.
 */
import type { LeaseOutcome, PickKind, Router, TargetSpec } from "../types.js";
import type { RouterOptions } from "../options.js";

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
  /** Time to the first body byte (TTFT for streams), ms; `null` when no byte arrived. */
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

/** Options of {@link createRoutedFetch}: every router option, plus how requests are sent. */
export interface RoutedFetchOptions<T extends OpenAITarget = OpenAITarget> extends RouterOptions<T> {
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
   * Attempts per request, from 1 to 16: a connection failure before any response is retried on
   * the key's next target until this many targets were tried. Requests whose body is a stream
   * (not replayable) get one attempt.
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
}

/** What {@link createRoutedFetch} returns. */
export interface RoutedFetch<T extends OpenAITarget = OpenAITarget> {
  /** A drop-in `fetch`. Hand it to any client that accepts one. */
  fetch: FetchLike;
  /** The router behind it: `stats()`, `setTargets()`, `rank()`. */
  router: Router<T>;
}
