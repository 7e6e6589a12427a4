/**
 * Block chains: the routing input cut into blocks, each keyed by a hash that covers everything
 * before it (llm-d's chained block hashes; vLLM's block hashes).
 *
 * Text mode hashes the prompt text's first `maxInputLength` code points as UTF-16LE; bytes mode the
 * first `maxInputLength` bytes of the canonical body. Blocks are `blockSize` code units (text) or
 * bytes. Block i's key is xxHash32 of its bytes seeded with block i − 1's key, the first seed
 * being a 64-bit xxHash of (router seed, mode, tenant, model, block size) folded to 32 bits:
 *
 *   k_-1 = fold(xxh64(header(mode, tenant, model, blockSize), seed)),  k_i = xxh32(block_i, k_i-1)
 *
 * Cost: one xxHash32 call per block, O(input) bytes hashed. UTF-16 rather than UTF-8 because
 * JavaScript strings are UTF-16: Node writes them out at memory speed, while UTF-8 encoding of
 * non-ASCII text costs ~25 µs per 32 KB (more than everything else).
 */
import { writeU32 } from "../../internal/bytes.js";
import { type RoutingMode, bytesPrefix, textPrefix } from "../../routing-input.js";

/** The xxHash functions the chain needs (xxhash-wasm's raw API). */
export interface XXHashAPI {
  h32Raw(input: Uint8Array, seed?: number): number;
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

const encoder = new TextEncoder();
const FORMAT_VERSION = 1;

/** @internal Hashes requests into block chains; owns a reusable UTF-16 buffer. */
export class ChainHasher {
  private buffer: Uint8Array = newBuffer(8192);
  /** Bytes per block: `blockSize` in bytes mode, 2 × `blockSize` (UTF-16) in text mode. */
  readonly blockBytes: number;
  /** `buffer`'s blocks as views, built on first use: hashing allocates nothing per block. */
  private views: Uint8Array[] = [];

  constructor(
    private readonly api: XXHashAPI,
    private readonly seed: bigint,
    private readonly mode: RoutingMode,
    private readonly config: { readonly maxInputLength: number; readonly blockSize: number },
  ) {
    this.blockBytes = mode === "text" ? 2 * config.blockSize : config.blockSize;
  }

  /**
   * The request's block chain, or `undefined` when it has no routing input (text mode: no
   * prompt text). `tenant` must be validated.
   */
  chain(body: unknown, tenant: string | undefined, model: string | undefined): BlockChain | undefined {
    let bytes: Uint8Array;
    let length: number;
    if (this.mode === "text") {
      const text = textPrefix(body, this.config.maxInputLength);
      if (text.length === 0) return undefined;
      if (this.buffer.length < text.length * 2) {
        this.buffer = newBuffer(Math.max(text.length * 2, this.buffer.length * 2));
        this.views = [];
      }
      length = writeUtf16le(text, this.buffer);
      bytes = this.buffer;
    } else {
      bytes = bytesPrefix(body, this.config.maxInputLength);
      length = bytes.length;
      if (length === 0) return undefined;
    }
    return this.hashBlocks(bytes, length, this.seedKey(tenant, model));
  }

  /** @internal Chains `bytes[0..length)` from `seedKey`. Exposed for known-answer tests. */
  hashBlocks(bytes: Uint8Array, length: number, seedKey: number): BlockChain {
    const size = this.blockBytes;
    const n = Math.floor(length / size);
    const keys = new Int32Array(n);
    const api = this.api;
    const views = bytes === this.buffer ? this.views : undefined;
    let key = seedKey;
    for (let i = 0, at = 0; i < n; i++, at += size) {
      let block: Uint8Array | undefined;
      if (views !== undefined) {
        block = views[i];
        if (block === undefined) views[i] = block = bytes.subarray(at, at + size);
      } else {
        block = bytes.subarray(at, at + size);
      }
      key = api.h32Raw(block, key >>> 0) | 0;
      keys[i] = key;
    }
    const lastKey = n * size < length ? api.h32Raw(bytes.subarray(n * size, length), key >>> 0) | 0 : key;
    return { keys, n, lastKey, length, blockBytes: size };
  }

  /**
   * The chain's first seed: xxHash64 (router seed) of an injective header, folded to 32 bits.
   *   'L' | version | mode | tenant length (0 = none) | tenant | model length u32 LE
   *   (0xFFFFFFFF = none) | model UTF-8 | block size u32 LE
   */
  seedKey(tenant: string | undefined, model: string | undefined): number {
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
    return (Number(h >> 32n) ^ Number(h & 0xffff_ffffn)) | 0;
  }
}

/**
 * Node's `Buffer` (also in Bun and Deno) writes UTF-16LE natively, ~20× faster than a JS loop and
 * than UTF-8 encoding of non-ASCII text; elsewhere a plain `Uint8Array` and the loop.
 */
const NodeBuffer = (globalThis as { Buffer?: { alloc(size: number): Uint8Array & { write(s: string, offset: number, encoding: "utf16le"): number } } }).Buffer;

function newBuffer(size: number): Uint8Array {
  return NodeBuffer === undefined ? new Uint8Array(size) : NodeBuffer.alloc(size);
}

/** @internal Writes `text` as UTF-16LE (code units, low byte first, on every platform) at 0; returns the bytes written. */
export function writeUtf16le(text: string, out: Uint8Array): number {
  const write = (out as { write?: (s: string, offset: number, encoding: "utf16le") => number }).write;
  if (write !== undefined) return write.call(out, text, 0, "utf16le");
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    out[2 * i] = c & 0xff;
    out[2 * i + 1] = c >>> 8;
  }
  return 2 * text.length;
}
