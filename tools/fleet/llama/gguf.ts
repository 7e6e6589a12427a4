/**
 * A small GGUF writer and reader, and the deterministic tiny llama model the real-engine fleet
 * runs (see docs/real-engines.md).
 *
 * GGUF (ggml's model file, version 3), little-endian throughout:
 *
 *   "GGUF" · u32 version · u64 tensor count · u64 metadata count
 *   metadata:  string key · u32 value type · value          (arrays: u32 item type · u64 count · items)
 *   tensors:   string name · u32 n_dims · u64 dims[n_dims] · u32 ggml type · u64 offset
 *   zero padding to `general.alignment` (32 unless set), then the tensor data; each tensor
 *   starts at its offset from there, a multiple of the alignment.
 *
 * A string is a u64 byte length and UTF-8 bytes, no terminator. Dimensions are in ggml's order:
 * `dims[0]` is the length of a row (the contiguous axis), so a weight that maps `n_in` inputs to
 * `n_out` outputs has dims `[n_in, n_out]`.
 *
 * The tiny model ({@link tinyLlamaGguf}) is a llama-architecture network with random weights
 * drawn from a seed, and a byte-level BPE vocabulary (bpe.ts) under llama.cpp's `gpt2` tokenizer
 * with the `qwen2` pre-tokenizer: tokens 0–255 are the bytes (GPT-2's byte characters), 256–260
 * the Llama 3.1 chat template's control tokens (`<|begin_of_text|>`, `<|end_of_text|>`,
 * `<|start_header_id|>`, `<|end_header_id|>`, `<|eot_id|>`), then one token per learned merge.
 * Nothing is added when tokenizing. The same vocabulary is written as a Hugging Face
 * `tokenizer.json` by tokenizer-files.ts. Its output is gibberish; its prefill cost and its
 * KV-cache reuse are llama.cpp's own. Cost: one pass over ~3.6 M weights (about 7 MB of F16 at
 * the defaults), well under a second.
 */

import { mix32 } from "../../sim/random.js";
import { TINY_LLAMA_CONTROL_TOKENS, tinyLlamaTokenizer } from "./bpe.js";

/** The magic of a GGUF file: the bytes `GGUF`. */
export const GGUF_MAGIC = 0x46554747;
/** The GGUF version written. */
export const GGUF_VERSION = 3;
/** The data alignment when `general.alignment` is not set. */
export const GGUF_DEFAULT_ALIGNMENT = 32;

/** GGUF metadata value types and their codes. */
export const GGUF_VALUE_TYPES = {
  uint8: 0,
  int8: 1,
  uint16: 2,
  int16: 3,
  uint32: 4,
  int32: 5,
  float32: 6,
  bool: 7,
  string: 8,
  array: 9,
  uint64: 10,
  int64: 11,
  float64: 12,
} as const;

/** A scalar metadata value type. */
export type GgufScalarType = Exclude<keyof typeof GGUF_VALUE_TYPES, "array">;

/** A metadata scalar: a JS number for every numeric type but the 64-bit integers (bigint). */
export type GgufScalar = number | bigint | boolean | string;

/** One metadata value: a typed scalar, or an array of scalars of one type. */
export type GgufValue =
  | { readonly type: GgufScalarType; readonly value: GgufScalar }
  | { readonly type: "array"; readonly itemType: GgufScalarType; readonly values: readonly GgufScalar[] };

/** ggml tensor types this writer stores. */
export const GGML_TYPES = { f32: 0, f16: 1 } as const;

/** A tensor to write: `f32` data as a Float32Array, `f16` as the half-precision bit patterns. */
export interface GgufTensor {
  readonly name: string;
  /** ggml order: `dims[0]` is the row length. */
  readonly dims: readonly number[];
  readonly type: keyof typeof GGML_TYPES;
  readonly data: Float32Array | Uint16Array;
}

/** What {@link writeGguf} writes. */
export interface GgufContent {
  /** Metadata in the order written. */
  readonly metadata: readonly (readonly [string, GgufValue])[];
  readonly tensors: readonly GgufTensor[];
}

/** A tensor's entry as {@link readGguf} finds it. */
export interface GgufTensorInfo {
  readonly name: string;
  readonly dims: readonly number[];
  /** ggml type code. */
  readonly type: number;
  /** Offset of its data from the start of the file. */
  readonly fileOffset: number;
}

