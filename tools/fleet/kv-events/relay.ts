/**
 * Batches an engine's KV events the way vLLM's scheduler does — everything one step produced
 * goes out as one `KVEventBatch` — and hands each batch to a {@link KvEventPublisher}: events are
 * gathered synchronously and flushed in a microtask, so the cache operations of one engine step
 * make one batch; sends are chained, so batches leave in seq order.
 */
import type { KvEventPublisher, WireEvent } from "./publisher.js";

export class KvEventRelay {
  private pending: WireEvent[] = [];
  private scheduled = false;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    readonly publisher: KvEventPublisher,
    private readonly wallClockMs: () => number,
  ) {}

  /** Queues one event for the current batch. */
  readonly push = (event: WireEvent): void => {
    this.pending.push(event);
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => this.flush());
  };

  /** Resolves once every batch queued so far was handed to the socket. */
  async drain(): Promise<void> {
    this.flush();
    await this.chain;
  }

  private flush(): void {
    this.scheduled = false;
    if (this.pending.length === 0) return;
    const events = this.pending;
    this.pending = [];
    const ts = this.wallClockMs() / 1000;
    this.chain = this.chain.then(() => this.publisher.publish(events, ts)).catch(() => {
      // A closed publisher drops what is left, as an engine shutting down does.
    });
  }
}
