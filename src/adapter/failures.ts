/**
 * What a failed attempt says about its target, for the parts both adapters share: is it a
 * connection that failed (and which), and may the request go to the key's next target.
 *
 * A retry is allowed only when the error proves the server never ran the request: the
 * connection was refused, reset or closed by the peer before any response, DNS failed, the host
 * or network was unreachable, the connect timed out. A headers or body timeout is a connection
 * failure that counts against the target (passive ejection) but is not retried: the server may
 * be running the request. Each adapter judges its own protocol's errors (aborts, HTTP statuses,
 * SageMaker's error names) around this.
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

/** The first connection error code found along `error`'s cause chain (and inside an AggregateError). */
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

/**
 * The verdict on a connection failure (`connect-error`, retried when its code says the request
 * never reached a server), or `undefined` when `error` is no connection failure. Once a response
 * has begun nothing is retried, whatever the code: the model may have run.
 */
export function judgeConnection(error: unknown, responseBegan: boolean): AttemptFailure | undefined {
  const code = connectionCode(error);
  if (code === undefined) return undefined;
  return { retry: RETRYABLE_CODES.has(code) && !responseBegan, outcome: "connect-error" };
}
