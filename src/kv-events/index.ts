/**
 * The KV-event index: which blocks each engine holds, built from the engines' own events
 * (`BlockStored`, `BlockRemoved`, `AllBlocksCleared`) and keyed by our chained hash of the
 * blocks' tokens (`block-hash.ts`), never by the engine's hash.
 *
 * Structures (typed arrays only, no object per block):
 *
 * - **blocks**: one entry per distinct block key — the key's two uint32 halves, a bitset of the
 *   engines holding it (`⌈engines / 32⌉` words), the head of its list of engine-hash entries and
 *   a CLOCK reference bit; found through an open-addressing table of entry ids (linear probing,
 *   deletion by backward shift, load ≤ ½).
 * - **engine hashes**: one entry per (engine, block) the engines hold — the engine's hash (low 64
 *   bits), the engine, our block entry, the next entry of the same block — found through a second
 *   table keyed by (engine, engine hash). It resolves `parent_block_hash` and `BlockRemoved`.
 * - **pending**: the strategy's own decisions (blocks just sent to an engine), each until its
 *   expiry or until a `BlockStored` confirms it: a ring in insertion (= expiry) order plus a table.
 *
 * Bounds: at most `capacityBlocks` (engine, block) pairs. Past it, the CLOCK hand (Corbató's
 * second-chance approximation of LRU) evicts whole blocks whose reference bit is clear; a store
 * sets the bit. Engines send `BlockRemoved` for what they evict, so the bound is only reached
 * when removals were lost; evictions are counted. Memory: pools grow by doubling up to the
 * bound; a held block costs 17 + 4·(words − 1) bytes of block entry + 8 of table, an (engine,
 * block) pair 18 + 8 — ≤ 51 bytes per pair with up to 32 engines (measured:
 * test/kv-events/index.test.ts, microbench/precise-index.ts).
 *
 * Each engine has a generation, bumped whenever it loses a block: a run seen at an unchanged
 * generation still holds, so a caller may pass it back (`held`) and only blocks past it are probed.
 *
 * Costs: a stored block O(1) expected (two XXH32 lanes over its tokens, three probes); a removal
 * O(1) + the block's holders; a query O(n) probes for n request blocks (one probe per block gives
 * every engine's bit) + pending probes only where a bit is missing; `clear(engine)` O(pairs held)
 * — engine restarts and unfillable gaps only.
 */
import type { BlockRemoved, BlockStored, KvEventBatch, KvEventSink } from "./events.js";
import { type BlockExtraKeys, BlockHasher, type TokenBlocks } from "./block-hash.js";

export { BlockHasher, type BlockExtraKeys, type TokenBlocks } from "./block-hash.js";

/** Options of {@link KvBlockIndex}. */
export interface KvBlockIndexOptions {
  /** Tokens per block: must equal the engines' (`--block-size`; vLLM's default 16). */
  readonly blockSize: number;
  /** The most (engine, block) pairs held; past it whole blocks are evicted (CLOCK). */
  readonly capacityBlocks: number;
  /** The served base model's name, the first extra key of every chain the events describe. */
  readonly model: string | undefined;
  /** How long the strategy's own decisions count as held before events confirm them, ms. */
  readonly pendingTtlMs: number;
  /** The most pending (engine, block) entries; the oldest go first. */
  readonly pendingCapacity: number;
}


/** Index statistics (`router.stats().kvIndex`). */
export interface KvIndexStats {
  /** Distinct blocks held by at least one engine. */
  blocks: number;
  /** (engine, block) pairs held: the sum over engines of the blocks each holds. */
  held: number;
  capacityBlocks: number;
  /** Heap bytes of the index's typed arrays. */
  bytes: number;
  /** `bytes / held` (0 when empty). */
  bytesPerBlock: number;
  /** Events applied, by type, and batches. */
  batches: number;
  stored: number;
  removed: number;
  /** `AllBlocksCleared` events and `clear(engine)` calls. */
  cleared: number;
  /** Stored blocks whose parent the index did not know (a late join, a lost event): not placed. */
  unknownParents: number;
  /** Removals of blocks the index did not know. */
  unknownRemovals: number;
  /** Events skipped: a block size other than the index's, or a medium other than the GPU. */
  skipped: number;
  /** Blocks evicted by the capacity bound. */
  evicted: number;
  /** Pending entries (own decisions) alive now, confirmed by an event, expired or dropped unconfirmed. */
  pending: number;
  pendingConfirmed: number;
  pendingExpired: number;
  /** Per engine: pairs held. */
  engines: { id: string; blocks: number }[];
}

