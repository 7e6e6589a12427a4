/**
 * The KV-event index's blocks and engine hashes (see `index.ts` for the whole):
 *
 * - **blocks**: one entry per distinct block key — the key's two uint32 halves, a bitset of the
 *   engines holding it (`⌈engines / 32⌉` words), the head of its list of engine-hash entries and
 *   a CLOCK reference bit; found through an open-addressing table of entry ids (linear probing,
 *   deletion by backward shift, load ≤ ½).
 * - **engine hashes**: one entry per (engine, block) the engines hold — the engine's hash (low 64
 *   bits), the engine, our block entry, the next entry of the same block — found through a second
 *   table keyed by (engine, engine hash). It resolves `parent_block_hash` and `BlockRemoved`.
 *
 * Per engine slot: the pairs it holds and its generation, bumped whenever it loses a block.
 * At most `capacity` (engine, block) pairs: past it the CLOCK hand evicts whole blocks.
 */
import type { IndexCounts } from "./index-stats.js";
import { EMPTY, MIN_POOL, deleteAt, grow, mix, pow2 } from "./open-addressing.js";

export class BlockTable {
  /** Per engine slot: pairs held. */
  readonly heldBy: number[] = [];
  /** Per engine slot: bumped whenever it loses a block (removal, eviction, clear). Unchanged, every block it held is still held. */
  readonly gens: number[] = [];
  /** Bitset words per block. */
  W = 1;

  // Blocks: pool and table.
  private bHi = new Uint32Array(0);
  private bLo = new Uint32Array(0);
  private bHead = new Int32Array(0);
  /** The engines holding each block: `bits[b · W + (e >>> 5)]` has bit `e & 31`. */
  bits = new Uint32Array(0);
  private bRef = new Uint8Array(0);
  private bUsed = 0; // ids handed out (high-water mark)
  private bFree = EMPTY;
  /** Distinct blocks held. */
  blocks = 0;
  private bTable = new Int32Array(0);
  private hand = 0;

  // Engine hashes: pool and table.
  private mHi = new Uint32Array(0);
  private mLo = new Uint32Array(0);
  private mBlock = new Int32Array(0);
  private mNext = new Int32Array(0);
  private mEngine = new Uint16Array(0);
  private mUsed = 0;
  private mFree = EMPTY;
  /** (engine, block) pairs held. */
  pairs = 0;
  private mTable = new Int32Array(0);

  constructor(
    private readonly cap: number,
    private readonly counts: IndexCounts,
  ) {}

  /** Makes room for engine slot `s` (the next one). */
  addEngine(s: number): void {
    this.heldBy.push(0);
    this.gens.push(0);
    if (s >= 32 * this.W) this.widen(this.W * 2);
  }

  /** Whether engine slot `e` holds block (hi, lo). */
  holds(e: number, hi: number, lo: number): boolean {
    const b = this.find(hi, lo);
    return b !== EMPTY && ((this.bits[b * this.W + (e >>> 5)] as number) & (1 << (e & 31))) !== 0;
  }

  /** Writes the block key engine slot `e`'s hash (eh, el) names into `out[0..2)`; false when the hash is unknown. */
  keyOf(e: number, eh: number, el: number, out: Uint32Array): boolean {
    const m = this.findMap(e, eh, el);
    if (m === EMPTY) return false;
    const b = this.mBlock[m] as number;
    out[0] = this.bHi[b] as number;
    out[1] = this.bLo[b] as number;
    return true;
  }

  /**
   * Engine slot `e` holds block (hi, lo) under its hash (eh, el). False when that hash already
   * named this block (its reference bit is set, nothing else changes).
   */
  store(e: number, hi: number, lo: number, eh: number, el: number): boolean {
    const existing = this.findMap(e, eh, el);
    if (existing !== EMPTY) {
      const b = this.mBlock[existing] as number;
      if (this.bHi[b] === hi && this.bLo[b] === lo) {
        this.bRef[b] = 1;
        return false;
      }
      this.removeMap(existing); // the engine reused a hash for other content: the new one stands
    }
    while (this.pairs >= this.cap) this.evictOne();
    let b = this.find(hi, lo);
    if (b === EMPTY) b = this.newBlock(hi, lo);
    this.bRef[b] = 1;
    const word = b * this.W + (e >>> 5);
    const bit = 1 << (e & 31);
    const already = ((this.bits[word] as number) & bit) !== 0;
    this.bits[word] = (this.bits[word] as number) | bit;
    const m = this.newMap(e, eh, el, b);
    this.mNext[m] = this.bHead[b] as number;
    this.bHead[b] = m;
    if (!already) this.heldBy[e] = (this.heldBy[e] as number) + 1;
    return true;
  }

