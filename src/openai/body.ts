/**
 * The response side of a routed request: the body is wrapped in a stream whose end, cancel or
 * error releases the lease exactly once.
 *
 * - first chunk: `lease.firstByte()` (TTFT for streams) when the status is 2xx — an error or a
 *   redirect body is no answer. A Responses API stream's first byte
 *   is its first output event instead (its first events come before prefill; see responses.ts);
 * - end of body: the lease ends `success` (2xx), `client-error` (3xx, 4xx: the request was not
 *   served, and it says nothing about the target's health) or `server-error` (5xx, or an SSE
 *   `error` event), with the token usage the body reported;
 * - `cancel()` (a consumer that stops reading, `for await` left early, openai's `break`): `cancelled`,
 *   or, for a stream that already delivered its usage or `[DONE]`, as its end would (see
 *   leased-body.ts);
 * - the request's `AbortSignal` fires: `cancelled`, at once, even if nobody reads any more; the
 *   body errors with the signal's reason (also where Node's fetch would leave it hanging);
 * - a read error (connection reset mid-stream): `connect-error`, or `cancelled` when aborted;
 * - a response without a body: released before the response is returned;
 * - a body dropped without being read or cancelled: released as `cancelled` when the wrapper is
 *   garbage-collected (a last resort; read or cancel bodies you do not need).
 */
import { type LeaseRegistry, LeasedBody, readerSource } from "../adapter/leased-body.js";
import { scannerFor } from "../adapter/usage.js";
import { headerId } from "../internal/target-id.js";
import { encodeReason } from "../router/reason.js";
import { responseBodyScanner } from "./responses.js";
import type { Clock, Lease, LeaseOutcome, ReleaseInfo } from "../types.js";
import type { OpenAITarget, RoutedRequestInfo } from "./types.js";

/**
 * Response header naming the target that served a routed request; added only with the
 * `targetHeader` option. Its value is the id when the id is visible ASCII without `%`, else the
 * id percent-encoded (UTF-8): `decodeURIComponent(value)` is the id either way. Removed from
 * upstream responses whether or not the option is on.
 */
export const TARGET_HEADER = "x-prefix-router-target";

/**
 * Response header giving why the target was picked (`Lease.reason` in its compact form,
 * docs/observability.md#the-reason-header); added only with the `explainHeader` option, and only
 * to the response the caller sees — never to the request sent to the target. Removed from
 * upstream responses whether or not the option is on.
 */
export const REASON_HEADER = "x-prefix-router-reason";

/** @internal Per-request context for {@link trackResponse}. */
export interface TrackContext<T extends OpenAITarget> {
  lease: Lease<T>;
  signal: AbortSignal | null | undefined;
  clock: Clock;
  startMs: number;
  registry: LeaseRegistry;
  report: ((info: RoutedRequestInfo<T>) => void) | undefined;
  /** Add {@link TARGET_HEADER} to the response. */
  targetHeader: boolean;
  /** Add {@link REASON_HEADER} to the response. */
  reasonHeader: boolean;
  /**
   * Set for a `POST …/responses` call: `onId` (response affinity) receives the created response's
   * id; a non-streamed answer's chunk carrying it, or a stream's end, is held until the promise
   * `onId` returns settles (the store acknowledged the id's write, or gave up).
   */
  responses?: { onId: ((id: string) => Promise<void> | void) | undefined } | undefined;
}

/** @internal Outcome of a response that was read to the end. */
export function outcomeOfStatus(status: number): LeaseOutcome {
  if (status >= 500) return "server-error";
  if (status >= 300) return "client-error";
  return "success";
}

/** @internal What an attempt did, beyond what its lease says. */
export type AttemptFacts = Pick<RoutedRequestInfo, "status" | "outcome" | "streaming" | "ttftMs" | "durationMs" | "error"> & {
  info: ReleaseInfo | undefined;
};