/** What {@link readGguf} returns. */
export interface GgufFile {
  readonly version: number;
  readonly metadata: ReadonlyMap<string, GgufValue>;
  readonly tensors: readonly GgufTensorInfo[];
  /** Offset of the tensor data section. */
  readonly dataOffset: number;
}

const ENCODER = new TextEncoder();
/** Whether typed arrays are little-endian here (GGUF is): then tensor data is copied as is. */
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** A growable little-endian byte buffer. */
class ByteWriter {
  private buf: Uint8Array;
  private view: DataView;
  length = 0;

  constructor(capacity: number) {
    this.buf = new Uint8Array(capacity);
    this.view = new DataView(this.buf.buffer);
  }

  private reserve(n: number): void {
    if (this.length + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.length + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }

  u8(v: number): void {
    this.reserve(1);
    this.view.setUint8(this.length, v);
    this.length += 1;
  }
  u32(v: number): void {
    this.reserve(4);
    this.view.setUint32(this.length, v, true);
    this.length += 4;
  }
  u64(v: number | bigint): void {
    this.reserve(8);
    this.view.setBigUint64(this.length, BigInt(v), true);
    this.length += 8;
  }
  scalar(type: GgufScalarType, v: GgufScalar, where: string): void {
    const bad = (): never => {
      throw new TypeError(`GGUF metadata \`${where}\`: a ${type} cannot hold ${typeof v === "bigint" ? `${v}n` : JSON.stringify(v)}`);
    };
    if (type === "string") {
      if (typeof v !== "string") bad();
      return this.bytes(ENCODER.encode(v as string));
    }
    if (type === "bool") {
      if (typeof v !== "boolean") bad();
      return this.u8(v ? 1 : 0);
    }
    if (type === "uint64" || type === "int64") {
      if (typeof v !== "bigint" && !(typeof v === "number" && Number.isSafeInteger(v))) bad();
      const big = BigInt(v as number | bigint);
      if (type === "uint64" ? big < 0n || big >= 1n << 64n : big < -(1n << 63n) || big >= 1n << 63n) bad();
      this.reserve(8);
      if (type === "uint64") this.view.setBigUint64(this.length, big, true);
      else this.view.setBigInt64(this.length, big, true);
      this.length += 8;
      return;
    }
    if (typeof v !== "number" || Number.isNaN(v)) bad();
    const n = v as number;
    const int = (lo: number, hi: number): void => {
      if (!Number.isInteger(n) || n < lo || n > hi) bad();
    };
    switch (type) {
      case "uint8":
        int(0, 0xff);
        return this.u8(n);
      case "int8":
        int(-0x80, 0x7f);
        this.reserve(1);
        this.view.setInt8(this.length, n);
        this.length += 1;
        return;
      case "uint16":
        int(0, 0xffff);
        this.reserve(2);
        this.view.setUint16(this.length, n, true);
        this.length += 2;
        return;
      case "int16":
        int(-0x8000, 0x7fff);
        this.reserve(2);
        this.view.setInt16(this.length, n, true);
        this.length += 2;
        return;
      case "uint32":
        int(0, 0xffffffff);
        return this.u32(n);
      case "int32":
        int(-0x80000000, 0x7fffffff);
        this.reserve(4);
        this.view.setInt32(this.length, n, true);
        this.length += 4;
        return;
      case "float32":
        this.reserve(4);
        this.view.setFloat32(this.length, n, true);
        this.length += 4;
        return;
      case "float64":
        this.reserve(8);
        this.view.setFloat64(this.length, n, true);
        this.length += 8;
        return;
    }
  }
  /** A GGUF string: u64 length, then the bytes. */
  bytes(b: Uint8Array): void {
    this.u64(b.length);
    this.raw(b);
  }
  raw(b: Uint8Array): void {
    this.reserve(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
  }
  padTo(alignment: number): void {
    while (this.length % alignment !== 0) this.u8(0);
  }
  result(): Uint8Array {
    return this.buf.subarray(0, this.length);
  }
}

function alignmentOf(metadata: GgufContent["metadata"]): number {
  const entry = metadata.find(([k]) => k === "general.alignment");
  if (entry === undefined) return GGUF_DEFAULT_ALIGNMENT;
  const v = entry[1];
  if (v.type !== "uint32" || typeof v.value !== "number" || v.value < 1 || (v.value & (v.value - 1)) !== 0) {
    throw new RangeError(`Expected \`general.alignment\` to be a uint32 power of two, got ${JSON.stringify(v)}`);
  }
  return v.value;
}

function tensorBytes(t: GgufTensor): Uint8Array {
  const count = t.dims.reduce((a, b) => a * b, 1);
  const expected = t.type === "f32" ? Float32Array : Uint16Array;
  if (!(t.data instanceof expected) || t.data.length !== count) {
    throw new RangeError(`Tensor \`${t.name}\`: expected ${count} ${t.type} values (dims ${t.dims.join("×")}), got ${t.data.length} in a ${t.data.constructor.name}`);
  }
  if (LITTLE_ENDIAN) return new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  const out = new Uint8Array(t.data.byteLength);
  const view = new DataView(out.buffer);
  if (t.data instanceof Float32Array) for (let i = 0; i < t.data.length; i++) view.setFloat32(i * 4, t.data[i]!, true);
  else for (let i = 0; i < t.data.length; i++) view.setUint16(i * 2, t.data[i]!, true);
  return out;
}

/**
 * Writes a GGUF (version 3) file's bytes: metadata in the order given, tensors in the order
 * given, each tensor's data aligned to `general.alignment` (default 32).
 * @throws TypeError when a metadata value does not fit its type; RangeError for a tensor whose
 * data does not match its dims and type, or duplicate keys or tensor names
 */
export function writeGguf(content: GgufContent): Uint8Array {
  const keys = new Set<string>();
  for (const [k] of content.metadata) {
    if (keys.has(k)) throw new RangeError(`Duplicate GGUF metadata key \`${k}\``);
    keys.add(k);
  }
  const names = new Set<string>();
  for (const t of content.tensors) {
    if (names.has(t.name)) throw new RangeError(`Duplicate GGUF tensor \`${t.name}\``);
    names.add(t.name);
  }
  const alignment = alignmentOf(content.metadata);
  const data = content.tensors.map(tensorBytes);
  const w = new ByteWriter((1 << 20) + data.reduce((n, d) => n + d.length + alignment, 0));
  w.u32(GGUF_MAGIC);
  w.u32(GGUF_VERSION);
  w.u64(content.tensors.length);
  w.u64(content.metadata.length);
  for (const [key, value] of content.metadata) {
    w.bytes(ENCODER.encode(key));
    w.u32(GGUF_VALUE_TYPES[value.type]);
    if (value.type === "array") {
      w.u32(GGUF_VALUE_TYPES[value.itemType]);
      w.u64(value.values.length);
      for (const item of value.values) w.scalar(value.itemType, item, key);
    } else {
      w.scalar(value.type, value.value, key);
    }
  }
  let offset = 0;
  content.tensors.forEach((t, i) => {
    w.bytes(ENCODER.encode(t.name));
    w.u32(t.dims.length);
    for (const d of t.dims) w.u64(d);
    w.u32(GGML_TYPES[t.type]);
    w.u64(offset);
    offset += Math.ceil(data[i]!.length / alignment) * alignment;
  });
  w.padTo(alignment);
  for (const d of data) {
    w.raw(d);
    w.padTo(alignment);
  }
  return w.result();
}

/**
 * Reads a GGUF file's header, metadata and tensor table (not the tensor data): what tests use to
 * check a written file, and what anyone can use to look into a model file.
 * @throws RangeError when the bytes are not a GGUF file of version 2 or 3, or are cut short
 */
export function readGguf(bytes: Uint8Array): GgufFile {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const decoder = new TextDecoder("utf-8", { fatal: true });
  let at = 0;
  const need = (n: number): void => {
    if (at + n > bytes.length) throw new RangeError(`GGUF file cut short at byte ${at} (needs ${n} more of ${bytes.length})`);
  };
  const u32 = (): number => {
    need(4);
    const v = view.getUint32(at, true);
    at += 4;
    return v;
  };
  const u64 = (): number => {
    need(8);
    const v = view.getBigUint64(at, true);
    at += 8;
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError(`GGUF count or size ${v} too large`);
    return Number(v);
  };
  const str = (): string => {
    const n = u64();
    need(n);
    const s = decoder.decode(bytes.subarray(at, at + n));
    at += n;
    return s;
  };
  const typeName = (code: number): keyof typeof GGUF_VALUE_TYPES => {
    const name = (Object.keys(GGUF_VALUE_TYPES) as (keyof typeof GGUF_VALUE_TYPES)[]).find((k) => GGUF_VALUE_TYPES[k] === code);
    if (name === undefined) throw new RangeError(`Unknown GGUF value type ${code} at byte ${at - 4}`);
    return name;
  };
  const scalar = (type: GgufScalarType): GgufScalar => {
    const sizes: Record<GgufScalarType, number> = { uint8: 1, int8: 1, uint16: 2, int16: 2, uint32: 4, int32: 4, float32: 4, bool: 1, string: 0, uint64: 8, int64: 8, float64: 8 };
    if (type === "string") return str();
    need(sizes[type]);
    const p = at;
    at += sizes[type];
    switch (type) {
      case "uint8":
        return view.getUint8(p);
      case "int8":
        return view.getInt8(p);
      case "uint16":
        return view.getUint16(p, true);
      case "int16":
        return view.getInt16(p, true);
      case "uint32":
        return view.getUint32(p, true);
      case "int32":
        return view.getInt32(p, true);
      case "float32":
        return view.getFloat32(p, true);
      case "bool":
        return view.getUint8(p) !== 0;
      case "uint64":
        return view.getBigUint64(p, true);
      case "int64":
        return view.getBigInt64(p, true);
      case "float64":
        return view.getFloat64(p, true);
    }
  };
  if (u32() !== GGUF_MAGIC) throw new RangeError("Not a GGUF file: the first 4 bytes are not `GGUF`");
  const version = u32();
  if (version !== 2 && version !== 3) throw new RangeError(`Unsupported GGUF version ${version}`);
  const tensorCount = u64();
  const kvCount = u64();
  const metadata = new Map<string, GgufValue>();
  for (let i = 0; i < kvCount; i++) {
    const key = str();
    const type = typeName(u32());
    if (type === "array") {
      const itemType = typeName(u32());
      if (itemType === "array") throw new RangeError(`GGUF metadata \`${key}\`: nested arrays are not read`);
      const n = u64();
      const values: GgufScalar[] = [];
      for (let j = 0; j < n; j++) values.push(scalar(itemType));
      metadata.set(key, { type, itemType, values });
    } else {
      metadata.set(key, { type, value: scalar(type) });
    }
  }
  const infos: { name: string; dims: number[]; type: number; offset: number }[] = [];
  for (let i = 0; i < tensorCount; i++) {
    const name = str();
    const nDims = u32();
    const dims: number[] = [];
    for (let d = 0; d < nDims; d++) dims.push(u64());
    infos.push({ name, dims, type: u32(), offset: u64() });
  }
  const align = metadata.get("general.alignment");
  const alignment = align?.type === "uint32" ? (align.value as number) : GGUF_DEFAULT_ALIGNMENT;
  const dataOffset = Math.ceil(at / alignment) * alignment;
  const tensors = infos.map((t) => ({ name: t.name, dims: t.dims, type: t.type, fileOffset: dataOffset + t.offset }));
  for (const t of tensors) {
    // The sizes of the types this module writes; others are not checked.
    const size = t.type === GGML_TYPES.f32 ? 4 : t.type === GGML_TYPES.f16 ? 2 : 0;
    const end = t.fileOffset + size * t.dims.reduce((a, b) => a * b, 1);
    if (end > bytes.length) throw new RangeError(`GGUF file cut short: tensor \`${t.name}\` ends at byte ${end}, the file has ${bytes.length}`);
  }
  return { version, metadata, tensors, dataOffset };
}

/** Half-precision bits of the single-precision number whose bits are `x` (see {@link float16Bits}). */
function halfOfSingleBits(x: number): number {
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal half (or zero): shift the mantissa, with its implicit bit, into place.
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let h = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && (h & 1) === 1)) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  // A carry out of the mantissa rolls into the exponent, which is still the right value.
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1) === 1)) h++;
  return sign | h;
}

