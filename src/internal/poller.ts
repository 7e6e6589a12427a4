/**
 * @internal Polls each target of a set on its own cadence: every `intervalMs` the poller starts a
 * poll of every entry whose previous poll has settled. A target that answers slowly or not at all
 * (until its own timeout) delays only its own next poll; the others keep theirs. `close()` aborts
 * the polls in flight and waits for them to settle, so no request, socket or timer outlives it.
 */
import { Repeater, type Timers } from "./timers.js";

export class Poller<E extends object> {
  private readonly loop: Repeater;
  private readonly inFlight = new Map<E, Promise<void>>();
  private readonly closing = new AbortController();

  /**
   * @param entries The current entries (read at every tick).
   * @param poll Polls one entry; `signal` aborts when the poller closes. Must not reject.
   * @param afterTick Runs after each tick has started its polls.
   */
  constructor(
    timers: Timers,
    intervalMs: number,
    private readonly entries: () => Iterable<E>,
    private readonly poll: (entry: E, signal: AbortSignal) => Promise<void>,
    private readonly afterTick: () => void = () => {},
  ) {
    this.loop = new Repeater(timers, () => intervalMs, () => {
      void this.pollAll();
      this.afterTick();
    });
  }

  /** Starts a poll of every entry that has none in flight; resolves once those settled. Never rejects. */
  pollAll(): Promise<void> {
    if (this.closing.signal.aborted) return Promise.resolve();
    const started: Promise<void>[] = [];
    for (const entry of this.entries()) {
      if (this.inFlight.has(entry)) continue;
      const done = this.poll(entry, this.closing.signal)
        .catch(() => {})
        .finally(() => this.inFlight.delete(entry));
      this.inFlight.set(entry, done);
      started.push(done);
    }
    return Promise.all(started).then(() => undefined);
  }

  /** Ticks every `intervalMs` from now on (the first tick one interval from now). */
  start(): void {
    this.loop.start();
  }

  /** Stops the ticks, aborts every poll in flight and resolves once they settled. Idempotent. */
  async close(): Promise<void> {
    this.loop.stop();
    this.closing.abort();
    await Promise.all(this.inFlight.values());
  }
}
