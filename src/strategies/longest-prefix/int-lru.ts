/**
 * A least-recently-used map from int32 keys to int32 values, in typed arrays: the block index of
 * `longest-prefix` holds tens of thousands of keys per target and updates one per prompt block, so
 * it cannot afford a `Map` entry per key or a method call with options per update.
 *
 * Semantics are lru-cache's for `max = capacity` (what the index used before): `set` inserts or
 * updates and makes the key the most recent; inserting into a full map evicts the least recent;
 * `has` and `peek` change nothing; `delete` removes. So the index holds exactly the same keys as
 * it did with lru-cache, after any sequence of calls.
 *
 * Layout: slots (key, value, prev, next: 16 bytes each) allocated at construction, and an
 * open-addressing table of slot numbers (linear probing, Fibonacci hashing, backward-shift
 * deletion, no tombstones) kept at most half full, grown by doubling as keys arrive.
 * Cost: O(1) expected per operation, no allocation except when the table doubles.
 */

const EMPTY = 0;
const MIN_TABLE = 64;

export class IntLru {
  private readonly keys: Int32Array;
  private readonly values: Int32Array;
  private readonly prev: Int32Array;
  private readonly next: Int32Array;
  /** Slot number + 1 per table position; 0 is empty. */
  private table: Int32Array;
  private shift: number;
  /** Least recent slot, −1 when empty. */
  private head = -1;
  /** Most recent slot, −1 when empty. */
  private tail = -1;
  /** Free slots, chained through `next`; −1 when none. */
  private free = -1;
  /** Slots handed out at least once. */
  private used = 0;
  /** Keys held. */
  size = 0;

  constructor(readonly capacity: number) {
    this.keys = new Int32Array(capacity);
    this.values = new Int32Array(capacity);
    this.prev = new Int32Array(capacity);
    this.next = new Int32Array(capacity);
    this.table = new Int32Array(MIN_TABLE);
    this.shift = 32 - Math.log2(MIN_TABLE);
  }

  /** Heap bytes of the typed arrays. */
  get bytes(): number {
    // A slot is four int32 (key, value, prev, next); the table one int32 per position.
    return this.capacity * 16 + this.table.length * 4;
  }

  has(key: number): boolean {
    return this.position(key) !== -1;
  }

  /** The value of `key`, or `undefined`; does not make it more recent. */
  peek(key: number): number | undefined {
    const p = this.position(key);
    return p === -1 ? undefined : this.values[(this.table[p] as number) - 1];
  }

  /** Inserts or updates `key` and makes it the most recent, evicting the least recent when full. */
  set(key: number, value: number): void {
    const p = this.position(key);
    let slot: number;
    if (p !== -1) {
      slot = (this.table[p] as number) - 1;
      this.values[slot] = value;
      if (slot === this.tail) return;
      this.unlink(slot);
    } else {
      if (this.size === this.capacity) {
        slot = this.head;
        this.removeAt(this.position(this.keys[slot] as number));
        this.unlink(slot);
        this.size--;
      } else if (this.free !== -1) {
        slot = this.free;
        this.free = this.next[slot] as number;
      } else {
        slot = this.used++;
      }
      if (2 * (this.size + 1) > this.table.length) this.grow();
      this.keys[slot] = key;
      this.values[slot] = value;
      this.insert(key, slot);
      this.size++;
    }
    // Link at the tail (most recent).
    this.prev[slot] = this.tail;
    this.next[slot] = -1;
    if (this.tail === -1) this.head = slot;
    else this.next[this.tail] = slot;
    this.tail = slot;
  }

  /** Removes `key`; false when absent. */
  delete(key: number): boolean {
    const p = this.position(key);
    if (p === -1) return false;
    const slot = (this.table[p] as number) - 1;
    this.removeAt(p);
    this.unlink(slot);
    this.next[slot] = this.free;
    this.free = slot;
    this.size--;
    return true;
  }

  /** Table position of `key`, or −1. */
  private position(key: number): number {
    const table = this.table;
    const mask = table.length - 1;
    for (let p = Math.imul(key, 0x9e3779b1) >>> this.shift; ; p = (p + 1) & mask) {
      const s = table[p] as number;
      if (s === EMPTY) return -1;
      if (this.keys[s - 1] === key) return p;
    }
  }

  private insert(key: number, slot: number): void {
    const table = this.table;
    const mask = table.length - 1;
    let p = Math.imul(key, 0x9e3779b1) >>> this.shift;
    while (table[p] !== EMPTY) p = (p + 1) & mask;
    table[p] = slot + 1;
  }

  /** Empties position `p`, shifting back the entries of its probe run that would become unreachable. */
  private removeAt(p: number): void {
    const table = this.table;
    const mask = table.length - 1;
    let hole = p;
    for (let q = (p + 1) & mask; ; q = (q + 1) & mask) {
      const s = table[q] as number;
      if (s === EMPTY) break;
      const home = Math.imul(this.keys[s - 1] as number, 0x9e3779b1) >>> this.shift;
      // The entry at q may fill the hole unless its home lies cyclically in (hole, q].
      const stays = hole <= q ? home > hole && home <= q : home > hole || home <= q;
      if (!stays) {
        table[hole] = s;
        hole = q;
      }
    }
    table[hole] = EMPTY;
  }

  private unlink(slot: number): void {
    const prev = this.prev[slot] as number;
    const next = this.next[slot] as number;
    if (prev === -1) this.head = next;
    else this.next[prev] = next;
    if (next === -1) this.tail = prev;
    else this.prev[next] = prev;
  }

  private grow(): void {
    const old = this.table;
    this.table = new Int32Array(old.length * 2);
    this.shift--;
    for (let p = 0; p < old.length; p++) {
      const s = old[p] as number;
      if (s !== EMPTY) this.insert(this.keys[s - 1] as number, s - 1);
    }
  }
}
