/**
 * How a failed SageMaker Runtime call is judged: may it go to the key's next target, and what
 * does it say about the target (passive ejection)? Connection failures are judged by the rules
 * both adapters share (`judgeConnection`).
 *
 * Retried, because the model never ran the request:
 * - a connection that failed before the request was written (refused, DNS, unreachable,
 *   connect timeout: the shared `RETRYABLE_CODES`); a reset may come after the write and is not;
 * - `ServiceUnavailable` (503) and `ModelNotReadyException`: SageMaker's own "not now, try
 *   again" answers.
 *
 * Never retried: anything once the response began (the SDK marks such errors with `$response`),
 * `InternalFailure`, `ModelError` (the model ran and failed), validation errors, timeouts, a
 * failing response stream, aborts. Errors are told apart by `name` / `code` / `$fault`, never by
 * message text.
 */
import type { AttemptFailure } from "../adapter/attempts.js";
import { judgeConnection } from "../adapter/failures.js";

/** SageMaker error names that mean the request did not run and may go elsewhere. */
const RETRYABLE_NAMES: ReadonlySet<string> = new Set(["ServiceUnavailable", "ModelNotReadyException"]);

/** Errors a response stream raises mid-response: the target failed while serving. */
const STREAM_FAILURES: ReadonlySet<string> = new Set(["ModelStreamError", "InternalStreamFailure"]);

/** Judges one failed attempt, or a response stream that failed. */
export function judgeSageMakerError(error: unknown): AttemptFailure {
  if (error === null || typeof error !== "object") return { retry: false, outcome: "cancelled" };
  const e = error as { name?: unknown; $fault?: unknown; $metadata?: { httpStatusCode?: unknown }; $response?: unknown };
  const name = typeof e.name === "string" ? e.name : "";
  if (name === "AbortError") return { retry: false, outcome: "cancelled" };
  if (RETRYABLE_NAMES.has(name)) return { retry: true, outcome: "server-error" };
  if (STREAM_FAILURES.has(name)) return { retry: false, outcome: "server-error" };

  // `$response` is set once headers arrived: the body broke off, the model may have run.
  const connection = judgeConnection(error, e.$response !== undefined);
  if (connection !== undefined) return connection;
  if (name === "TimeoutError") return { retry: false, outcome: "server-error" };

  if (name === "ModelError") {
    // The model container answered; its own status says whose fault it was.
    const original = (error as { OriginalStatusCode?: unknown }).OriginalStatusCode;
    const clientFault = typeof original === "number" && original >= 400 && original < 500;
    return { retry: false, outcome: clientFault ? "client-error" : "server-error" };
  }
  const status = typeof e.$metadata?.httpStatusCode === "number" ? e.$metadata.httpStatusCode : undefined;
  if (e.$fault === "server" || (status !== undefined && status >= 500)) return { retry: false, outcome: "server-error" };
  if (e.$fault === "client" || (status !== undefined && status >= 400)) return { retry: false, outcome: "client-error" };
  // No server answered and no known network code (a local bug, missing credentials, …): it says
  // nothing about the target, so it neither ejects nor heals it.
  return { retry: false, outcome: "cancelled" };
}
