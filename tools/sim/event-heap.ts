/**
 * A binary min-heap of (time, order) entries carrying a value: O(log n) push and pop, ties
 * broken by `order` so equal times pop in a deterministic order.
 */

/** A min-heap keyed by `(time, order)`. */
export class EventHeap<T> {
  private readonly times: number[] = [];
  private readonly orders: number[] = [];
  private readonly values: T[] = [];

  /** Number of entries. */
  get size(): number {
    return this.times.length;
  }

  /** Time of the smallest entry, or `Infinity` when empty. */
  peekTime(): number {
    return this.times.length > 0 ? this.times[0]! : Infinity;
  }

  /** Adds an entry. */
  push(time: number, order: number, value: T): void {
    const times = this.times;
    const orders = this.orders;
    const values = this.values;
    let i = times.length;
    times.push(time);
    orders.push(order);
    values.push(value);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (times[p]! < time || (times[p] === time && orders[p]! <= order)) break;
      times[i] = times[p]!;
      orders[i] = orders[p]!;
      values[i] = values[p]!;
      i = p;
    }
    times[i] = time;
    orders[i] = order;
    values[i] = value;
  }

  /** Removes and returns the smallest entry's value; `undefined` when empty. */
  pop(): T | undefined {
    const times = this.times;
    const orders = this.orders;
    const values = this.values;
    const n = times.length;
    if (n === 0) return undefined;
    const top = values[0];
    const lastT = times.pop()!;
    const lastO = orders.pop()!;
    const lastV = values.pop()!;
    if (n > 1) {
      let i = 0;
      const m = n - 1;
      for (;;) {
        let c = 2 * i + 1;
        if (c >= m) break;
        const r = c + 1;
        if (r < m && (times[r]! < times[c]! || (times[r] === times[c] && orders[r]! < orders[c]!))) c = r;
        if (times[c]! > lastT || (times[c] === lastT && orders[c]! >= lastO)) break;
        times[i] = times[c]!;
        orders[i] = orders[c]!;
        values[i] = values[c]!;
        i = c;
      }
      times[i] = lastT;
      orders[i] = lastO;
      values[i] = lastV;
    }
    return top;
  }
}
