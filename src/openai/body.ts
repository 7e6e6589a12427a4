/**
 * The response side of a routed request: the body is wrapped in a stream whose end, cancel or
 * error releases the lease exactly once.
 *
 * - first chunk: `lease.firstByte()` (TTFT for streams) when the status is below 400 — an error
 *   body is no answer. The wrapper pulls one chunk ahead, so the time is when the byte arrived,
 *   not when the consumer got round to reading it;
 * - end of body: the lease ends `success` (2xx/3xx), `client-error` (4xx) or `server-error`
 *   (5xx, or an SSE `error` event), with the token usage the body reported;
 * - `cancel()` (a consumer that stops reading, `for await` left early, openai's `break`): `cancelled`;
 * - the request's `AbortSignal` fires: `cancelled`, at once, even if nobody reads any more; the
 *   body errors with the signal's reason (also where Node's fetch would leave it hanging);
 * - a read error (connection reset mid-stream): `connect-error`, or `cancelled` when aborted;
 * - a response without a body: released before the response is returned;
 * - a body dropped without being read or cancelled: released as `cancelled` when the wrapper is
 *   garbage-collected (a last resort; read or cancel bodies you do not need).
 */
import type { Clock, Lease, LeaseOutcome, ReleaseInfo } from "../types.js";
import type { OpenAITarget, RoutedRequestInfo } from "./types.js";
import { scannerFor } from "../adapter/usage.js";

/** Response header naming the target that served a routed request. */
export const TARGET_HEADER = "x-prefix-router-target";

/** Releases a lease whose body was dropped unread; one registry per routed fetch. */
export type AbandonRegistry = FinalizationRegistry<Tracker>;

/** @internal What the registry holds: everything needed to end the lease, nothing that references the wrapper stream. */
export interface Tracker {
  settle(outcome: LeaseOutcome, error?: unknown): void;
  cancelSource(): void;
}

/** @internal */
export function newAbandonRegistry(): AbandonRegistry {
  return new FinalizationRegistry<Tracker>((tracker) => {
    tracker.settle("cancelled");
    tracker.cancelSource();
  });
}

/** @internal Per-request context for {@link trackResponse}. */
export interface TrackContext<T extends OpenAITarget> {
  lease: Lease<T>;
  signal: AbortSignal | null | undefined;
  clock: Clock;
  startMs: number;
  registry: AbandonRegistry;
  report: ((info: RoutedRequestInfo<T>) => void) | undefined;
}

/** @internal Outcome of a response that was read to the end. */
export function outcomeOfStatus(status: number): LeaseOutcome {
  if (status >= 500) return "server-error";
  if (status >= 400) return "client-error";
  return "success";
}

/**
 * Wraps `response` so that its lease ends with its body. The returned response has the same
 * status, headers (plus {@link TARGET_HEADER}) and `url`.
 * @internal
 */
export function trackResponse<T extends OpenAITarget>(response: Response, ctx: TrackContext<T>): Response {
  const { lease, signal, clock, startMs } = ctx;
  const status = response.status;
  const contentType = response.headers.get("content-type");
  const streaming = contentType !== null && contentType.toLowerCase().includes("text/event-stream");
  const usage = scannerFor(contentType);
  let ttftMs: number | null = null;
  let settled = false;
  const source = response.body;
  const reader = source?.getReader();

  const tracker: Tracker = {
    settle(outcome, error) {
      if (settled) return;
      settled = true;
      signal?.removeEventListener("abort", onAbort);
      ctx.registry.unregister(tracker);
      let info: ReleaseInfo | undefined;
      if (outcome === "success" || outcome === "client-error" || outcome === "server-error") {
        info = usage?.result();
        if (outcome === "success" && usage?.sawError === true) outcome = "server-error";
      }
      lease.release(outcome, info);
      if (ctx.report !== undefined) {
        const record: RoutedRequestInfo<T> = {
          target: lease.target,
          kind: lease.kind,
          rank: lease.rank,
          attempt: lease.attempt,
          status,
          outcome,
          streaming,
          ttftMs,
          durationMs: clock.now() - startMs,
          promptTokens: info?.promptTokens,
          cachedTokens: info?.cachedTokens,
          error,
        };
        try {
          ctx.report(record);
        } catch {
          // A metrics hook must never break a response.
        }
      }
    },
    cancelSource() {
      reader?.cancel().catch(() => {});
    },
  };
  // On abort the lease ends at once and the body errors with the signal's reason: a reader sees
  // the abort, never a clean end. The underlying fetch got the same signal and should error its
  // own body, but Node 20's undici (6.x) does not when the abort lands after the whole body has
  // arrived (nodejs/undici#4089): its reader waits forever, and so would ours. A WeakRef: a
  // long-lived signal must not keep a dropped body from being collected (and its lease released).
  let wrapper: WeakRef<ReadableStreamDefaultController<Uint8Array>> | undefined;
  let aborted = false;
  const onAbort = (): void => {
    aborted = true;
    tracker.settle("cancelled", signal?.reason);
    wrapper?.deref()?.error(signal?.reason);
    tracker.cancelSource();
  };

  if (reader === undefined) {
    tracker.settle(outcomeOfStatus(status));
    return withTargetHeader(response, null, lease.target.id);
  }

  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      wrapper = new WeakRef(controller);
    },
    async pull(controller) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (error) {
        tracker.settle(signal?.aborted === true ? "cancelled" : "connect-error", error);
        controller.error(error);
        return;
      }
      if (aborted) return; // the body already errored with the abort
      if (chunk.done) {
        tracker.settle(outcomeOfStatus(status));
        controller.close();
        return;
      }
      const value = chunk.value;
      if (ttftMs === null && value.byteLength > 0) {
        ttftMs = clock.now() - startMs;
        // An error body is no answer: the router's TTFT and prefix index only count answers.
        if (status < 400) lease.firstByte();
      }
      usage?.push(value);
      controller.enqueue(value);
    },
    cancel(reason) {
      tracker.settle("cancelled", reason);
      return reader.cancel(reason);
    },
  });
  if (signal != null) {
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  }
  if (!settled) ctx.registry.register(body, tracker, tracker);
  return withTargetHeader(response, body, lease.target.id);
}

function withTargetHeader(response: Response, body: ReadableStream<Uint8Array> | null, targetId: string): Response {
  const headers = new Headers(response.headers);
  headers.set(TARGET_HEADER, targetId);
  let out: Response;
  try {
    out = new Response(body, { status: response.status, statusText: response.statusText, headers });
  } catch (error) {
    // A status the Response constructor refuses (an opaque response's 0): hand back the original.
    if (body === null) return response;
    throw error;
  }
  if (response.url !== "") Object.defineProperty(out, "url", { value: response.url });
  if (response.redirected) Object.defineProperty(out, "redirected", { value: true });
  return out;
}
