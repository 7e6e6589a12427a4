import { TEST_TIMERS, type Timers } from "../../src/internal/timers.js";

/** Timers a test fires by hand: nothing runs until `fire()`. */
export class ManualTimers {
  private next = 1;
  private readonly pending = new Map<number, { callback: () => void; ms: number }>();
  /** The delay of every timer set, in order. */
  readonly delays: number[] = [];

  setTimeout = (callback: () => void, ms?: number): number => {
    const handle = this.next++;
    this.pending.set(handle, { callback, ms: ms ?? 0 });
    this.delays.push(ms ?? 0);
    return handle;
  };

  clearTimeout = (handle: unknown): void => {
    this.pending.delete(handle as number);
  };

  get size(): number {
    return this.pending.size;
  }

  /** Pending timers set with delay `ms` (a loop's interval, a request's timeout). */
  count(ms: number): number {
    let n = 0;
    for (const t of this.pending.values()) if (t.ms === ms) n++;
    return n;
  }

  /** Runs every timer set so far (not the ones they set); with `ms`, only those set with that delay. */
  fire(ms?: number): void {
    const due = [...this.pending].filter(([, t]) => ms === undefined || t.ms === ms);
    for (const [handle] of due) this.pending.delete(handle);
    for (const [, t] of due) t.callback();
  }
}

/**
 * `options` (of `membership`, `healthCheck` or an engine or redis `loadView`) with `timers` under
 * the internal test key those features read ({@link TEST_TIMERS}): not an option users see.
 */
export function withTimers<const O extends object>(options: O, timers: Timers): O {
  return { ...options, [TEST_TIMERS]: timers };
}