const EMPTY = -1;
const MIN_POOL = 1024;

/** Mixes three uint32 into a table position (a murmur3 finaliser over their sum of products). */
function mix(a: number, b: number, c: number): number {
  let h = (Math.imul(a, 0x9e3779b1) ^ Math.imul(b, 0x85ebca77) ^ Math.imul(c, 0xc2b2ae3d)) | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x846ca68b);
  return (h ^ (h >>> 16)) >>> 0;
}

/** The engine-hash key's halves from an engine block hash (a bigint, its low 64 bits). */
function halves(h: bigint): [number, number] {
  return [Number((h >> 32n) & 0xffffffffn), Number(h & 0xffffffffn)];
}

/**
 * What each engine holds, from its KV events: a {@link KvEventSink} for one or more engine feeds,
 * queried by the `precise-prefix` strategy. Engines are the router's target ids.
 *
 * @example
 * const index = new KvBlockIndex({ blockSize: 16, capacityBlocks: 1 << 20, model: "llama", pendingTtlMs: 10_000, pendingCapacity: 65_536 });
 * index.apply("a", batch);                         // from the engine's feed
 * const chain = index.hashTokens(tokens, { model: "llama", lora: undefined, cacheSalt: undefined });
 * const run = index.heldRun(chain, index.engine("a"), clock.now());
 */
export class KvBlockIndex implements KvEventSink {
  readonly hasher: BlockHasher;
  private readonly cap: number;

  // Engines.
  private readonly slotById = new Map<string, number>();
  private readonly ids: string[] = [];
  private heldBy: number[] = [];
  /** Per engine: bumped whenever it loses a block (removal, eviction, clear). Unchanged, every block it held is still held. */
  private gens: number[] = [];
  /** Bitset words per block. */
  private W = 1;

  // Blocks: pool and table.
  private bHi = new Uint32Array(0);
  private bLo = new Uint32Array(0);
  private bHead = new Int32Array(0);
  private bBits = new Uint32Array(0);
  private bRef = new Uint8Array(0);
  private bUsed = 0; // ids handed out (high-water mark)
  private bFree = EMPTY;
  private bCount = 0;
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
  private mCount = 0;
  private mTable = new Int32Array(0);

  // Pending: a ring in insertion order and a table of live ring slots.
  private readonly pHi: Uint32Array;
  private readonly pLo: Uint32Array;
  private readonly pEngine: Uint16Array;
  private readonly pExpiry: Float64Array;
  private readonly pTable: Int32Array;
  private pHead = 0; // oldest
  private pLen = 0;
  private pLive = 0;

  private readonly counts = { batches: 0, stored: 0, removed: 0, cleared: 0, unknownParents: 0, unknownRemovals: 0, skipped: 0, evicted: 0, pendingConfirmed: 0, pendingExpired: 0 };
  private readonly scratch = { hashes: new Uint32Array(64) };
  private active = new Int32Array(16);

  constructor(readonly options: KvBlockIndexOptions) {
    this.hasher = new BlockHasher(options.blockSize);
    this.cap = options.capacityBlocks;
    const p = options.pendingCapacity;
    this.pHi = new Uint32Array(p);
    this.pLo = new Uint32Array(p);
    this.pEngine = new Uint16Array(p);
    this.pExpiry = new Float64Array(p);
    this.pTable = new Int32Array(pow2(2 * p)).fill(EMPTY);
  }

  // ───────────────────────── engines ─────────────────────────

  /** The engine's slot (created on first sight; at most 65,535 engines). */
  engine(id: string): number {
    let s = this.slotById.get(id);
    if (s === undefined) {
      s = this.ids.length;
      if (s >= 0xffff) throw new RangeError(`Expected at most 65535 engines in one KV-event index, got engine number ${s + 1} (${JSON.stringify(id)})`);
      this.slotById.set(id, s);
      this.ids.push(id);
      this.heldBy.push(0);
      this.gens.push(0);
      if (s >= 32 * this.W) this.widen(this.W * 2);
    }
    return s;
  }