/**
 * IEEE 754 half-precision bits of each value, after rounding it to single precision (round to
 * nearest, ties to even; overflow to ±∞; NaN stays NaN).
 * @example
 * float16Bits(new Float32Array([1, -2])); // Uint16Array [0x3c00, 0xc000]
 */
export function float16Bits(values: Float32Array): Uint16Array {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  const out = new Uint16Array(values.length);
  for (let i = 0; i < bits.length; i++) out[i] = halfOfSingleBits(bits[i]!);
  return out;
}

/**
 * Fills `out` with values uniform in [-a, a) from `seed`: sfc32 (the generator of sim/random.ts,
 * seeded the same way) unrolled into local variables, which is what keeps generating a few
 * million weights well under a second.
 */
function fillUniform(out: Float32Array, seed: number, a: number): void {
  let x = mix32(seed, 1);
  let y = mix32(seed, 2);
  let z = mix32(seed, 3);
  let c = 1;
  const scale = (2 * a) / 4294967296;
  for (let i = -12; i < out.length; i++) {
    const t = (((x + y) | 0) + c) | 0;
    c = (c + 1) | 0;
    x = y ^ (y >>> 9);
    y = (z + (z << 3)) | 0;
    z = (z << 21) | (z >>> 11);
    z = (z + t) | 0;
    if (i >= 0) out[i] = (t >>> 0) * scale - a;
  }
}

