/**
 * A response body that holds its lease: both adapters hand the caller a body (a web
 * `ReadableStream` for fetch, an event stream for SageMaker) whose lease is released exactly
 * once, whichever comes first:
 *
 * - the source ends: the adapter says how (`success`, an error status, the usage read);
 * - a read fails: the adapter judges the error;
 * - the consumer stops reading (`cancel()`, `return()`, `break` in `for await`): `cancelled`;
 * - the request's `AbortSignal` fires: `cancelled` at once, even if nobody reads any more;
 * - the body is dropped without being read to the end: `cancelled`, when it is garbage-collected
 *   (a last resort; read or cancel bodies you do not need).
 *
 * A body that has already delivered everything that matters (the adapter's `completed`: a stream
 * past its usage report or its `[DONE]`) ends as its end would in the last four cases too — a
 * client that stops reading once it has the usage (LangChain does) still records a success and
 * its cached tokens.
 *
 * The wrapper the consumer holds (the owner) delegates to a {@link LeasedBody}; the finalization
 * registry keys on the owner and holds the LeasedBody, so nothing a LeasedBody references may
 * reference the owner, or the owner is never collected.
 */
import type { Lease, LeaseOutcome, ReleaseInfo } from "../types.js";

/** One read of a {@link BodySource}: a chunk, or the end (a web stream's and an iterator's results both fit). */
export type SourceResult<C> = { done: true; value?: unknown } | { done?: false; value: C };

/** What a leased body reads from: the response's own body, read once. */
export interface BodySource<C> {
  read(): Promise<SourceResult<C>>;
  /** Stops the source early. */
  close(reason?: unknown): Promise<void>;
}

/** The adapter's part: what a chunk means and how the lease ends. */
export interface LeasedBodyHooks<C> {
  /** Sees each chunk before the consumer gets it (first byte, usage). */
  chunk(value: C): void;
  /** How the lease ends when the source has ended. */
  end(): { outcome: LeaseOutcome; info?: ReleaseInfo | undefined };
  /** The outcome of a read that failed with `error`. */
  failed(error: unknown): LeaseOutcome;
  /** True once the body delivered all that matters: a cancel, abort or failure then ends the lease as {@link LeasedBodyHooks.end} says. */
  completed?(): boolean;
  /** Runs once, right after the lease was released, with the error or reason that ended it. */
  released?(outcome: LeaseOutcome, info: ReleaseInfo | undefined, error: unknown): void;
  /** The signal fired (the lease is released already): the owner should fail its reads with `reason`. */
  aborted?(reason: unknown): void;
}

/** Releases the lease of a body dropped unread; one registry per routed fetch or client. */
export type LeaseRegistry = FinalizationRegistry<LeasedBody<unknown>>;

/** A registry whose finalizer ends an abandoned body's lease as `cancelled` and closes its source. */
export function newLeaseRegistry(): LeaseRegistry {
  return new FinalizationRegistry<LeasedBody<unknown>>((body) => body.abandon());
}

/** A body whose lease ends with it; see the file's header for when and how. */
export class LeasedBody<C> {
  private settled = false;
  private signal: AbortSignal | null | undefined;
  private readonly onAbort = (): void => this.abort();

  constructor(
    private readonly lease: Lease,
    private readonly source: BodySource<C>,
    private readonly hooks: LeasedBodyHooks<C>,
    private readonly registry: LeaseRegistry,
  ) {}

  /** True once the lease was released. */
  get released(): boolean {
    return this.settled;
  }

  /**
   * Ties the lease to `owner`, the wrapper the consumer holds: released when `owner` is
   * garbage-collected, or at once when `signal` aborts (also when it already has).
   */
  attach(owner: object, signal?: AbortSignal | null): void {
    if (signal != null) {
      this.signal = signal;
      if (signal.aborted) this.abort();
      else signal.addEventListener("abort", this.onAbort, { once: true });
    }
    if (!this.settled) this.registry.register(owner, this as LeasedBody<unknown>, this);
  }

  /**
   * The next chunk. Ends the lease when the source ends or fails (and rethrows the failure); once
   * the lease has ended, and for a read that was pending when it ended, reports the end.
   */
  async read(): Promise<{ done: true; value: undefined } | { done: false; value: C }> {
    if (this.settled) return { done: true, value: undefined };
    let result: SourceResult<C>;
    try {
      result = await this.source.read();
    } catch (error) {
      if (!this.settled) this.settleEarly(this.hooks.failed(error), error);
      throw error;
    }
    if (result.done === true) this.end();
    if (result.done === true || this.settled) return { done: true, value: undefined };
    this.hooks.chunk(result.value);
    return { done: false, value: result.value };
  }

  /** Ends the lease as the source's end does; for a body known to be empty without reading it. */
  end(): void {
    if (this.settled) return;
    const { outcome, info } = this.hooks.end();
    this.settle(outcome, info);
  }

  /** The consumer stopped reading: `cancelled`, then the source is closed. */
  async cancel(reason?: unknown): Promise<void> {
    if (this.settled) return;
    this.settleEarly("cancelled", reason);
    await this.source.close(reason);
  }

  /** @internal The finalizer's way in: the owner was collected unread. */
  abandon(): void {
    if (this.settled) return;
    this.settleEarly("cancelled");
    this.source.close().catch(() => {});
  }

  private abort(): void {
    if (this.settled) return;
    const reason = this.signal?.reason;
    this.settleEarly("cancelled", reason);
    this.hooks.aborted?.(reason);
    this.source.close().catch(() => {});
  }

  /** Ends the lease before the source ended: as the end would if the body completed, else with `outcome`. */
  private settleEarly(outcome: LeaseOutcome, error?: unknown): void {
    if (this.hooks.completed?.() === true) {
      const end = this.hooks.end();
      this.settle(end.outcome, end.info, error);
    } else {
      this.settle(outcome, undefined, error);
    }
  }

  private settle(outcome: LeaseOutcome, info?: ReleaseInfo, error?: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.signal?.removeEventListener("abort", this.onAbort);
    this.registry.unregister(this);
    this.lease.release(outcome, info);
    this.hooks.released?.(outcome, info, error);
  }
}

/** A web stream's reader as a {@link BodySource}. */
export function readerSource<C>(reader: ReadableStreamDefaultReader<C>): BodySource<C> {
  return {
    read: () => reader.read(),
    close: (reason) => reader.cancel(reason),
  };
}

/** An async iterable as a {@link BodySource}; its iterator is made on the first read, so a body never read is never opened. */
export function iterableSource<C>(iterable: AsyncIterable<C>): BodySource<C> {
  let iterator: AsyncIterator<C> | undefined;
  return {
    read: () => {
      iterator ??= iterable[Symbol.asyncIterator]();
      return iterator.next();
    },
    close: async () => {
      await iterator?.return?.();
    },
  };
}
