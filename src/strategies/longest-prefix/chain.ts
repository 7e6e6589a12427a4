/**
 * Block chains: the routing input cut into blocks, each keyed by a hash that covers everything
 * before it (llm-d's chained block hashes; vLLM's block hashes).
 *
 * Text mode hashes the prompt text's first `maxInputLength` code points as UTF-16LE; bytes mode the
 * first `maxInputLength` bytes of the canonical body. Blocks are `blockSize` code units (text) or
 * bytes. Block i's key is xxHash32 of its bytes seeded with block i − 1's key, the first seed
 * being a 64-bit xxHash of (router seed, mode, tenant, model, block size) folded to 32 bits:
 *
 *   h = xxh64(header(mode, tenant, model, blockSize), seed),  k_-1 = fold(h) = hi32(h) ⊕ lo32(h)
 *   k_i = xxh32(block_i, k_i-1 ⊕ t),  t = 0 without a tenant, hi32(h) with one
 *
 * Tenants: folding h to 32 bits made two tenants whose folds collide (`customer-48014` and
 * `customer-49068`, router seed 0) share every block key of every prompt. With a tenant, hi32(h)
 * also enters every block's seed: block 0 is seeded with lo32(h) and block i with k_i-1 ⊕ hi32(h),
 * so two tenants share a chain only when all 64 bits of h agree (or, by chance, 32-bit keys of
 * each of its blocks), while keys stay int32 in the index. Without a tenant t = 0: the chain is the
 * one it always was (the tenant-less known answers and the benchmark's rows are unchanged).
 *
 * The chain is hashed as the input is written (`ChainWriter`): each block as soon as it is complete,
 * in one pass, with the JavaScript XXH32 of `internal/xxh32.ts` (equal to xxhash-wasm's `h32Raw`).
 *
 * Cost: one xxHash32 call per block, O(input) bytes hashed. UTF-16 rather than UTF-8 because
 * JavaScript strings are UTF-16: Node writes them out at memory speed, while UTF-8 encoding of
 * non-ASCII text costs ~25 µs per 32 KB (more than everything else).
 */
import { writeU32 } from "../../internal/bytes.js";
import { PrefixWriter } from "../../routing/prefix-writer.js";
import { xxh32 } from "../../internal/xxh32.js";
import { type RoutingMode, writeBytesInput } from "../../routing/routing-input.js";
import { writeTextInput } from "../../routing/prompt-text.js";

/** The xxHash function the chain's first seed needs (xxhash-wasm's raw API). */
export interface XXHashAPI {
  h64Raw(input: Uint8Array, seed?: bigint): bigint;
}

/** @internal A request's blocks: keys of its full blocks and of its partial last block. */
export interface BlockChain {
  /** Keys of the full blocks, `keys[i]` = k_i (int32). */
  readonly keys: Int32Array;
  /** Number of full blocks. */
  readonly n: number;
  /** Key of the partial last block, or of the last full block when there is none. */
  readonly lastKey: number;
  /** Bytes of routing input hashed. */
  readonly length: number;
  /** Bytes per block: `blockSize` in bytes mode, 2 × `blockSize` (UTF-16) in text mode. */
  readonly blockBytes: number;
}

/** @internal The seeds of a chain: k_-1, and t, mixed into every block's seed (0 without a tenant). */
export interface ChainSeed {
  readonly key: number;
  readonly mix: number;
}

const encoder = new TextEncoder();
const FORMAT_VERSION = 1;

/** @internal Hashes requests into block chains; owns a reusable buffer. */
export class ChainHasher {
  /** Bytes per block: `blockSize` in bytes mode, 2 × `blockSize` (UTF-16) in text mode. */
  readonly blockBytes: number;
  private readonly writer: ChainWriter;
  /** The last (tenant, model) seen and its seed: most traffic repeats them. */
  private last: { tenant: string | undefined; model: string | undefined; seed: ChainSeed } | undefined;

  constructor(
    private readonly api: XXHashAPI,
    private readonly seed: bigint,
    private readonly mode: RoutingMode,
    private readonly config: { readonly maxInputLength: number; readonly blockSize: number },
  ) {
    this.blockBytes = mode === "text" ? 2 * config.blockSize : config.blockSize;
    this.writer = new ChainWriter(this.blockBytes);
  }