/** @internal Hands one attempt's record to `onRequestEnd`, if any; a hook that throws is ignored. */
export function reportAttempt<T extends OpenAITarget>(
  report: ((info: RoutedRequestInfo<T>) => void) | undefined,
  lease: Lease<T>,
  facts: AttemptFacts,
): void {
  if (report === undefined) return;
  try {
    report({
      target: lease.target,
      kind: lease.kind,
      rank: lease.rank,
      predictedCachedTokens: lease.predictedCachedTokens,
      attempt: lease.attempt,
      status: facts.status,
      outcome: facts.outcome,
      streaming: facts.streaming,
      ttftMs: facts.ttftMs,
      durationMs: facts.durationMs,
      promptTokens: facts.info?.promptTokens,
      cachedTokens: facts.info?.cachedTokens,
      error: facts.error,
    });
  } catch {
    // A metrics hook must never break a request or a response.
  }
}

/**
 * Wraps `response` so that its lease ends with its body. The returned response has the same
 * status, headers (plus {@link TARGET_HEADER} when asked for) and `url`.
 * @internal
 */
export function trackResponse<T extends OpenAITarget>(response: Response, ctx: TrackContext<T>): Response {
  const { lease, signal, clock, startMs } = ctx;
  const status = response.status;
  const contentType = response.headers.get("content-type");
  const streaming = contentType !== null && contentType.toLowerCase().includes("text/event-stream");
  const reader = response.body?.getReader();
  let ttftMs: number | null = null;
  const markFirst = (): void => {
    if (ttftMs !== null) return;
    ttftMs = clock.now() - startMs;
    // An error or redirect body is no answer: the router's TTFT and prefix index only count answers.
    if (status < 300) lease.firstByte();
  };
  const json = contentType !== null && contentType.toLowerCase().includes("json");
  // A response's id must be in the shared store before the caller holds the whole answer: a
  // non-streamed answer's chunk carrying it waits for the store's acknowledgement, a stream's end
  // does (its events flow meanwhile). Both bounded by the store's timeoutMs.
  let gate: Promise<void> | undefined;
  let endGate: Promise<void> | undefined;
  const onId = ctx.responses?.onId;
  const idHook =
    onId === undefined
      ? undefined
      : (id: string): void => {
          const acked = onId(id);
          if (acked === undefined) return;
          if (streaming) endGate = acked;
          else gate = acked;
        };
  const created =
    ctx.responses !== undefined && status < 300 && (streaming || json)
      ? responseBodyScanner(streaming, { id: idHook, firstOutput: markFirst })
      : undefined;
  const usage = created?.scanner ?? scannerFor(contentType);
  // A WeakRef: a long-lived signal (through the abort hook) must not keep a dropped body from
  // being collected, and its lease released.
  let wrapper: WeakRef<ReadableStreamDefaultController<Uint8Array>> | undefined;
  let aborted = false;

  const leased = new LeasedBody<Uint8Array>(
    lease,
    reader === undefined ? EMPTY : readerSource(reader),
    {
      chunk(value) {
        if (value.byteLength > 0 && created?.waitsForOutput !== true) markFirst();
        usage?.push(value);
      },
      end() {
        const info = usage?.result();
        const outcome = outcomeOfStatus(status);
        return { outcome: outcome === "success" && usage?.sawError === true ? "server-error" : outcome, info };
      },
      failed: () => (signal?.aborted === true ? "cancelled" : "connect-error"),
      completed: () => usage?.completed === true,
      released(outcome, info, error) {
        reportAttempt(ctx.report, lease, { status, outcome, streaming, ttftMs, durationMs: clock.now() - startMs, info, error });
      },
      // The body errors with the signal's reason: a reader sees the abort, never a clean end. The
      // underlying fetch got the same signal and should error its own body, but Node 20's undici
      // (6.x) does not when the abort lands after the whole body has arrived:
      // its reader waits forever, and so would ours.
      aborted(reason) {
        aborted = true;
        wrapper?.deref()?.error(reason);
      },
    },
    ctx.registry,
  );

  if (reader === undefined) {
    leased.end();
    return rewrap(response, null, headersOf(ctx));
  }

  const pump: Pump = {
    leased,
    wrapper: undefined,
    reading: false,
    aborted: () => aborted,
    gate: (done) => {
      const g = done && endGate !== undefined ? endGate : gate;
      gate = undefined;
      if (done) endGate = undefined;
      return g;
    },
  };
  const body = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        wrapper = new WeakRef(controller);
        pump.wrapper = wrapper;
      },
      // Returns at once; see readAhead for what the pending read holds.
      pull() {
        readAhead(pump);
      },
      cancel(reason) {
        return leased.cancel(reason);
      },
    },
    // No read ahead: `pull` runs only while the consumer waits for a chunk (see readAhead).
    { highWaterMark: 0 },
  );
  leased.attach(body, signal);
  return rewrap(response, body, headersOf(ctx));
}