/** Shape of the tiny model. */
export interface TinyLlamaOptions {
  /** Seed of the weights: the same seed gives the same bytes. @default 0 */
  seed?: number;
  /** Transformer blocks. @default 4 */
  layers?: number;
  /** Width of the residual stream. @default 256 */
  embeddingLength?: number;
  /** Attention heads; `embeddingLength` must be a multiple of it. @default 4 */
  heads?: number;
  /** Key/value heads (grouped-query attention); divides `heads`. @default 2 */
  kvHeads?: number;
  /** Hidden width of the feed-forward block. @default 768 */
  feedForwardLength?: number;
  /** Trained context length written in the file (llama.cpp's upper bound per sequence). @default 8192 */
  contextLength?: number;
}

/** The defaults of {@link TinyLlamaOptions}. */
export const DEFAULT_TINY_LLAMA: Readonly<Required<TinyLlamaOptions>> = Object.freeze({
  seed: 0,
  layers: 4,
  embeddingLength: 256,
  heads: 4,
  kvHeads: 2,
  feedForwardLength: 768,
  contextLength: 8192,
});

/** Vocabulary size of the tiny model: 256 byte tokens, the 5 control tokens and the learned merges. */
export function tinyLlamaVocabularySize(): number {
  return tinyLlamaTokenizer().vocabularySize;
}
/** Token id of the beginning-of-text control token. */
export const TINY_LLAMA_BOS = 256;
/** Token id of the end-of-text control token (the model's end of generation, with `<|eot_id|>`). */
export const TINY_LLAMA_EOS = 257;

