/**
 * Bounded retries across a key's ranking, shared by the OpenAI and SageMaker adapters.
 *
 * A request is retried on the next target only when the failure proves the server never ran
 * it (the adapter's `judge` decides: a connection refused before the request was written,
 * `ServiceUnavailable`, …). Each failed attempt releases its lease with an outcome that feeds
 * passive ejection; the next attempt excludes every target already tried, so it lands on the
 * key's next choice that has room.
 *
 * Each request is one trace (telemetry/request-trace.ts): a span from the first attempt to the
 * end of the response, with the trace context `send` writes into each attempt's request.
 */
import { telemetryOf } from "../telemetry/load.js";
import type { RequestFacts } from "../telemetry/telemetry.js";
import type { Lease, LeaseOutcome, RouteRequest, TargetSpec } from "../types.js";
import type { Router } from "../router/types.js";

/** How one failed attempt is judged. */
export interface AttemptFailure {
  /** Retry on another target (the server never ran the request). */
  retry: boolean;
  /** Outcome recorded on the failed lease. */
  outcome: LeaseOutcome;
}

/** What an adapter says of a request for its trace (the router adds its strategy). */
export type AttemptFacts = Omit<RequestFacts, "strategy">;

/** One call through {@link withAttempts}. */
export interface AttemptCall {
  readonly request: RouteRequest;
  readonly maxAttempts: number;
  readonly facts: AttemptFacts;
  /** Every attempt goes to this target (response affinity). */
  readonly target?: string | undefined;
  /** The caller shows each lease's reason. @default false */
  readonly explain?: boolean;
}

/**
 * Runs `send` on up to `maxAttempts` targets (`judge` says whether a failed attempt may be retried
 * on the next target, and its outcome), with the trace-context headers to put on the
 * attempt's request. `send` owns the lease on success (it releases it when the response has
 * been consumed); on a thrown error the lease is released here. With `target`, every attempt
 * goes to that target (`route(…, { target })`: response affinity). `explain`: the caller shows each
 * lease's reason (a response header); a recording span asks for it too.
 */
export async function withAttempts<T extends TargetSpec, R>(
  router: Router<T>,
  call: AttemptCall,
  send: (lease: Lease<T>, traceHeaders: Record<string, string>) => Promise<R>,
  judge: (error: unknown) => AttemptFailure,
): Promise<R> {
  const { request, maxAttempts, facts, target, explain = false } = call;
  const tried = new Set<string>();
  // Read once: every attempt routes the same prepared request (no second parse or hash).
  const prepared = router.prepare(request);
  // A strategy that learns more of the request shortly (a cold prompt's tokens) is waited for.
  const settling = router.settle(prepared);
  if (settling !== undefined) await settling;
  const trace = telemetryOf(router).request({ ...facts, strategy: router.strategy });
  const explains = explain || trace.explains;
  for (let attempt = 1; ; attempt++) {
    let lease: Lease<T>;
    try {
      lease = trace.attempt(router.route(prepared, target === undefined ? { exclude: tried, attempt, explain: explains } : { attempt, target, explain: explains }));
    } catch (error) {
      trace.failed(undefined, "cancelled", error, true);
      throw error;
    }
    try {
      return await trace.run(() => send(lease, trace.headers()));
    } catch (error) {
      const verdict = judge(error);
      tried.add(lease.target.id);
      // The last attempt's own error reaches the caller: it says what went wrong.
      const final = !verdict.retry || attempt >= maxAttempts || tried.size >= prepared.eligibleCount();
      trace.failed(lease, verdict.outcome, error, final);
      if (final) throw error;
    }
  }
}