/** What a read ahead needs: the leased body, and the wrapper's controller held weakly. */
interface Pump {
  leased: LeasedBody<Uint8Array>;
  wrapper: WeakRef<ReadableStreamDefaultController<Uint8Array>> | undefined;
  reading: boolean;
  aborted(): boolean;
  /** What the chunk just read (`done`: the end) waits for before it is delivered (once), if anything. */
  gate(done: boolean): Promise<void> | undefined;
}

/**
 * Reads the next chunk into the wrapper. The wrapper's queue holds nothing (high-water mark 0),
 * so this runs only while the consumer waits for a chunk, and the pending read holds the
 * wrapper's controller strongly until the chunk is delivered: the consumer's own pending read is
 * referenced only through the wrapper, so holding it weakly would let the garbage collector take
 * a request that is being read (it would never finish). A wrapper dropped unread has no pending
 * read: nothing of ours holds it, and it is collected and its lease released.
 */
function readAhead(pump: Pump): void {
  if (pump.reading) return;
  const controller = pump.wrapper?.deref();
  if (controller === undefined) return;
  pump.reading = true;
  pump.leased.read().then(
    (chunk) => {
      const deliver = (): void => {
        pump.reading = false;
        if (pump.aborted()) return; // already errored with the abort
        try {
          if (chunk.done) controller.close();
          else controller.enqueue(chunk.value);
        } catch {
          // The consumer cancelled meanwhile: the lease has ended with the cancel.
        }
      };
      const gate = pump.gate(chunk.done === true);
      // Never rejects (bounded by the store's timeoutMs): see ResponseAffinity.rememberAndWait.
      if (gate === undefined) deliver();
      else void gate.then(deliver, deliver);
    },
    (error: unknown) => {
      pump.reading = false;
      controller.error(error);
    },
  );
}

/** The source of a response without a body: ended before anyone reads. */
const EMPTY = { read: async () => ({ done: true as const }), close: async () => {} };

/**
 * The headers the options add to a routed response: {@link TARGET_HEADER}, {@link REASON_HEADER},
 * in their header-safe forms. The request has been sent: nothing here may throw (an error would
 * make the client retry a request the replica already ran), so a value that cannot be built is
 * left out.
 */
function headersOf<T extends OpenAITarget>(ctx: TrackContext<T>): { target: string | undefined; reason: string | undefined } {
  let target: string | undefined;
  let reason: string | undefined;
  try {
    if (ctx.targetHeader) target = headerId(ctx.lease.target.id);
  } catch {
    // Left out (ids are checked at configuration; this is the last guard).
  }
  try {
    const why = ctx.reasonHeader ? ctx.lease.reason : undefined;
    if (why !== undefined) reason = encodeReason(why);
  } catch {
    // Left out, as above.
  }
  return { target, reason };
}

/**
 * `response` with `body`, and with the headers the options add. The router's own headers
 * ({@link TARGET_HEADER}, {@link REASON_HEADER}) are removed from what the upstream sent, whether
 * or not the options add them: a replica cannot speak in the router's name.
 */
function rewrap(response: Response, body: ReadableStream<Uint8Array> | null, added: { target: string | undefined; reason: string | undefined }): Response {
  const headers = new Headers(response.headers);
  headers.delete(TARGET_HEADER);
  headers.delete(REASON_HEADER);
  try {
    if (added.target !== undefined) headers.set(TARGET_HEADER, added.target);
    if (added.reason !== undefined) headers.set(REASON_HEADER, added.reason);
  } catch {
    // A value Headers refuses is left out (see headersOf).
  }
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
