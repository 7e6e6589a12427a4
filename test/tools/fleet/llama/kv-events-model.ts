/**
 * What a subscriber learns from an engine's KV events: the blocks it holds, each known by its
 * whole token prefix (the parent chain's tokens and its own) — the test's model of an index that
 * trusts only `token_ids` and parents. It checks, as it applies them, that the events are
 * consistent: a store's parent is held, a stored hash is not held already, a removed one is.
 */
import type { KvEvent } from "../../../../tools/fleet/llama/kv-events.js";

export class HeldBlocks {
  private readonly blocks = new Map<bigint, { parent: bigint | undefined; tokens: number[] }>();

  apply(events: readonly KvEvent[]): void {
    for (const e of events) {
      if (e.type === "AllBlocksCleared") this.blocks.clear();
      else if (e.type === "BlockRemoved") {
        for (const h of e.blockHashes) {
          if (!this.blocks.delete(h)) throw new Error(`BlockRemoved of ${h}, which is not held`);
        }
      } else {
        if (e.tokenIds.length !== e.blockHashes.length * e.blockSize) throw new Error("BlockStored: token_ids is not blocks × block_size");
        let parent = e.parentBlockHash;
        if (parent !== undefined && !this.blocks.has(parent)) throw new Error(`BlockStored with parent ${parent}, which is not held`);
        e.blockHashes.forEach((h, i) => {
          if (this.blocks.has(h)) throw new Error(`BlockStored of ${h}, which is held already`);
          this.blocks.set(h, { parent, tokens: e.tokenIds.slice(i * e.blockSize, (i + 1) * e.blockSize) });
          parent = h;
        });
      }
    }
  }

  /** Each held block as its whole token prefix, comma-joined. */
  prefixes(): Set<string> {
    const out = new Set<string>();
    for (const h of this.blocks.keys()) {
      const chain: number[][] = [];
      for (let at: bigint | undefined = h; at !== undefined; at = this.blocks.get(at)?.parent) {
        const b = this.blocks.get(at);
        if (b === undefined) throw new Error(`block ${h}'s chain reaches ${at}, which is not held`);
        chain.unshift(b.tokens);
      }
      out.add(chain.flat().join(","));
    }
    return out;
  }

  get size(): number {
    return this.blocks.size;
  }
}

/** The whole-block prefixes of each slot's tokens: what the engine holds, as {@link HeldBlocks.prefixes} names it. */
export function expectedPrefixes(slots: readonly (readonly number[])[], blockSize = 16): Set<string> {
  const out = new Set<string>();
  for (const tokens of slots) {
    for (let b = 1; b * blockSize <= tokens.length; b++) out.add(tokens.slice(0, b * blockSize).join(","));
  }
  return out;
}