  /** Engine slot `e`'s generation: it changes whenever the engine loses a block, so a run seen at an unchanged generation still holds. */
  generation(e: number): number {
    return this.gens[e] ?? 0;
  }

  /** Pairs engine `id` holds. */
  heldByEngine(id: string): number {
    const s = this.slotById.get(id);
    return s === undefined ? 0 : (this.heldBy[s] as number);
  }

  // ───────────────────────── the sink ─────────────────────────

  /** Applies one batch of engine `engine`'s events, in order. */
  apply(engine: string, batch: KvEventBatch): void {
    const e = this.engine(engine);
    this.counts.batches++;
    for (const event of batch.events) {
      if (event.type === "BlockStored") this.stored(e, event);
      else if (event.type === "BlockRemoved") this.removedEvent(e, event);
      else if (event.type === "AllBlocksCleared") this.clearSlot(e);
    }
  }

  /** Forgets everything engine `engine` holds (and the decisions pending on it). */
  clear(engine: string): void {
    this.clearSlot(this.engine(engine));
  }

  private stored(e: number, event: BlockStored): void {
    const B = this.options.blockSize;
    const k = event.blockHashes.length;
    if (event.blockSize !== B || (event.medium !== undefined && event.medium !== "GPU" && event.medium !== "gpu")) {
      this.counts.skipped++;
      return;
    }
    let parentHi: number;
    let parentLo: number;
    if (event.parentBlockHash === undefined) {
      [parentHi, parentLo] = this.hasher.root({ model: this.options.model, lora: event.loraName, cacheSalt: event.cacheSalt });
    } else {
      const [hh, hl] = halves(event.parentBlockHash);
      const m = this.findMap(e, hh, hl);
      if (m === EMPTY) {
        this.counts.unknownParents++;
        return;
      }
      const b = this.mBlock[m] as number;
      parentHi = this.bHi[b] as number;
      parentLo = this.bLo[b] as number;
    }
    const n = Math.min(k, Math.floor(event.tokenIds.length / B));
    if (this.scratch.hashes.length < 2 * n) this.scratch.hashes = new Uint32Array(pow2(2 * n));
    const hashes = this.scratch.hashes;
    this.hasher.chain(parentHi, parentLo, event.tokenIds, 0, n * B, hashes, 0);
    for (let j = 0; j < n; j++) {
      const [eh, el] = halves(event.blockHashes[j] as bigint);
      this.store(e, hashes[2 * j] as number, hashes[2 * j + 1] as number, eh, el);
    }
    this.counts.stored += n;
  }

  private removedEvent(e: number, event: BlockRemoved): void {
    if (event.medium !== undefined && event.medium !== "GPU" && event.medium !== "gpu") {
      this.counts.skipped++;
      return;
    }
    for (const h of event.blockHashes) {
      const [eh, el] = halves(h);
      const m = this.findMap(e, eh, el);
      if (m === EMPTY) {
        this.counts.unknownRemovals++;
        continue;
      }
      this.removeMap(m);
      this.counts.removed++;
    }
  }

  // ───────────────────────── queries ─────────────────────────

  /** The chain of `tokens[0..length)` (full blocks only) under these extra keys. */
  hashTokens(tokens: ArrayLike<number>, keys: BlockExtraKeys, length = tokens.length): TokenBlocks {
    const n = Math.floor(length / this.options.blockSize);
    const hashes = new Uint32Array(2 * n);
    const [hi, lo] = this.hasher.root(keys);
    this.hasher.chain(hi, lo, tokens, 0, n * this.options.blockSize, hashes, 0);
    return { hashes, n };
  }

