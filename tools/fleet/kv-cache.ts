/**
 * The paged KV cache of one emulated instance, modelled on vLLM V1's `BlockPool` and
 * `KVCacheManager` (automatic prefix caching).
 *
 * - `numBlocks` physical blocks of `blockSize` tokens. A block is either in use (reference
 *   count > 0) or in the free queue. A free block may still hold a cached prefix block (it has
 *   a hash key) until it is reused.
 * - Lookup: a request's cached prefix is the longest run of its leading block keys present in
 *   the hash map (keys are chained, see tokenizer.ts). As in vLLM, at least one prompt token is
 *   always recomputed to produce logits, so the hit is capped at `floor((promptTokens − 1) /
 *   blockSize)` blocks: a fully cached 8,000-token prompt hits 499 blocks = 7,984 tokens.
 * - Allocation takes the hit blocks (removing them from the free queue if unused) and pops the
 *   rest from the head of the free queue; popping a block that holds a key evicts that key.
 *   New full prompt blocks get their keys at allocation (vLLM V1 caches blocks when it
 *   schedules them), the partial last prompt block and the output blocks get none.
 * - Release (end of request) walks the request's blocks from last to first: blocks with a key
 *   go to the tail of the free queue, keyless ones to the head. The free queue is therefore an
 *   LRU of blocks no running request uses, and within one request the tail of the prompt is
 *   evicted before its beginning, which keeps shared prefixes longest (vLLM does the same).
 *
 * State is a few typed arrays indexed by block id plus one `Map<key, block>`: O(blocks) per
 * request, no per-token objects.
 */

const NONE = -1;

/** Counters of one cache; all in blocks. */
export interface KvCacheUsage {
  /** Blocks referenced by at least one running request. */
  usedBlocks: number;
  /** Blocks that hold a reusable prefix block (in use or free). */
  cachedBlocks: number;
  /** Total capacity. */
  numBlocks: number;
}

/**
 * What happens to cached prefix blocks, for an engine that publishes KV events (vLLM's
 * `BlockPool` emits `BlockStored` when it caches blocks, `BlockRemoved` when it evicts one and
 * `AllBlocksCleared` on a reset).
 */
export interface KvCacheObserver {
  /** `keys[from, to)` were just cached, as one chain whose parent is `keys[from − 1]` (none when `from` is 0). */
  stored(keys: Float64Array, from: number, to: number): void;
  /** `key` left the cache (its block was reused, or its computation was abandoned). */
  removed(key: number): void;
  /** Every cached block was forgotten. */
  cleared(): void;
}

/** A paged prefix cache; see the file header for the model. */
export class KvCache {
  readonly numBlocks: number;
  readonly blockSize: number;
  private readonly refCount: Int32Array;
  private readonly key: Float64Array;
  private readonly prev: Int32Array;
  private readonly next: Int32Array;
  private readonly byKey = new Map<number, number>();
  private head = NONE;
  private tail = NONE;
  private freeCount = 0;

  /** Told of every store, eviction and reset, when set. */
  observer: KvCacheObserver | undefined;

  constructor(numBlocks: number, blockSize: number) {
    this.numBlocks = numBlocks;
    this.blockSize = blockSize;
    this.refCount = new Int32Array(numBlocks);
    this.key = new Float64Array(numBlocks).fill(Number.NaN);
    this.prev = new Int32Array(numBlocks);
    this.next = new Int32Array(numBlocks);
    for (let b = 0; b < numBlocks; b++) this.pushTail(b);
  }

  /** Number of leading `keys` present, capped so at least one prompt token is recomputed. */
  lookup(keys: Float64Array, promptTokens: number): number {
    const cap = Math.min(keys.length, Math.floor((promptTokens - 1) / this.blockSize));
    let n = 0;
    while (n < cap && this.byKey.has(keys[n]!)) n++;
    return n;
  }

