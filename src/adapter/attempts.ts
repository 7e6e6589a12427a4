/**
 * Bounded retries across a key's ranking, shared by the OpenAI and SageMaker adapters.
 *
 * A request is retried on the next target only when the failure proves the server never ran
 * it (the adapter's `judge` decides: a connection refused before the request was written,
 * `ServiceUnavailable`, …). Each failed attempt releases its lease with an outcome that feeds
 * passive ejection; the next attempt excludes every target already tried, so it lands on the
 * key's next choice that has room.
 */
import type { Lease, LeaseOutcome, RouteRequest, Router, TargetSpec } from "../types.js";

/** How one failed attempt is judged. */
export interface AttemptFailure {
  /** Retry on another target (the server never ran the request). */
  retry: boolean;
  /** Outcome recorded on the failed lease. */
  outcome: LeaseOutcome;
}

/**
 * Runs `send` on up to `maxAttempts` targets. `send` owns the lease on success (it releases it
 * when the response has been consumed); on a thrown error the lease is released here. With
 * `target`, every attempt goes to that target (`route(…, { target })`: response affinity).
 */
export async function withAttempts<T extends TargetSpec, R>(
  router: Router<T>,
  request: RouteRequest,
  maxAttempts: number,
  send: (lease: Lease<T>) => Promise<R>,
  judge: (error: unknown) => AttemptFailure,
  target?: string,
): Promise<R> {
  const tried = new Set<string>();
  // Read once: every attempt routes the same prepared request (no second parse or hash).
  const prepared = router.prepare(request);
  for (let attempt = 1; ; attempt++) {
    const lease = router.route(prepared, target === undefined ? { exclude: tried, attempt } : { attempt, target });
    try {
      return await send(lease);
    } catch (error) {
      const verdict = judge(error);
      lease.release(verdict.outcome);
      tried.add(lease.target.id);
      // The last attempt's own error reaches the caller: it says what went wrong.
      if (!verdict.retry || attempt >= maxAttempts || tried.size >= prepared.eligibleCount()) throw error;
    }
  }
}
