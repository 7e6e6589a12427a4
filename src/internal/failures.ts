/**
 * How a failed `fetch` is judged: retry on the key's next target, or not, and what the failed
 * lease records (which feeds passive ejection).
 *
 * Only failures that happen before any response are ever seen here (once headers arrive the
 * response is returned and nothing is retried). Among them, a retry is allowed only when the
 * error says the connection failed: refused, reset or closed by the peer, DNS failure, host or
 * network unreachable, connect timeout. A headers timeout is a connection failure that counts
 * against the target but is not retried (the server may be running the request). An abort is
 * the caller's decision and counts against nobody.
 */
import type { AttemptFailure } from "./attempts.js";

/** Error codes (Node.js `errno` codes and undici codes) of connections that failed before a response. */
export const RETRYABLE_CODES: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "EHOSTDOWN",
  "ENETUNREACH",
  "ENETDOWN",
  "ETIMEDOUT",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_CLOSED",
]);

/** Connection failures that count against the target but are not retried. */
const NOT_RETRYABLE_CONNECTION_CODES: ReadonlySet<string> = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]);

/** The first error code found along `error`'s cause chain (and inside an AggregateError). */
export function connectionCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && current !== null && typeof current === "object"; depth++) {
    const e = current as { code?: unknown; errors?: unknown; cause?: unknown };
    if (typeof e.code === "string" && (RETRYABLE_CODES.has(e.code) || NOT_RETRYABLE_CONNECTION_CODES.has(e.code))) {
      return e.code;
    }
    if (Array.isArray(e.errors)) {
      for (const inner of e.errors) {
        const code = connectionCode(inner);
        if (code !== undefined) return code;
      }
    }
    current = e.cause;
  }
  return undefined;
}

/** True for an `AbortError` / `TimeoutError` (DOMException or look-alike). */
export function isAbortError(error: unknown): boolean {
  if (error === null || typeof error !== "object") return false;
  const name = (error as { name?: unknown }).name;
  return name === "AbortError" || name === "TimeoutError";
}

/** Judges an error thrown by the underlying `fetch` before any response arrived. */
export function judgeFetchError(error: unknown, signal: AbortSignal | null | undefined): AttemptFailure {
  if (signal?.aborted === true || isAbortError(error)) return { retry: false, outcome: "cancelled" };
  const code = connectionCode(error);
  if (code !== undefined) return { retry: RETRYABLE_CODES.has(code), outcome: "connect-error" };
  // undici reports every network failure as `TypeError: fetch failed`; without a known code it is
  // still the target's failure, but nothing proves the server never saw the request.
  if (error instanceof TypeError && error.message === "fetch failed") return { retry: false, outcome: "connect-error" };
  // Anything else (an invalid header, a bad URL) is local: it says nothing about the target, so
  // the lease ends as `cancelled`, which neither ejects nor heals it.
  return { retry: false, outcome: "cancelled" };
}