  /** Engine slot `e` no longer holds what its hash (eh, el) names; false when the hash is unknown. */
  remove(e: number, eh: number, el: number): boolean {
    const m = this.findMap(e, eh, el);
    if (m === EMPTY) return false;
    this.removeMap(m);
    return true;
  }

  /** Forgets every pair of engine slot `e` (and bumps its generation). */
  clearEngine(e: number): void {
    this.gens[e] = ((this.gens[e] as number) + 1) | 0;
    for (let m = 0; m < this.mUsed; m++) {
      if (this.mBlock[m] !== EMPTY && this.mEngine[m] === e) this.removeMap(m);
    }
  }

  /** The entry of block (hi, lo), or EMPTY. */
  find(hi: number, lo: number): number {
    const t = this.bTable;
    if (t.length === 0) return EMPTY;
    const mask = t.length - 1;
    for (let i = mix(hi, lo, 0) & mask; ; i = (i + 1) & mask) {
      const b = t[i] as number;
      if (b === EMPTY) return EMPTY;
      if (this.bHi[b] === hi && this.bLo[b] === lo) return b;
    }
  }

  /** Heap bytes of the typed arrays. */
  get bytes(): number {
    return (
      this.bHi.byteLength + this.bLo.byteLength + this.bHead.byteLength + this.bits.byteLength + this.bRef.byteLength + this.bTable.byteLength +
      this.mHi.byteLength + this.mLo.byteLength + this.mBlock.byteLength + this.mNext.byteLength + this.mEngine.byteLength + this.mTable.byteLength
    );
  }

  /** Removes engine-hash entry m; clears its engine's bit when no other entry of that engine points to the block; frees an empty block. */
  private removeMap(m: number): void {
    const b = this.mBlock[m] as number;
    const e = this.mEngine[m] as number;
    // Unlink from the block's list.
    let prev = EMPTY;
    let still = false;
    for (let x = this.bHead[b] as number; x !== EMPTY; x = this.mNext[x] as number) {
      if (x === m) {
        if (prev === EMPTY) this.bHead[b] = this.mNext[m] as number;
        else this.mNext[prev] = this.mNext[m] as number;
        continue;
      }
      if (this.mEngine[x] === e) still = true;
      prev = x;
    }
    this.freeMap(m);
    if (!still) {
      const word = b * this.W + (e >>> 5);
      this.bits[word] = (this.bits[word] as number) & ~(1 << (e & 31));
      this.heldBy[e] = (this.heldBy[e] as number) - 1;
      this.gens[e] = ((this.gens[e] as number) + 1) | 0;
    }
    if (this.bHead[b] === EMPTY) this.freeBlock(b);
  }

  /** CLOCK: the first block at or after the hand whose reference bit is clear (clearing bits on the way) leaves with all its pairs. */
  private evictOne(): void {
    for (;;) {
      if (this.hand >= this.bUsed) this.hand = 0;
      const b = this.hand++;
      if (this.bHead[b] === EMPTY) continue; // free
      if (this.bRef[b] === 1) {
        this.bRef[b] = 0;
        continue;
      }
      // Removing its last pair frees the block (its head becomes EMPTY).
      while (this.bHead[b] !== EMPTY) this.removeMap(this.bHead[b] as number);
      this.counts.evicted++;
      return;
    }
  }

  private newBlock(hi: number, lo: number): number {
    let b: number;
    if (this.bFree !== EMPTY) {
      b = this.bFree;
      this.bFree = this.bFreeNext(b);
    } else {
      if (this.bUsed === this.bHi.length) this.growBlocks();
      b = this.bUsed++;
    }
    this.bHi[b] = hi;
    this.bLo[b] = lo;
    this.bHead[b] = EMPTY;
    this.bits.fill(0, b * this.W, (b + 1) * this.W);
    this.blocks++;
    const t = this.bTable;
    const mask = t.length - 1;
    let i = mix(hi, lo, 0) & mask;
    while (t[i] !== EMPTY) i = (i + 1) & mask;
    t[i] = b;
    return b;
  }

  // A free block keeps the next free id in its low key half (its head is EMPTY, its bits 0).
  private bFreeNext(b: number): number {
    return this.bLo[b] === 0xffffffff ? EMPTY : (this.bLo[b] as number) | 0;
  }

