/** Timers a test fires by hand: nothing runs until `fire()`. */
export class ManualTimers {
  private next = 1;
  private readonly pending = new Map<number, () => void>();
  /** The delay of every timer set, in order. */
  readonly delays: number[] = [];

  setTimeout = (callback: () => void, ms?: number): number => {
    const handle = this.next++;
    this.pending.set(handle, callback);
    this.delays.push(ms ?? 0);
    return handle;
  };

  clearTimeout = (handle: unknown): void => {
    this.pending.delete(handle as number);
  };

  get size(): number {
    return this.pending.size;
  }

  /** Runs every timer set so far (not the ones they set). */
  fire(): void {
    const due = [...this.pending.values()];
    this.pending.clear();
    for (const f of due) f();
  }
}
