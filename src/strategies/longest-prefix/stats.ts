/** What `longest-prefix` reports under `router.stats()`, and how processes' figures add up. */
import type { PrefixIndexStats } from "./blocks.js";

/** `RouterStats.prefixIndex`. */
export interface LongestPrefixStats {
  /** The `longest-prefix` strategy's block index; present only with that strategy. */
  prefixIndex?: PrefixIndexStats;
}

/** Several processes' prefix indexes: sizes add up per target. */
export function mergePrefixIndexes(indexes: readonly PrefixIndexStats[]): PrefixIndexStats {
  const targets = new Map<string, { id: string; blocks: number; queuedBlocks: number }>();
  let blocks = 0;
  let estimatedBytes = 0;
  for (const index of indexes) {
    blocks += index.blocks;
    estimatedBytes += index.estimatedBytes;
    for (const t of index.targets) {
      const sum = targets.get(t.id);
      if (sum === undefined) targets.set(t.id, { ...t });
      else {
        sum.blocks += t.blocks;
        sum.queuedBlocks += t.queuedBlocks;
      }
    }
  }
  const capacityBlocks = Math.max(...indexes.map((i) => i.capacityBlocks));
  return { blocks, capacityBlocks, estimatedBytes, targets: [...targets.values()] };
}
