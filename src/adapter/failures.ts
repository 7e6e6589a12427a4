/**
 * What a failed attempt says about its target, for the parts both adapters share: is it a
 * connection that failed (and which), and may the request go to the key's next target.
 *
 * A retry is allowed only when the error proves the request was never written: the connection
 * was refused, DNS failed, the host or network was unreachable, the connect timed out. Everything
 * else a connection can do — reset, closed by the peer, a broken pipe, a partial status line, a
 * headers or body timeout — may happen after the server read the request, so it counts against
 * the target (passive ejection) but is never retried: an LLM request must not run twice. A reset
 * before any byte was written looks the same as one after, and is not retried either. Each
 * adapter judges its own protocol's errors (aborts, HTTP statuses, SageMaker's error names)
 * around this.
 */
import type { AttemptFailure } from "./attempts.js";

/**
 * Error codes (Node.js `errno` codes and undici codes) of connections that failed before the
 * request was written: retried on the key's next target.
 */
export const RETRYABLE_CODES: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "EHOSTDOWN",
  "ENETUNREACH",
  "ENETDOWN",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/**
 * Connection failures that may come after the request was written: they count against the
 * target but are not retried. `ETIMEDOUT` is retried only from `connect()` (see
 * {@link isRetryableConnection}).
 */
const NOT_RETRYABLE_CONNECTION_CODES: ReadonlySet<string> = new Set([
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
]);

/** A connection failure found along an error's cause chain. */
interface ConnectionFailure {
  code: string;
  /** The system call that failed (`connect`, `read`, `write`, `getaddrinfo`), when Node reports it. */
  syscall: string | undefined;
}

function failureOf(error: unknown): ConnectionFailure | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && current !== null && typeof current === "object"; depth++) {
    const e = current as { code?: unknown; syscall?: unknown; errors?: unknown; cause?: unknown };
    if (typeof e.code === "string" && (RETRYABLE_CODES.has(e.code) || NOT_RETRYABLE_CONNECTION_CODES.has(e.code))) {
      return { code: e.code, syscall: typeof e.syscall === "string" ? e.syscall : undefined };
    }
    if (Array.isArray(e.errors)) {
      for (const inner of e.errors) {
        const found = failureOf(inner);
        if (found !== undefined) return found;
      }
    }
    current = e.cause;
  }
  return undefined;
}

/** The first connection error code found along `error`'s cause chain (and inside an AggregateError). */
export function connectionCode(error: unknown): string | undefined {
  return failureOf(error)?.code;
}

/** True when the failure proves the request was never written. */
function isRetryableConnection(failure: ConnectionFailure): boolean {
  if (RETRYABLE_CODES.has(failure.code)) return true;
  // A connect() that timed out never sent a byte; a timeout on an open socket may have.
  return failure.code === "ETIMEDOUT" && failure.syscall === "connect";
}

/**
 * The verdict on a connection failure (`connect-error`, retried only when the request was never
 * written), or `undefined` when `error` is no connection failure. Once a response has begun
 * nothing is retried, whatever the code: the model may have run.
 */
export function judgeConnection(error: unknown, responseBegan: boolean): AttemptFailure | undefined {
  const failure = failureOf(error);
  if (failure === undefined) return undefined;
  return { retry: !responseBegan && isRetryableConnection(failure), outcome: "connect-error" };
}