function positiveInt(name: string, v: number, max = 1 << 20): number {
  if (!Number.isSafeInteger(v) || v < 1 || v > max) throw new RangeError(`Expected \`${name}\` to be an integer from 1 to ${max}, got ${String(v)}`);
  return v;
}

/** Resolves and checks {@link TinyLlamaOptions}. */
export function resolveTinyLlama(options: TinyLlamaOptions = {}): Required<TinyLlamaOptions> {
  const o = { ...DEFAULT_TINY_LLAMA, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) } as Required<TinyLlamaOptions>;
  if (!Number.isSafeInteger(o.seed) || o.seed < 0 || o.seed > 0xffffffff) throw new RangeError(`Expected \`seed\` to be an integer from 0 to 4294967295, got ${String(o.seed)}`);
  positiveInt("layers", o.layers, 64);
  positiveInt("embeddingLength", o.embeddingLength, 8192);
  positiveInt("heads", o.heads, 256);
  positiveInt("kvHeads", o.kvHeads, 256);
  positiveInt("feedForwardLength", o.feedForwardLength, 65536);
  positiveInt("contextLength", o.contextLength, 1 << 20);
  if (o.embeddingLength % o.heads !== 0) throw new RangeError(`Expected \`embeddingLength\` (${o.embeddingLength}) to be a multiple of \`heads\` (${o.heads})`);
  if (o.heads % o.kvHeads !== 0) throw new RangeError(`Expected \`kvHeads\` (${o.kvHeads}) to divide \`heads\` (${o.heads})`);
  if ((o.embeddingLength / o.heads) % 2 !== 0) throw new RangeError(`Expected the head size (\`embeddingLength\` / \`heads\` = ${o.embeddingLength / o.heads}) to be even (rotary embeddings rotate pairs)`);
  return o;
}

/**
 * The bytes of the tiny llama GGUF (see the file header): llama.cpp's `llama` architecture,
 * F16 weights drawn uniformly with standard deviation 1/√fan-in from `seed` (each tensor from
 * its own stream, so changing one shape leaves the others' values alone), F32 norms of 1, the
 * output projection tied to the token embedding. Deterministic: same options → same bytes.
 * @throws RangeError for options out of range (see {@link TinyLlamaOptions})
 * @example
 * writeFileSync("tiny.gguf", tinyLlamaGguf({ seed: 1 }));
 */
