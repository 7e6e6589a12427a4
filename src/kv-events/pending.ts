/**
 * The KV-event index's pending decisions: blocks the strategy just sent to an engine, each held
 * until its expiry or until a `BlockStored` confirms it. A ring in insertion (= expiry) order plus
 * an open-addressing table of its live slots, keyed by (engine, block key). Fixed size: when the
 * ring is full the oldest entry goes; `capacity` × 34 bytes.
 */
import type { IndexCounts } from "./index-stats.js";
import { EMPTY, deleteAt, mix, pow2 } from "./open-addressing.js";

export class PendingDecisions {
  private readonly pHi: Uint32Array;
  private readonly pLo: Uint32Array;
  private readonly pEngine: Uint16Array;
  private readonly pExpiry: Float64Array;
  private readonly pTable: Int32Array;
  private pHead = 0; // oldest
  private pLen = 0;
  /** Entries alive (in the table). */
  live = 0;

  constructor(capacity: number, private readonly counts: IndexCounts) {
    this.pHi = new Uint32Array(capacity);
    this.pLo = new Uint32Array(capacity);
    this.pEngine = new Uint16Array(capacity);
    this.pExpiry = new Float64Array(capacity);
    this.pTable = new Int32Array(pow2(2 * capacity)).fill(EMPTY);
  }

  /** Ring slots (the capacity). */
  get capacity(): number {
    return this.pHi.length;
  }

  /** Heap bytes of the typed arrays. */
  get bytes(): number {
    return this.pHi.byteLength + this.pLo.byteLength + this.pEngine.byteLength + this.pExpiry.byteLength + this.pTable.byteLength;
  }

  /**
   * Records block (hi, lo) as sent to engine slot `e` until `expiry` (a refresh moves it to the
   * ring's end, so the ring stays in expiry order). When the ring is full the oldest entry goes.
   */
  add(e: number, hi: number, lo: number, expiry: number): void {
    const cap = this.pHi.length;
    const at = this.find(e, hi, lo);
    if (at !== EMPTY) {
      // Refresh: drop the old ring entry, append a new one (the ring stays in expiry order).
      this.drop(at);
    }
    if (this.pLen === cap) {
      const oldest = this.pHead;
      if ((this.pExpiry[oldest] as number) > 0) this.drop(oldest);
      this.pHead = (this.pHead + 1) % cap;
      this.pLen--;
    }
    const slot = (this.pHead + this.pLen) % cap;
    this.pLen++;
    this.pHi[slot] = hi;
    this.pLo[slot] = lo;
    this.pEngine[slot] = e;
    this.pExpiry[slot] = expiry;
    this.live++;
    this.insert(slot);
  }

  /** Drops the entry of block (hi, lo) on engine slot `e`, if any; true when there was one. */
  forget(e: number, hi: number, lo: number): boolean {
    const at = this.find(e, hi, lo);
    if (at === EMPTY) return false;
    this.drop(at);
    return true;
  }

  /** Drops expired entries from the ring's head. */
  expire(now: number): void {
    const cap = this.pHi.length;
    while (this.pLen > 0) {
      const at = this.pHead;
      const x = this.pExpiry[at] as number;
      if (x > now) break;
      if (x > 0) {
        this.drop(at);
        this.counts.pendingExpired++;
      }
      this.pHead = (this.pHead + 1) % cap;
      this.pLen--;
    }
  }

  /** Whether block (hi, lo) was sent to engine slot `e` and is unexpired at `now`. */
  has(e: number, hi: number, lo: number, now: number): boolean {
    const at = this.find(e, hi, lo);
    return at !== EMPTY && (this.pExpiry[at] as number) > now;
  }

  /** Drops every entry of engine slot `e`. */
  dropEngine(e: number): void {
    if (this.live === 0) return;
    const cap = this.pHi.length;
    for (let k = 0; k < this.pLen; k++) {
      const s = (this.pHead + k) % cap;
      if ((this.pExpiry[s] as number) > 0 && this.pEngine[s] === e) this.drop(s);
    }
  }

  private find(e: number, hi: number, lo: number): number {
    const t = this.pTable;
    const mask = t.length - 1;
    for (let i = mix(hi, lo, e) & mask; ; i = (i + 1) & mask) {
      const s = t[i] as number;
      if (s === EMPTY) return EMPTY;
      if (this.pHi[s] === hi && this.pLo[s] === lo && this.pEngine[s] === e) return s;
    }
  }

  private insert(slot: number): void {
    const t = this.pTable;
    const mask = t.length - 1;
    let i = mix(this.pHi[slot] as number, this.pLo[slot] as number, this.pEngine[slot] as number) & mask;
    while (t[i] !== EMPTY) i = (i + 1) & mask;
    t[i] = slot;
  }

  /** Unhooks ring slot `slot` from the table; the ring entry stays as a dead one (expiry 0). */
  private drop(slot: number): void {
    const t = this.pTable;
    const mask = t.length - 1;
    let i = mix(this.pHi[slot] as number, this.pLo[slot] as number, this.pEngine[slot] as number) & mask;
    while (t[i] !== slot) i = (i + 1) & mask;
    this.pExpiry[slot] = 0;
    this.live--;
    deleteAt(t, i, (s) => mix(this.pHi[s] as number, this.pLo[s] as number, this.pEngine[s] as number));
  }
}
