/**
 * Our own chained hash of token blocks: the key the KV-event index stores and the strategy looks
 * up. It never reproduces the engine's block hash (vLLM's is sha256 over pickle or CBOR, or
 * xxhash, seeded by a value that depended on `PYTHONHASHSEED`): events carry each block's token
 * ids, so the index hashes them itself, as llm-d's indexer and Dynamo's router do.
 *
 *   r      = H(0, 0, 'K' | 1 | blockSize | len | model | len | lora | len | cacheSalt)     (u32 LE lengths, UTF-8)
 *   h₀     = H(r, tokens of block 0)
 *   hᵢ     = H(hᵢ₋₁, tokens of block i)                                                 (u32 LE token ids)
 *   H(p, m) = xxh32(p.lo | p.hi | m, S₁) ‖ xxh32(p.lo | p.hi | m, S₂)                    (64 bits: hi ‖ lo)
 *
 * The extra keys (model, LoRA adapter, `cache_salt`) enter the root r, so they separate every
 * block of a chain, as vLLM's do on its first block. H is two XXH32 lanes with fixed, distinct
 * seeds over the parent's 64 bits and the block's tokens: 64 bits, plain `Math.imul` JavaScript
 * (no BigInt, no copy into WebAssembly memory per block — the reason `longest-prefix` hashes with
 * its own XXH32, see `../internal/xxh32.ts`). Two seeded lanes are not XXH64,
 * but each is a full-avalanche 32-bit hash of the whole parent and block, which is what a chain
 * key needs: a collision between two chains needs both lanes to collide (≈ 2⁻⁶⁴ per pair).
 *
 * Cost: 2 × XXH32 over 8 + 4·blockSize bytes per block (≈ 0.1 µs for 16 tokens); the root once
 * per (model, LoRA, salt). Known-answer vectors pin the function (test/kv-events/block-hash.test.ts):
 * changing it is a breaking change for every index built with it.
 */
import { LITTLE_ENDIAN, xxh32 } from "../internal/xxh32.js";
import { xxh32Lanes, xxh32x2 } from "./xxh32x2.js";

/** The two lanes' seeds (arbitrary odd constants, fixed forever). */
const SEED_LO = 0x2545f491;
const SEED_HI = 0x61c88647;
const FORMAT_VERSION = 1;
const encoder = new TextEncoder();

/** The first block's extra keys, as vLLM hashes them into its first block. */
export interface BlockExtraKeys {
  /** The served base model's name (one index per model family). */
  readonly model: string | undefined;
  /** The LoRA adapter the blocks were computed with, if any. */
  readonly lora: string | undefined;
  /** The request's `cache_salt`, if any: salted blocks are never shared with unsalted ones. */
  readonly cacheSalt: string | undefined;
}

/**
 * Hashes token blocks into chain keys, as pairs of uint32 (`out[2i]` = hi, `out[2i + 1]` = lo).
 * Owns a scratch buffer: one instance per thread of use, not shared across re-entrant calls.
 */
export class BlockHasher {
  private readonly words: Uint32Array;
  private readonly bytes: Uint8Array;
  /** Roots by extra keys: most traffic repeats the same few. */
  private readonly roots = new Map<string, [number, number]>();
  private readonly lanes = xxh32Lanes(SEED_HI, SEED_LO);

  /** @param blockSize - tokens per block, as the engine's. */
  constructor(readonly blockSize: number) {
    this.words = new Uint32Array(blockSize + 2);
    this.bytes = new Uint8Array(this.words.buffer);
  }

  /** The chain's root r for these extra keys, as [hi, lo]. */
  root(keys: BlockExtraKeys): readonly [number, number] {
    const id = `${keys.model ?? "\u0000"}\u0001${keys.lora ?? "\u0000"}\u0001${keys.cacheSalt ?? "\u0000"}`;
    let root = this.roots.get(id);
    if (root === undefined) {
      const parts = [keys.model, keys.lora, keys.cacheSalt].map((s) => (s === undefined ? undefined : encoder.encode(s)));
      const size = 8 + 4 + 4 + parts.reduce((n, p) => n + 4 + (p?.length ?? 0), 0);
      const buf = new Uint8Array(size);
      const view = new DataView(buf.buffer);
      let at = 8; // the parent (0, 0)
      buf[at++] = 0x4b; // 'K'
      buf[at++] = FORMAT_VERSION;
      at += 2;
      view.setUint32(at, this.blockSize, true);
      at += 4;
      for (const p of parts) {
        // 0xFFFFFFFF: absent, so an absent key differs from an empty one.
        view.setUint32(at, p === undefined ? 0xffffffff : p.length, true);
        at += 4;
        if (p !== undefined) {
          buf.set(p, at);
          at += p.length;
        }
      }
      root = [xxh32(buf, undefined, 0, size, SEED_HI) >>> 0, xxh32(buf, undefined, 0, size, SEED_LO) >>> 0];
      if (this.roots.size >= 1024) this.roots.clear();
      this.roots.set(id, root);
    }
    return root;
  }

  /**
   * Hashes blocks `from..to` of `tokens` (block i: `tokens[i·blockSize..(i + 1)·blockSize)`),
   * chained after `parent` (`[hi, lo]`: the key of block `from − 1`, or a root), into
   * `out[2·from..2·to)`.
   * @returns the number of blocks written, `to − from` (0 when `to ≤ from`)
   */
  chain(parent: ArrayLike<number>, tokens: ArrayLike<number>, from: number, to: number, out: Uint32Array): number {
    const B = this.blockSize;
    const words = this.words;
    const bytes = this.bytes;
    const wordsView = LITTLE_ENDIAN ? words : undefined;
    const len = 4 * (B + 2);
    const lanes = this.lanes;
    const pair = lanes.out;
    let hi = parent[0] as number;
    let lo = parent[1] as number;
    let k = 0;
    for (let t = from * B, end = to * B; t + B <= end; t += B, k++) {
      words[0] = lo;
      words[1] = hi;
      for (let j = 0; j < B; j++) words[j + 2] = tokens[t + j] as number;
      if (!LITTLE_ENDIAN) for (let j = 0; j < B + 2; j++) words[j] = swap32(words[j] as number);
      xxh32x2(bytes, wordsView, 0, len, lanes);
      hi = pair[0] as number;
      lo = pair[1] as number;
      out[2 * (from + k)] = hi;
      out[2 * (from + k) + 1] = lo;
    }
    return k;
  }
}

function swap32(x: number): number {
  return (((x & 0xff) << 24) | ((x & 0xff00) << 8) | ((x >>> 8) & 0xff00) | (x >>> 24)) >>> 0;
}

/** A request's chain: `n` block keys as uint32 pairs (`hashes[2i]` = hi, `hashes[2i + 1]` = lo). */
export interface TokenBlocks {
  readonly hashes: Uint32Array;
  readonly n: number;
}