export function tinyLlamaGguf(options: TinyLlamaOptions = {}): Uint8Array {
  const o = resolveTinyLlama(options);
  const headDim = o.embeddingLength / o.heads;
  const kvWidth = headDim * o.kvHeads;
  const bpe = tinyLlamaTokenizer().model;
  const tokens = bpe.tokens;
  const vocabularySize = tokens.length;
  // 1 = normal, 3 = control (llama.cpp's llama_token_type).
  const tokenTypes = tokens.map((_, i) => (i >= 256 && i < 256 + TINY_LLAMA_CONTROL_TOKENS.length ? 3 : 1));
  const u32 = (value: number): GgufValue => ({ type: "uint32", value });
  const metadata: [string, GgufValue][] = [
    ["general.architecture", { type: "string", value: "llama" }],
    ["general.name", { type: "string", value: `prefix-router tiny llama (seed ${o.seed})` }],
    ["general.file_type", u32(1)], // mostly F16
    ["general.alignment", u32(GGUF_DEFAULT_ALIGNMENT)],
    ["llama.vocab_size", u32(vocabularySize)],
    ["llama.context_length", u32(o.contextLength)],
    ["llama.embedding_length", u32(o.embeddingLength)],
    ["llama.block_count", u32(o.layers)],
    ["llama.feed_forward_length", u32(o.feedForwardLength)],
    ["llama.attention.head_count", u32(o.heads)],
    ["llama.attention.head_count_kv", u32(o.kvHeads)],
    ["llama.attention.layer_norm_rms_epsilon", { type: "float32", value: 1e-5 }],
    ["llama.rope.dimension_count", u32(headDim)],
    ["llama.rope.freq_base", { type: "float32", value: 10000 }],
    ["tokenizer.ggml.model", { type: "string", value: "gpt2" }],
    // Qwen2's split, for which llama.cpp leaves `clean_spaces` off (detokenizing gives the bytes
    // back) and which Hugging Face's tokenizer.json expresses exactly (tokenizer-files.ts).
    ["tokenizer.ggml.pre", { type: "string", value: "qwen2" }],
    ["tokenizer.ggml.tokens", { type: "array", itemType: "string", values: tokens }],
    ["tokenizer.ggml.token_type", { type: "array", itemType: "int32", values: tokenTypes }],
    ["tokenizer.ggml.merges", { type: "array", itemType: "string", values: bpe.merges.map(([a, b]) => `${a} ${b}`) }],
    ["tokenizer.ggml.bos_token_id", u32(TINY_LLAMA_BOS)],
    ["tokenizer.ggml.eos_token_id", u32(TINY_LLAMA_EOS)],
    ["tokenizer.ggml.add_bos_token", { type: "bool", value: false }],
    ["tokenizer.ggml.add_eos_token", { type: "bool", value: false }],
  ];
  let stream = 0;
  const weight = (name: string, nIn: number, nOut: number, std = 1 / Math.sqrt(nIn)): GgufTensor => {
    const values = new Float32Array(nIn * nOut);
    fillUniform(values, mix32(o.seed, ++stream), std * Math.sqrt(3));
    return { name, dims: [nIn, nOut], type: "f16", data: float16Bits(values) };
  };
  const norm = (name: string): GgufTensor => ({ name, dims: [o.embeddingLength], type: "f32", data: new Float32Array(o.embeddingLength).fill(1) });
  const tensors: GgufTensor[] = [weight("token_embd.weight", o.embeddingLength, vocabularySize, 1), norm("output_norm.weight")];
  for (let l = 0; l < o.layers; l++) {
    tensors.push(
      norm(`blk.${l}.attn_norm.weight`),
      weight(`blk.${l}.attn_q.weight`, o.embeddingLength, o.embeddingLength),
      weight(`blk.${l}.attn_k.weight`, o.embeddingLength, kvWidth),
      weight(`blk.${l}.attn_v.weight`, o.embeddingLength, kvWidth),
      weight(`blk.${l}.attn_output.weight`, o.embeddingLength, o.embeddingLength),
      norm(`blk.${l}.ffn_norm.weight`),
      weight(`blk.${l}.ffn_gate.weight`, o.embeddingLength, o.feedForwardLength),
      weight(`blk.${l}.ffn_up.weight`, o.embeddingLength, o.feedForwardLength),
      weight(`blk.${l}.ffn_down.weight`, o.feedForwardLength, o.embeddingLength),
    );
  }
  return writeGguf({ metadata, tensors });
}