  private freeBlock(b: number): void {
    const t = this.bTable;
    const mask = t.length - 1;
    let i = mix(this.bHi[b] as number, this.bLo[b] as number, 0) & mask;
    while (t[i] !== b) i = (i + 1) & mask;
    deleteAt(t, i, (x) => mix(this.bHi[x] as number, this.bLo[x] as number, 0));
    this.blocks--;
    this.bRef[b] = 0;
    this.bHead[b] = EMPTY;
    this.bHi[b] = 0xffffffff;
    this.bLo[b] = this.bFree === EMPTY ? 0xffffffff : this.bFree;
    this.bFree = b;
  }

  private growBlocks(): void {
    const size = Math.max(MIN_POOL, Math.min(this.bHi.length * 2, this.cap));
    if (size <= this.bHi.length) throw new Error("KV-event index: block pool exhausted below its capacity");
    this.bHi = grow(this.bHi, size);
    this.bLo = grow(this.bLo, size);
    this.bHead = grow(this.bHead, size);
    this.bRef = grow(this.bRef, size);
    this.bits = grow(this.bits, size * this.W);
    this.bTable = new Int32Array(pow2(2 * size)).fill(EMPTY);
    const t = this.bTable;
    const mask = t.length - 1;
    for (let b = 0; b < this.bUsed; b++) {
      if (this.bHead[b] === EMPTY) continue; // free
      let i = mix(this.bHi[b] as number, this.bLo[b] as number, 0) & mask;
      while (t[i] !== EMPTY) i = (i + 1) & mask;
      t[i] = b;
    }
  }

  private widen(W: number): void {
    const bits = new Uint32Array(this.bHi.length * W);
    for (let b = 0; b < this.bUsed; b++) for (let w = 0; w < this.W; w++) bits[b * W + w] = this.bits[b * this.W + w] as number;
    this.bits = bits;
    this.W = W;
  }

  private findMap(e: number, hi: number, lo: number): number {
    const t = this.mTable;
    if (t.length === 0) return EMPTY;
    const mask = t.length - 1;
    for (let i = mix(hi, lo, e + 1) & mask; ; i = (i + 1) & mask) {
      const m = t[i] as number;
      if (m === EMPTY) return EMPTY;
      if (this.mHi[m] === hi && this.mLo[m] === lo && this.mEngine[m] === e) return m;
    }
  }

  private newMap(e: number, hi: number, lo: number, b: number): number {
    let m: number;
    if (this.mFree !== EMPTY) {
      m = this.mFree;
      this.mFree = this.mNext[m] as number;
    } else {
      if (this.mUsed === this.mHi.length) this.growMap();
      m = this.mUsed++;
    }
    this.mHi[m] = hi;
    this.mLo[m] = lo;
    this.mEngine[m] = e;
    this.mBlock[m] = b;
    this.pairs++;
    const t = this.mTable;
    const mask = t.length - 1;
    let i = mix(hi, lo, e + 1) & mask;
    while (t[i] !== EMPTY) i = (i + 1) & mask;
    t[i] = m;
    return m;
  }

  private freeMap(m: number): void {
    const t = this.mTable;
    const mask = t.length - 1;
    let i = mix(this.mHi[m] as number, this.mLo[m] as number, (this.mEngine[m] as number) + 1) & mask;
    while (t[i] !== m) i = (i + 1) & mask;
    deleteAt(t, i, (x) => mix(this.mHi[x] as number, this.mLo[x] as number, (this.mEngine[x] as number) + 1));
    this.mBlock[m] = EMPTY;
    this.mNext[m] = this.mFree;
    this.mFree = m;
    this.pairs--;
  }

  private growMap(): void {
    const size = Math.max(MIN_POOL, Math.min(this.mHi.length * 2, this.cap));
    if (size <= this.mHi.length) throw new Error("KV-event index: engine-hash pool exhausted below its capacity");
    this.mHi = grow(this.mHi, size);
    this.mLo = grow(this.mLo, size);
    this.mBlock = grow(this.mBlock, size);
    this.mNext = grow(this.mNext, size);
    this.mEngine = grow(this.mEngine, size);
    this.mTable = new Int32Array(pow2(2 * size)).fill(EMPTY);
    const t = this.mTable;
    const mask = t.length - 1;
    for (let m = 0; m < this.mUsed; m++) {
      if (this.mBlock[m] === EMPTY) continue;
      let i = mix(this.mHi[m] as number, this.mLo[m] as number, (this.mEngine[m] as number) + 1) & mask;
      while (t[i] !== EMPTY) i = (i + 1) & mask;
      t[i] = m;
    }
  }
}
