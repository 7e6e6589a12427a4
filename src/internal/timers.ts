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