  /**
   * The request's block chain, or `undefined` when it has no routing input (text mode: no
   * prompt text). `tenant` must be validated.
   */
  chain(body: unknown, tenant: string | undefined, model: string | undefined): BlockChain | undefined {
    // A body's toJSON may route another request through this router while this one is written.
    const w = this.writer.busy ? new ChainWriter(this.blockBytes) : this.writer;
    const max = this.config.maxInputLength;
    w.busy = true;
    try {
      // Text: up to `max` code points, 4 bytes each at most; bytes: `max` bytes.
      w.start(this.mode === "text" ? 4 * max : max, this.seedOf(tenant, model));
      if (this.mode === "text") writeTextInput(body, max, w);
      else writeBytesInput(body, w);
      return w.length === 0 ? undefined : w.finish();
    } finally {
      w.busy = false;
    }
  }

  /** @internal Chains `bytes[0..length)` from `seed`. Exposed for known-answer tests. */
  hashBlocks(bytes: Uint8Array, length: number, seed: ChainSeed): BlockChain {
    const w = this.writer.busy ? new ChainWriter(this.blockBytes) : this.writer;
    w.start(length, seed);
    w.copy(bytes, 0, length);
    return w.finish();
  }

  /**
   * The chain's seeds, from xxHash64 (router seed) of an injective header:
   *   'L' | version | mode | tenant length (0 = none) | tenant | model length u32 LE
   *   (0xFFFFFFFF = none) | model UTF-8 | block size u32 LE
   */
  seedOf(tenant: string | undefined, model: string | undefined): ChainSeed {
    const last = this.last;
    if (last !== undefined && last.tenant === tenant && last.model === model) return last.seed;
    const modelBytes = model === undefined ? undefined : encoder.encode(model);
    const tenantLength = tenant === undefined ? 0 : tenant.length;
    const header = new Uint8Array(4 + tenantLength + 4 + (modelBytes?.length ?? 0) + 4);
    let at = 0;
    header[at++] = 0x4c;
    header[at++] = FORMAT_VERSION;
    header[at++] = this.mode === "text" ? 0x74 : 0x62;
    header[at++] = tenantLength;
    for (let i = 0; i < tenantLength; i++) header[at++] = (tenant as string).charCodeAt(i);
    at = writeU32(header, at, modelBytes === undefined ? 0xffff_ffff : modelBytes.length);
    if (modelBytes !== undefined) {
      header.set(modelBytes, at);
      at += modelBytes.length;
    }
    writeU32(header, at, this.config.blockSize);
    const h = this.api.h64Raw(header, this.seed);
    const hi = Number(h >> 32n) | 0;
    const seed = { key: hi ^ Number(h & 0xffff_ffffn), mix: tenant === undefined ? 0 : hi };
    this.last = { tenant, model, seed };
    return seed;
  }
}

/** A prefix writer that hashes each block of what is written as soon as the block is complete. */
class ChainWriter extends PrefixWriter {
  private keys = new Int32Array(64);
  private n = 0;
  /** Key of the last hashed block (k_-1 before the first). */
  private key = 0;
  private mix = 0;

  constructor(private readonly blockBytes: number) {
    super();
  }

  start(limit: number, seed: ChainSeed): void {
    this.begin(limit);
    const blocks = Math.floor(limit / this.blockBytes);
    if (this.keys.length < blocks) this.keys = new Int32Array(blocks);
    this.n = 0;
    this.key = seed.key;
    this.mix = seed.mix;
    this.mark = this.blockBytes;
  }

  protected override reached(): void {
    const size = this.blockBytes;
    let at = this.n * size;
    while (at + size <= this.length) {
      this.key = xxh32(this.bytes, this.words, at, at + size, this.key ^ this.mix);
      this.keys[this.n++] = this.key;
      at += size;
    }
    this.mark = at + size;
  }

  finish(): BlockChain {
    const { n, blockBytes, length } = this;
    const lastKey = n * blockBytes < length ? xxh32(this.bytes, this.words, n * blockBytes, length, this.key ^ this.mix) : this.key;
    return { keys: this.keys.slice(0, n), n, lastKey, length, blockBytes };
  }
}