  /**
   * Leading blocks of `chain` each engine holds or was just sent (pending, unexpired at `now`):
   * `out[k]` for engine slot `engines[k]` (−1: an engine the index never saw, 0). One table probe
   * per block serves every engine; pending entries are probed only where a bit is missing.
   */
  runs(chain: TokenBlocks, engines: ArrayLike<number>, now: number, out: Int32Array, held?: Int32Array, eventRuns?: Int32Array): void {
    const E = engines.length;
    // The engines still running, compacted as they stop: once only the holders are left, a block costs one probe and their bits.
    if (this.active.length < E) this.active = new Int32Array(2 * E);
    const active = this.active;
    let running = 0;
    for (let k = 0; k < E; k++) {
      out[k] = chain.n;
      if (eventRuns !== undefined) eventRuns[k] = chain.n;
      if ((engines[k] as number) >= 0) active[running++] = k;
      else {
        out[k] = 0;
        if (eventRuns !== undefined) eventRuns[k] = 0;
      }
    }
    const W = this.W;
    const pendingAlive = this.pLive > 0;
    for (let i = 0; i < chain.n && running > 0; i++) {
      if (held !== undefined) {
        // Blocks every running engine is known to hold (`held[k]`: a run seen at an unchanged generation) need no probe.
        let skip = chain.n;
        for (let a = 0; a < running; a++) skip = Math.min(skip, held[active[a] as number] as number);
        if (skip > i) i = Math.min(skip, chain.n) - 1;
        if (skip > i) continue;
      }
      const hi = chain.hashes[2 * i] as number;
      const lo = chain.hashes[2 * i + 1] as number;
      const b = this.findBlock(hi, lo);
      for (let a = 0; a < running; ) {
        const k = active[a] as number;
        if (held !== undefined && (held[k] as number) > i) {
          a++;
          continue;
        }
        const e = engines[k] as number;
        const bit = b !== EMPTY && ((this.bBits[b * W + (e >>> 5)] as number) & (1 << (e & 31))) !== 0;
        if (!bit && eventRuns !== undefined && (eventRuns[k] as number) > i) eventRuns[k] = i;
        if (bit || (pendingAlive && this.pendingAt(e, hi, lo, now))) {
          a++;
          continue;
        }
        out[k] = i;
        active[a] = active[--running] as number;
      }
    }
    if (eventRuns !== undefined) for (let k = 0; k < E; k++) eventRuns[k] = Math.min(eventRuns[k] as number, out[k] as number);
  }

  /** Leading blocks of `chain` engine slot `e` holds (or was just sent, when `now` is given). */
  heldRun(chain: TokenBlocks, e: number, now = Number.NaN): number {
    const out = new Int32Array(1);
    if (Number.isNaN(now)) {
      const live = this.pLive;
      this.pLive = 0;
      this.runs(chain, [e], 0, out);
      this.pLive = live;
    } else this.runs(chain, [e], now, out);
    return out[0] as number;
  }

  // ───────────────────────── pending ─────────────────────────

  /**
   * Records that blocks `chain[from..to)` were just sent to engine slot `e`: they count as held
   * there until `now + pendingTtlMs`, or until the engine's `BlockStored` confirms them. When the
   * ring is full the oldest entry goes.
   */
  addPending(e: number, chain: TokenBlocks, from: number, to: number, now: number): void {
    const cap = this.pHi.length;
    if (cap === 0) return;
    this.expire(now);
    const expiry = now + this.options.pendingTtlMs;
    for (let i = from; i < to; i++) {
      const hi = chain.hashes[2 * i] as number;
      const lo = chain.hashes[2 * i + 1] as number;
      const b = this.findBlock(hi, lo);
      if (b !== EMPTY && ((this.bBits[b * this.W + (e >>> 5)] as number) & (1 << (e & 31))) !== 0) continue;
      const at = this.findPending(e, hi, lo);
      if (at !== EMPTY) {
        // Refresh: drop the old ring entry, append a new one (the ring stays in expiry order).
        this.dropPending(at);
      }
      if (this.pLen === cap) {
        const oldest = this.pHead;
        if ((this.pExpiry[oldest] as number) > 0) this.dropPending(oldest);
        this.pHead = (this.pHead + 1) % cap;
        this.pLen--;
      }
      const slot = (this.pHead + this.pLen) % cap;
      this.pLen++;
      this.pHi[slot] = hi;
      this.pLo[slot] = lo;
      this.pEngine[slot] = e;
      this.pExpiry[slot] = expiry;
      this.pLive++;
      this.insertPending(slot);
    }
  }

