/**
 * The timers background loops use, injectable so tests drive them by hand. The default unrefs
 * every timer: a router's loops never keep a process alive.
 */

/**
 * A timer source. `setTimeout` returns a handle `clearTimeout` accepts.
 *
 * @example
 * // A manual source for tests: nothing fires until the test says so.
 * const due: (() => void)[] = [];
 * const timers: Timers = { setTimeout: (fn) => due.push(fn), clearTimeout: () => {} };
 */
export interface Timers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/**
 * @internal The key under which a test hands a background feature (`membership`, `healthCheck`,
 * `loadView: { source: "engine" | "redis" }`) its {@link Timers}:
 * `{ intervalMs: 1000, [TEST_TIMERS]: manual }`. A test seam, not an option: it is on no public
 * option type and no public entry exports it. A symbol of this module rather than a string key:
 * `checkKnownKeys` reads `Object.keys`, which skips symbols, so the unknown-key check needs no
 * exception, and a user cannot reach the key by spelling it (`Symbol.for` could be spelled).
 * On the feature's own options rather than in `RouterInternals`: each feature takes its own
 * timers, through every entry (`createRouter`, the adapters) and through its resolver alone.
 * Absent: {@link UNREF_TIMERS}.
 */
export const TEST_TIMERS: unique symbol = Symbol("prefix-router.timers");

/** Node's timers, unref'd. */
export const UNREF_TIMERS: Timers = Object.freeze({
  setTimeout(callback: () => void, ms: number): unknown {
    const handle = setTimeout(callback, ms);
    handle.unref?.();
    return handle;
  },
  clearTimeout(handle: unknown): void {
    clearTimeout(handle as ReturnType<typeof setTimeout>);
  },
});

/**
 * @internal A background loop: `step` runs `intervalMs()` after the previous step settled, until
 * {@link Repeater.stop}. A step never overlaps the next; its rejection is the step's own concern.
 */
export class Repeater {
  private timer: unknown;
  private stopped = false;

  constructor(
    private readonly timers: Timers,
    private readonly intervalMs: () => number,
    private readonly step: () => Promise<unknown> | void,
  ) {}

  /** Schedules the first step (idempotent while running; nothing after `stop`). */
  start(): void {
    if (this.stopped || this.timer !== undefined) return;
    this.timer = this.timers.setTimeout(() => {
      this.timer = undefined;
      const done = this.step();
      if (done === undefined) this.start();
      else void done.then(() => this.start());
    }, this.intervalMs());
  }

  /** Cancels the pending step; the loop never runs again. */
  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timer = undefined;
  }
}
