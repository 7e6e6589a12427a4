/**
 * KV-cache events of the emulated engine's slot mode (llama.cpp's per-slot cache, engine.ts), in
 * vLLM's format, as the paged mode publishes them: what the engine's slots hold, as blocks.
 *
 * The logic of the llama fleet's `SlotBlockEvents` (tools/fleet/llama/kv-events.ts): each slot
 * holds a prefix of a prompt; the engine holds a block once however many slots hold it, as vLLM
 * holds a page once, so a block is stored (`BlockStored`) when its first holder slot takes it and
 * removed (`BlockRemoved`) when its last holder drops it — a count of holders per block hash. A
 * slot's change publishes its dropped blocks first (deepest first, those no other slot holds),
 * then one chained `BlockStored` of the blocks no slot held, from the first of them to the end.
 *
 * Hashes: the paged mode's, the request's block keys (tokenizer.ts `tokenBlockKeys`: chained, key
 * i covering the cache namespace — model and `cache_salt` — and every token up to the end of
 * block i), not the llama fleet's SHA-256 of the token ids: a slot holds whole engine blocks of a
 * prompt, so its keys are at hand, and two slots holding the same tokens under different salts or
 * adapters hold different blocks, as in the paged mode. The router ignores them but to resolve
 * parents and removals; it indexes the `token_ids` (and the salt of the first block's
 * `extra_keys`, the `lora_name`), which carry what the paged mode's events carry.
 *
 * Block size ({@link kvEventBlockSize}): an event block is vLLM's 16 tokens when the engine's
 * block divides 16 — slot mode usually counts reuse token by token, `blockSizeTokens: 1`, as
 * llama.cpp does (its cache has no pages; the llama fleet publishes 16-token blocks too) — and
 * the engine's own block otherwise (as the paged mode always publishes). Event block j covers
 * tokens [16j, 16j + 16), that is engine blocks [r·j, r·j + r) with r = 16 / blockSizeTokens,
 * and its hash is the key of the last of them, `blockKeys[r·j + r − 1]`: since key i covers every
 * token up to its block's end, that key names tokens [0, 16j + 16) exactly, a chained hash of the
 * 16-token block. A slot holding n engine blocks publishes ⌊n / r⌋ event blocks (only whole ones;
 * a router tokenizing the prompt in 16-token blocks matches them as it matches the paged mode's).
 *
 * Cost per slot change: O(published blocks of the slot) comparisons and map updates.
 */
import type { EngineRequest } from "../engine.js";
import type { WireEvent } from "./publisher.js";

/** vLLM's default block size: the event block of a slot engine whose block divides it. */
export const SLOT_EVENT_BLOCK_SIZE = 16;

/**
 * Tokens per block of the KV events an emulated engine publishes: its `blockSizeTokens` in paged
 * mode; in slot mode 16 when `blockSizeTokens` divides 16 (see the file header), else
 * `blockSizeTokens`. A router reading the events uses it as `precisePrefix.blockSize`.
 */
export function kvEventBlockSize(config: { readonly slots: number; readonly blockSizeTokens: number }): number {
  const bs = config.blockSizeTokens;
  return config.slots > 0 && SLOT_EVENT_BLOCK_SIZE % bs === 0 ? SLOT_EVENT_BLOCK_SIZE : bs;
}

/** The events of an engine's slots; see the file header. */
export class SlotBlockPublisher {
  /** Tokens per event block. */
  readonly blockSize: number;
  /** Engine blocks per event block. */
  private readonly ratio: number;
  /** What was published for each slot: its event blocks' hashes (block keys), in order. */
  private readonly slots: number[][];
  /** Holder slots of each block the engine holds, as published. */
  private readonly holders = new Map<number, number>();

  /**
   * @param slots the engine's slots
   * @param engineBlockSize the engine's `blockSizeTokens`
   * @param emit where the events go (the engine's `kvEvents`)
   */
  constructor(
    slots: number,
    engineBlockSize: number,
    private readonly emit: (event: WireEvent) => void,
  ) {
    this.blockSize = kvEventBlockSize({ slots, blockSizeTokens: engineBlockSize });
    this.ratio = this.blockSize / engineBlockSize;
    this.slots = Array.from({ length: slots }, () => []);
  }

  /** Distinct blocks the engine holds, as published. */
  get blocks(): number {
    return this.holders.size;
  }

  /**
   * Slot `slot` now holds the first `engineBlocks` blocks of `req`'s prompt: publishes what that
   * changes. A request without `tokenIds` (or with fewer than the blocks) has its blocks left
   * unpublished, as the paged mode leaves them; what the slot held before is still removed.
   */
  hold(slot: number, req: EngineRequest, engineBlocks: number): void {
    const published = this.slots[slot];
    if (published === undefined) throw new RangeError(`No slot ${slot}`);
    const E = this.blockSize;
    const r = this.ratio;
    const tokenIds = req.tokenIds;
    const n = tokenIds === undefined ? 0 : Math.min(Math.floor(engineBlocks / r), Math.floor(tokenIds.length / E));
    const keys = req.blockKeys;
    // Blocks kept: the chain's hashes name every token before them, so equal hashes, equal prefixes.
    let kept = 0;
    const limit = Math.min(n, published.length);
    while (kept < limit && published[kept] === keys[kept * r + r - 1]) kept++;
    const removed: bigint[] = [];
    for (let j = published.length - 1; j >= kept; j--) {
      const h = published[j]!;
      const left = this.holders.get(h)! - 1;
      if (left > 0) this.holders.set(h, left);
      else {
        this.holders.delete(h);
        removed.push(BigInt(h));
      }
    }
    published.length = kept;
    // Deepest first, as an engine evicts a chain from its end.
    if (removed.length > 0) this.emit({ type: "BlockRemoved", block_hashes: removed, medium: "GPU" });
    let firstNew = -1;
    for (let j = kept; j < n; j++) {
      const h = keys[j * r + r - 1]!;
      published.push(h);
      const held = this.holders.get(h) ?? 0;
      this.holders.set(h, held + 1);
      // A block another slot holds is stored already, and so is every block before it.
      if (held === 0 && firstNew < 0) firstNew = j;
    }
    if (firstNew < 0) return;
    const salt = req.cacheSalt;
    this.emit({
      type: "BlockStored",
      block_hashes: published.slice(firstNew).map((h) => BigInt(h)),
      parent_block_hash: firstNew > 0 ? BigInt(published[firstNew - 1]!) : null,
      token_ids: tokenIds!.slice(firstNew * E, n * E),
      block_size: E,
      lora_id: null,
      medium: "GPU",
      lora_name: req.loraName ?? null,
      extra_keys: salt === undefined ? null : Array.from({ length: n - firstNew }, (_, i) => (firstNew + i === 0 ? [salt] : null)),
    });
  }

  /** Every slot emptied (a restart): one `AllBlocksCleared`, and nothing is held any more. */
  clear(): void {
    for (const published of this.slots) published.length = 0;
    this.holders.clear();
    this.emit({ type: "AllBlocksCleared" });
  }
}