  /** Drops the pending entries of `chain[from..to)` on engine slot `e` (the request failed before the engine computed anything). */
  forgetPending(e: number, chain: TokenBlocks, from: number, to: number): void {
    for (let i = from; i < to; i++) {
      const at = this.findPending(e, chain.hashes[2 * i] as number, chain.hashes[2 * i + 1] as number);
      if (at !== EMPTY) this.dropPending(at);
    }
  }

  /** Drops expired pending entries from the ring's head. */
  expire(now: number): void {
    const cap = this.pHi.length;
    while (this.pLen > 0) {
      const at = this.pHead;
      const x = this.pExpiry[at] as number;
      if (x > now) break;
      if (x > 0) {
        this.dropPending(at);
        this.counts.pendingExpired++;
      }
      this.pHead = (this.pHead + 1) % cap;
      this.pLen--;
    }
  }

  private pendingAt(e: number, hi: number, lo: number, now: number): boolean {
    const at = this.findPending(e, hi, lo);
    return at !== EMPTY && (this.pExpiry[at] as number) > now;
  }

  private findPending(e: number, hi: number, lo: number): number {
    const t = this.pTable;
    const mask = t.length - 1;
    for (let i = mix(hi, lo, e) & mask; ; i = (i + 1) & mask) {
      const s = t[i] as number;
      if (s === EMPTY) return EMPTY;
      if (this.pHi[s] === hi && this.pLo[s] === lo && this.pEngine[s] === e) return s;
    }
  }

  private insertPending(slot: number): void {
    const t = this.pTable;
    const mask = t.length - 1;
    let i = mix(this.pHi[slot] as number, this.pLo[slot] as number, this.pEngine[slot] as number) & mask;
    while (t[i] !== EMPTY) i = (i + 1) & mask;
    t[i] = slot;
  }

  /** Unhooks ring slot `slot` from the table; the ring entry stays as a dead one (expiry 0). */
  private dropPending(slot: number): void {
    const t = this.pTable;
    const mask = t.length - 1;
    let i = mix(this.pHi[slot] as number, this.pLo[slot] as number, this.pEngine[slot] as number) & mask;
    while (t[i] !== slot) i = (i + 1) & mask;
    this.pExpiry[slot] = 0;
    this.pLive--;
    deleteAt(t, i, (s) => mix(this.pHi[s] as number, this.pLo[s] as number, this.pEngine[s] as number));
  }

  // ───────────────────────── blocks ─────────────────────────

