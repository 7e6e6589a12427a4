/**
 * A binary min-heap ordered by (time, sequence): equal times pop in insertion order, so merging
 * event streams is deterministic. O(log n) push and pop. Internal to the benchmark.
 */
export class EventHeap<T> {
  readonly #times: number[] = [];
  readonly #seqs: number[] = [];
  readonly #items: T[] = [];
  #seq = 0;

  /** Number of queued items. */
  get size(): number {
    return this.#items.length;
  }

  /** Time of the earliest item, or `Infinity` when empty. */
  peekTime(): number {
    return this.#times[0] ?? Infinity;
  }

  /** Queues `item` at `time`. */
  push(time: number, item: T): void {
    const t = this.#times;
    const s = this.#seqs;
    const it = this.#items;
    let i = it.length;
    t.push(time);
    s.push(this.#seq++);
    it.push(item);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.#less(i, p)) break;
      this.#swap(i, p);
      i = p;
    }
  }

  /** Removes and returns the earliest item, or `undefined` when empty. */
  pop(): T | undefined {
    const it = this.#items;
    if (it.length === 0) return undefined;
    const top = it[0] as T;
    const last = it.length - 1;
    this.#swap(0, last);
    this.#times.pop();
    this.#seqs.pop();
    it.pop();
    let i = 0;
    const n = it.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < n && this.#less(l, m)) m = l;
      if (r < n && this.#less(r, m)) m = r;
      if (m === i) break;
      this.#swap(i, m);
      i = m;
    }
    return top;
  }

  #less(a: number, b: number): boolean {
    const ta = this.#times[a]!;
    const tb = this.#times[b]!;
    return ta < tb || (ta === tb && this.#seqs[a]! < this.#seqs[b]!);
  }

  #swap(a: number, b: number): void {
    const t = this.#times;
    const s = this.#seqs;
    const it = this.#items;
    [t[a], t[b]] = [t[b]!, t[a]!];
    [s[a], s[b]] = [s[b]!, s[a]!];
    [it[a], it[b]] = [it[b]!, it[a]!];
  }
}
