/**
 * How a failed `fetch` is judged: retry on the key's next target, or not, and what the failed
 * lease records (which feeds passive ejection).
 *
 * Only failures that happen before any response are ever seen here (once headers arrive the
 * response is returned and nothing is retried). A connection failure is judged by the shared
 * rules (`judgeConnection`); an abort is the caller's decision and counts against nobody.
 */
import type { AttemptFailure } from "../adapter/attempts.js";
import { connectionCode, judgeConnection } from "../adapter/failures.js";
import { RouterError, isRouterError } from "../errors.js";

/** True for an `AbortError` / `TimeoutError` (DOMException or look-alike). */
export function isAbortError(error: unknown): boolean {
  if (error === null || typeof error !== "object") return false;
  const name = (error as { name?: unknown }).name;
  return name === "AbortError" || name === "TimeoutError";
}

/** Judges an error thrown by the underlying `fetch` before any response arrived. */
export function judgeFetchError(error: unknown, signal: AbortSignal | null | undefined): AttemptFailure {
  if (signal?.aborted === true || isAbortError(error)) return { retry: false, outcome: "cancelled" };
  if (isRouterError(error) && error.code === "ERR_CONNECTION_LOST") return { retry: false, outcome: "connect-error" };
  const connection = judgeConnection(error, false);
  if (connection !== undefined) return connection;
  // undici reports every network failure as `TypeError: fetch failed`; without a known code it is
  // still the target's failure, but nothing proves the server never saw the request.
  if (error instanceof TypeError && error.message === "fetch failed") return { retry: false, outcome: "connect-error" };
  // Anything else (an invalid header, a bad URL) is local: it says nothing about the target, so
  // the lease ends as `cancelled`, which neither ejects nor heals it.
  return { retry: false, outcome: "cancelled" };
}

/**
 * The error a routed fetch rejects with for a connection failure that is not retried (a known
 * connection code, judged `connect-error`): the request may have been written, so it becomes
 * `ERR_CONNECTION_LOST` (the fetch error as its `cause`), which the openai client does not retry
 * (see routed-fetch.ts) and generic retry helpers do not take for a network error. Anything else
 * passes unchanged.
 */
export function surfaceFetchError(error: unknown, verdict: AttemptFailure): unknown {
  // Only a known connection code says the request may have reached the server; a bare `fetch
  // failed` (a port fetch refuses, an unsupported scheme) stays the fetch's own error.
  if (verdict.retry || verdict.outcome !== "connect-error" || isRouterError(error) || connectionCode(error) === undefined) return error;
  return new RouterError(
    "ERR_CONNECTION_LOST",
    "The connection to the target failed after the request may have been written; not retried, the model may have run it",
    { cause: error },
  );
}