  private store(e: number, hi: number, lo: number, eh: number, el: number): void {
    const existing = this.findMap(e, eh, el);
    if (existing !== EMPTY) {
      const b = this.mBlock[existing] as number;
      if (this.bHi[b] === hi && this.bLo[b] === lo) {
        this.bRef[b] = 1;
        return;
      }
      this.removeMap(existing); // the engine reused a hash for other content: the new one stands
    }
    if (this.pLive > 0) {
      const p = this.findPending(e, hi, lo);
      if (p !== EMPTY) {
        this.dropPending(p);
        this.counts.pendingConfirmed++;
      }
    }
    while (this.mCount >= this.cap) this.evictOne();
    let b = this.findBlock(hi, lo);
    if (b === EMPTY) b = this.newBlock(hi, lo);
    this.bRef[b] = 1;
    const word = b * this.W + (e >>> 5);
    const bit = 1 << (e & 31);
    const already = ((this.bBits[word] as number) & bit) !== 0;
    this.bBits[word] = (this.bBits[word] as number) | bit;
    const m = this.newMap(e, eh, el, b);
    this.mNext[m] = this.bHead[b] as number;
    this.bHead[b] = m;
    if (!already) this.heldBy[e] = (this.heldBy[e] as number) + 1;
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
      this.bBits[word] = (this.bBits[word] as number) & ~(1 << (e & 31));
      this.heldBy[e] = (this.heldBy[e] as number) - 1;
      this.gens[e] = ((this.gens[e] as number) + 1) | 0;
    }
    if (this.bHead[b] === EMPTY) this.freeBlock(b);
  }

  private clearSlot(e: number): void {
    this.counts.cleared++;
    this.gens[e] = ((this.gens[e] as number) + 1) | 0;
    for (let m = 0; m < this.mUsed; m++) {
      if (this.mBlock[m] !== EMPTY && this.mEngine[m] === e) this.removeMap(m);
    }
    if (this.pLive > 0) {
      const cap = this.pHi.length;
      for (let k = 0; k < this.pLen; k++) {
        const s = (this.pHead + k) % cap;
        if ((this.pExpiry[s] as number) > 0 && this.pEngine[s] === e) this.dropPending(s);
      }
    }
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

  private findBlock(hi: number, lo: number): number {
    const t = this.bTable;
    if (t.length === 0) return EMPTY;
    const mask = t.length - 1;
    for (let i = mix(hi, lo, 0) & mask; ; i = (i + 1) & mask) {
      const b = t[i] as number;
      if (b === EMPTY) return EMPTY;
      if (this.bHi[b] === hi && this.bLo[b] === lo) return b;
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
    this.bBits.fill(0, b * this.W, (b + 1) * this.W);
    this.bCount++;
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
    this.bCount--;
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
    this.bBits = grow(this.bBits, size * this.W);
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
    for (let b = 0; b < this.bUsed; b++) for (let w = 0; w < this.W; w++) bits[b * W + w] = this.bBits[b * this.W + w] as number;
    this.bBits = bits;
    this.W = W;
  }

  // ───────────────────────── engine hashes ─────────────────────────

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
    this.mCount++;
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
    this.mCount--;
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

  // ───────────────────────── stats ─────────────────────────

  /** Heap bytes of the typed arrays. */
  get bytes(): number {
    return (
      this.bHi.byteLength + this.bLo.byteLength + this.bHead.byteLength + this.bBits.byteLength + this.bRef.byteLength + this.bTable.byteLength +
      this.mHi.byteLength + this.mLo.byteLength + this.mBlock.byteLength + this.mNext.byteLength + this.mEngine.byteLength + this.mTable.byteLength +
      this.pHi.byteLength + this.pLo.byteLength + this.pEngine.byteLength + this.pExpiry.byteLength + this.pTable.byteLength
    );
  }

  /** Bytes of the block and engine-hash structures only (the pending ring is fixed, `pendingCapacity` × 34 bytes). */
  get blockBytes(): number {
    return this.bytes - (this.pHi.byteLength + this.pLo.byteLength + this.pEngine.byteLength + this.pExpiry.byteLength + this.pTable.byteLength);
  }

  /** Distinct blocks held. */
  get size(): number {
    return this.bCount;
  }

  /** (engine, block) pairs held. */
  get held(): number {
    return this.mCount;
  }

  stats(): KvIndexStats {
    const held = this.mCount;
    const bytes = this.bytes;
    return {
      blocks: this.bCount,
      held,
      capacityBlocks: this.cap,
      bytes,
      bytesPerBlock: held === 0 ? 0 : this.blockBytes / held,
      ...this.counts,
      pending: this.pLive,
      engines: this.ids.map((id, s) => ({ id, blocks: this.heldBy[s] as number })),
    };
  }
}

/** Removes table slot i under linear probing by backward shift (no tombstones). */
function deleteAt(t: Int32Array, i: number, home: (id: number) => number): void {
  const mask = t.length - 1;
  let hole = i;
  let j = i;
  for (;;) {
    j = (j + 1) & mask;
    const x = t[j] as number;
    if (x === EMPTY) break;
    const h = home(x) & mask;
    // x may move into the hole when its home is not cyclically in (hole, j].
    if (hole <= j ? h <= hole || h > j : h <= hole && h > j) {
      t[hole] = x;
      hole = j;
    }
  }
  t[hole] = EMPTY;
}

function pow2(n: number): number {
  let p = 1;
  while (p < n) p *= 2;
  return p;
}

function grow<A extends Uint32Array | Int32Array | Uint16Array | Uint8Array>(a: A, size: number): A {
  const b = new (a.constructor as new (n: number) => A)(size);
  b.set(a);
  if (b instanceof Int32Array) b.fill(EMPTY, a.length);
  return b;
}