  /**
   * Allocates `totalBlocks` blocks for a request whose first `hitBlocks` keys are cached
   * (from {@link lookup}); returns the block ids, or `null` when the free queue is too short.
   */
  allocate(keys: Float64Array, hitBlocks: number, totalBlocks: number): Int32Array | null {
    let hitFree = 0;
    for (let i = 0; i < hitBlocks; i++) if (this.refCount[this.byKey.get(keys[i]!)!] === 0) hitFree++;
    if (totalBlocks - hitBlocks > this.freeCount - hitFree) return null;
    const blocks = new Int32Array(totalBlocks);
    let runStart = -1;
    for (let i = 0; i < totalBlocks; i++) {
      const k = i < keys.length ? keys[i]! : Number.NaN;
      const existing = i < keys.length ? this.byKey.get(k) : undefined;
      let b: number;
      if (existing !== undefined) {
        b = existing;
        if (this.refCount[b] === 0) this.unlink(b);
      } else {
        b = this.popHead();
        if (!Number.isNaN(k)) {
          this.key[b] = k;
          this.byKey.set(k, b);
          if (runStart < 0) runStart = i;
        }
      }
      if (runStart >= 0 && (existing !== undefined || Number.isNaN(k))) {
        this.observer?.stored(keys, runStart, i);
        runStart = -1;
      }
      this.refCount[b]! += 1;
      blocks[i] = b;
    }
    if (runStart >= 0) this.observer?.stored(keys, runStart, Math.min(totalBlocks, keys.length));
    return blocks;
  }

  /**
   * Releases a request's blocks. Blocks at index ≥ `validKeyedBlocks` were never computed (the
   * request was aborted during prefill): their keys are dropped when no one else holds them.
   */
  release(blocks: Int32Array, validKeyedBlocks = blocks.length): void {
    for (let i = blocks.length - 1; i >= 0; i--) {
      const b = blocks[i]!;
      const rc = (this.refCount[b]! -= 1);
      if (rc > 0) continue;
      if (i >= validKeyedBlocks) this.dropKey(b);
      if (Number.isNaN(this.key[b]!)) this.pushHead(b);
      else this.pushTail(b);
    }
  }

  /** Current counters. */
  usage(): KvCacheUsage {
    return { usedBlocks: this.numBlocks - this.freeCount, cachedBlocks: this.byKey.size, numBlocks: this.numBlocks };
  }

  /** Fraction of blocks in use by running requests, 0..1 (vLLM's `kv_cache_usage_perc`). */
  usageFraction(): number {
    return (this.numBlocks - this.freeCount) / this.numBlocks;
  }

  /**
   * Forgets every cached prefix block, as a restarted engine starts with an empty cache. Blocks
   * in use stay allocated to their requests (they finish); none is found by a lookup again.
   * O(numBlocks).
   */
  clear(): void {
    const observer = this.observer;
    this.observer = undefined; // one AllBlocksCleared, not a removal per block
    try {
      for (let b = 0; b < this.numBlocks; b++) this.dropKey(b);
    } finally {
      this.observer = observer;
    }
    observer?.cleared();
  }

  /** True when `key` is cached (for tests and diagnostics). */
  has(key: number): boolean {
    return this.byKey.has(key);
  }

  private dropKey(b: number): void {
    const k = this.key[b]!;
    if (!Number.isNaN(k)) {
      this.byKey.delete(k);
      this.key[b] = Number.NaN;
      this.observer?.removed(k);
    }
  }

  private popHead(): number {
    const b = this.head;
    if (b === NONE) throw new Error("KvCache: free queue empty (allocate checks capacity first)");
    this.unlink(b);
    this.dropKey(b);
    return b;
  }

  private unlink(b: number): void {
    const p = this.prev[b]!;
    const n = this.next[b]!;
    if (p === NONE) this.head = n;
    else this.next[p] = n;
    if (n === NONE) this.tail = p;
    else this.prev[n] = p;
    this.freeCount--;
  }

  private pushTail(b: number): void {
    this.prev[b] = this.tail;
    this.next[b] = NONE;
    if (this.tail === NONE) this.head = b;
    else this.next[this.tail] = b;
    this.tail = b;
    this.freeCount++;
  }

  private pushHead(b: number): void {
    this.next[b] = this.head;
    this.prev[b] = NONE;
    if (this.head === NONE) this.tail = b;
    else this.prev[this.head] = b;
    this.head = b;
    this.freeCount++;
  }
}
