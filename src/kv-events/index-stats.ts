/** The KV-event index's statistics, and the counters its parts share. */

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

/** The index's counters, one object its block table and pending decisions count into (in the order `stats()` lists them). */
export type IndexCounts = Pick<KvIndexStats, "batches" | "stored" | "removed" | "cleared" | "unknownParents" | "unknownRemovals" | "skipped" | "evicted" | "pendingConfirmed" | "pendingExpired">;

export function newIndexCounts(): IndexCounts {
  return { batches: 0, stored: 0, removed: 0, cleared: 0, unknownParents: 0, unknownRemovals: 0, skipped: 0, evicted: 0, pendingConfirmed: 0, pendingExpired: 0 };
}
