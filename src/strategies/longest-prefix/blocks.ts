/**
 * Prefix index: for each target, a bounded LRU of the prompt blocks it was recently sent — an
 * approximation of that target's prefix cache, kept on the client (the llm-d / SGLang-gateway
 * idea, without any feedback from the engine).
 *
 * - A block is identified by its 32-bit chained hash (see `chain.ts`): the hash of a
 *   block covers every byte before it, so "block i present" stands for "the first i + 1 blocks
 *   were sent here".
 * - Recording a request inserts (or refreshes) its blocks from the last to the first, so the
 *   first block of a prefix is always the most recently used: the LRU evicts the tail of a
 *   prefix before its head, as vLLM's block pool does. Presence along a chain is therefore
 *   prefix-closed in practice, and {@link TargetBlocks.matchLength} finds the longest held prefix
 *   by binary search.
 * - TTL: an entry's value is the time it was last recorded, in units of `ttlMs / 1024`; a lookup
 *   treats older entries as absent (without removing them: lookups are pure reads; an expired
 *   entry is the least recently used, so it is the next to be evicted, or it is refreshed when
 *   its block is recorded again). Times are read from the router's clock.
 *
 * Cost: lookup O(log n) table probes per target for a chain of n blocks; recording O(n), no
 * allocation. Memory: the LRU (`internal/int-lru.ts`: lru-cache's semantics in typed arrays)
 * allocates 16 bytes per slot of capacity on the first record, and its hash table 2–4 int32 per
 * held block — ≈ 24.5 bytes per block when full (measured: test/strategies/longest-prefix/
 * blocks.test.ts; with lru-cache's `Map` it was ≈ 52).
 */
import { IntLru } from "./int-lru.js";

/** TTL resolution: an entry's age is measured in `ttlMs / TTL_UNITS`. */
const TTL_UNITS = 1024;

/** Index statistics, as reported under `router.stats().prefixIndex`. */
export interface PrefixIndexStats {
  /** Blocks held over all targets (expired entries count until eviction drops them). */
  blocks: number;
  /** Capacity per target, in blocks. */
  capacityBlocks: number;
  /** Estimated heap bytes of the index: preallocated slots of every allocated target plus held blocks. */
  estimatedBytes: number;
  /**
   * Per target id (targets never recorded to are listed with 0): `blocks` held, and
   * `queuedBlocks`, the uncached blocks of the requests routed there that have not yet produced a
   * first byte — the prefill work queued on the target as this router knows it (0 when nothing is
   * in flight).
   */
  targets: { id: string; blocks: number; queuedBlocks: number }[];
}

/** Clock view the index needs: time now in ms. */
export interface IndexClock {
  now(): number;
}

/** Shared settings of every target's index. */
export interface IndexSettings {
  readonly capacityBlocks: number;
  /** 0: entries never expire. */
  readonly ttlMs: number;
  readonly clock: IndexClock;
  /** Clock reading at creation; ages are measured from it. */
  readonly originMs: number;
}

/** @internal The block index of one target. */
export class TargetBlocks {
  private lru: IntLru | undefined;

  constructor(
    readonly id: string,
    private readonly settings: IndexSettings,
  ) {}

  /** Blocks held. */
  get size(): number {
    return this.lru === undefined ? 0 : this.lru.size;
  }

  /** Whether slot arrays were allocated (on the first record). */
  get allocated(): boolean {
    return this.lru !== undefined;
  }

  /**
   * Number of leading blocks of `keys[0..n)` held here. `now` is `ttlNow()` (ignored without
   * TTL). Binary search over the prefix-closed chain: probes block 0 first, since most targets
   * hold none of a given request.
   */
  matchLength(keys: Int32Array, n: number, now: number): number {
    const lru = this.lru;
    if (lru === undefined || n === 0 || !this.holds(lru, keys[0] as number, now)) return 0;
    // Invariant: block lo - 1 held; block hi not held (hi = n: unknown, treated as the end).
    let lo = 1;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.holds(lru, keys[mid] as number, now)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Inserts or refreshes `keys[0..n)`, last first, so the head of the chain is the most recent. */
  record(keys: Int32Array, n: number, now: number): void {
    if (n === 0) return;
    this.lru ??= new IntLru(this.settings.capacityBlocks);
    const lru = this.lru;
    const value = this.settings.ttlMs > 0 ? now : 0;
    for (let i = n - 1; i >= 0; i--) lru.set(keys[i] as number, value);
  }

  /** Removes `keys[from..]` (absent ones are skipped). */
  forget(keys: Int32Array, from: number): void {
    const lru = this.lru;
    if (lru === undefined) return;
    for (let i = from; i < keys.length; i++) lru.delete(keys[i] as number);
  }

  /** Forgets every block (the target's cache is gone); the arrays are allocated again on the next record. */
  clear(): void {
    this.lru = undefined;
  }

  /** Heap bytes of the index's arrays. */
  estimatedBytes(): number {
    return this.lru === undefined ? 0 : this.lru.bytes;
  }

  private holds(lru: IntLru, key: number, now: number): boolean {
    if (this.settings.ttlMs === 0) return lru.has(key);
    const at = lru.peek(key);
    return at !== undefined && now - at <= TTL_UNITS;
  }
}

/**
 * The current time in TTL units (`ttlMs / 1024` since the index was created), or 0 without TTL.
 * A small integer for about 2 million TTLs, so stored times stay V8 small integers.
 * @internal
 */
export function ttlNow(settings: IndexSettings): number {
  if (settings.ttlMs === 0) return 0;
  return Math.floor(((settings.clock.now() - settings.originMs) * TTL_UNITS) / settings.ttlMs);
}
