/**
 * The GGUF writer and reader, half-precision rounding, and the tiny llama model: its bytes are
 * a pure function of the options, its layout is what llama.cpp reads (checked here by the
 * project's reader; llama.cpp itself loads it in real-engines.test.ts).
 */
import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { tinyLlamaTokenizer } from "../../../../tools/fleet/llama/bpe.js";
import {
  DEFAULT_TINY_LLAMA,
  GGUF_VERSION,
  TINY_LLAMA_BOS,
  TINY_LLAMA_EOS,
  float16Bits,
  readGguf,
  tinyLlamaGguf,
  tinyLlamaVocabularySize,
  writeGguf,
  type GgufScalarType,
  type GgufTensor,
  type GgufValue,
} from "../../../../tools/fleet/llama/gguf.js";

/** The value of IEEE half-precision bits (the reference decoder). */
function halfValue(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant === 0 ? sign * Infinity : Number.NaN;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

function half(x: number): number {
  return float16Bits(new Float32Array([x]))[0]!;
}

describe("float16Bits", () => {
  it("converts known values", () => {
    expect([1, -2, 0.5, 65504, 65520, 1e6, -1e6, 0, 2 ** -24, 2 ** -25, 2 ** -26].map(half)).toEqual([
      0x3c00, 0xc000, 0x3800, 0x7bff, 0x7c00, 0x7c00, 0xfc00, 0x0000, 0x0001, 0x0000, 0x0000,
    ]);
    expect(half(-0)).toBe(0x8000);
    expect(half(Infinity)).toBe(0x7c00);
    expect(halfValue(half(Number.NaN))).toBeNaN();
    // Ties go to the even mantissa: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10.
    expect(half(1 + 2 ** -11)).toBe(0x3c00);
    expect(half(1 + 3 * 2 ** -11)).toBe(0x3c02);
    expect(half(0.1)).toBe(0x2e66);
  });

  it("rounds to the nearest half-precision value", () => {
    fc.assert(
      fc.property(fc.float({ min: -60000, max: 60000, noNaN: true }), (x) => {
        const h = half(x);
        const v = halfValue(h);
        const f = Math.fround(x);
        // No half-precision value lies strictly closer to f than v does.
        for (const n of [h - 1, h + 1]) {
          if (n < 0 || n > 0xffff || (n & 0x7c00) === 0x7c00) continue;
          expect(Math.abs(halfValue(n) - f)).toBeGreaterThanOrEqual(Math.abs(v - f));
        }
        // Exactly representable values come back unchanged.
        expect(halfValue(half(v))).toBe(v);
      }),
    );
  });
});

const SCALARS: Record<GgufScalarType, fc.Arbitrary<number | bigint | boolean | string>> = {
  uint8: fc.integer({ min: 0, max: 255 }),
  int8: fc.integer({ min: -128, max: 127 }),
  uint16: fc.integer({ min: 0, max: 65535 }),
  int16: fc.integer({ min: -32768, max: 32767 }),
  uint32: fc.integer({ min: 0, max: 2 ** 32 - 1 }),
  int32: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
  float32: fc.float({ noNaN: true }).map(Math.fround),
  float64: fc.double({ noNaN: true }),
  bool: fc.boolean(),
  string: fc.string({ unit: "grapheme" }),
  uint64: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
  int64: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
};
const TYPES = Object.keys(SCALARS) as GgufScalarType[];

const metadataValue: fc.Arbitrary<GgufValue> = fc.constantFrom(...TYPES).chain((type) =>
  fc.oneof(
    SCALARS[type].map((value): GgufValue => ({ type, value })),
    fc.array(SCALARS[type], { maxLength: 5 }).map((values): GgufValue => ({ type: "array", itemType: type, values })),
  ),
);

describe("writeGguf / readGguf", () => {
  it("reads back every metadata type, in order, and the tensor table", () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.tuple(fc.string({ minLength: 1 }), metadataValue), { selector: ([k]) => k, maxLength: 8 }), (metadata) => {
        const tensors: GgufTensor[] = [
          { name: "a", dims: [3], type: "f32", data: new Float32Array([1, 2, 3]) },
          { name: "b", dims: [2, 2], type: "f16", data: new Uint16Array([0x3c00, 0, 0x8000, 0x7bff]) },
        ];
        const file = readGguf(writeGguf({ metadata, tensors }));
        expect(file.version).toBe(GGUF_VERSION);
        expect([...file.metadata.entries()]).toEqual(metadata.map(([k, v]) => [k, v.type === "float32" ? { ...v, value: Math.fround(v.value as number) } : v]));
        expect(file.tensors.map((t) => [t.name, t.dims, t.type])).toEqual([
          ["a", [3], 0],
          ["b", [2, 2], 1],
        ]);
      }),
    );
  });

  it("lays out the header, the tensor table and the aligned data as GGUF specifies", () => {
    const bytes = writeGguf({
      metadata: [
        ["general.architecture", { type: "string", value: "llama" }],
        ["general.alignment", { type: "uint32", value: 64 }],
      ],
      tensors: [
        { name: "x", dims: [3], type: "f32", data: new Float32Array([1.5, -2, 3]) },
        { name: "y", dims: [5], type: "f16", data: new Uint16Array([1, 2, 3, 4, 5]) },
      ],
    });
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    expect(new TextDecoder().decode(bytes.subarray(0, 4))).toBe("GGUF");
    expect(view.getUint32(4, true)).toBe(3);
    expect(view.getBigUint64(8, true)).toBe(2n); // tensors
    expect(view.getBigUint64(16, true)).toBe(2n); // metadata entries
    // The first key: u64 length, bytes, then the u32 value type (8 = string).
    expect(view.getBigUint64(24, true)).toBe(BigInt("general.architecture".length));
    expect(view.getUint32(32 + 20, true)).toBe(8);
    const file = readGguf(bytes);
    expect(file.dataOffset % 64).toBe(0);
    const [x, y] = file.tensors;
    expect(x!.fileOffset).toBe(file.dataOffset);
    expect(y!.fileOffset).toBe(file.dataOffset + 64);
    expect([0, 4, 8].map((o) => view.getFloat32(x!.fileOffset + o, true))).toEqual([1.5, -2, 3]);
    expect([0, 2, 4, 6, 8].map((o) => view.getUint16(y!.fileOffset + o, true))).toEqual([1, 2, 3, 4, 5]);
    expect(bytes.length % 64).toBe(0);
    expect(bytes.subarray(x!.fileOffset + 12, y!.fileOffset).every((b) => b === 0)).toBe(true);
  });

  it("refuses what it cannot write faithfully, and files that are not GGUF", () => {
    const t = (data: Float32Array | Uint16Array, type: "f32" | "f16" = "f32"): GgufTensor => ({ name: "t", dims: [2, 2], type, data });
    expect(() => writeGguf({ metadata: [["k", { type: "uint8", value: 256 }]], tensors: [] })).toThrow(TypeError);
    expect(() => writeGguf({ metadata: [["k", { type: "int32", value: 1.5 }]], tensors: [] })).toThrow(TypeError);
    expect(() => writeGguf({ metadata: [["k", { type: "string", value: 1 }]], tensors: [] })).toThrow("a string cannot hold 1");
    expect(() => writeGguf({ metadata: [["k", { type: "uint64", value: -1n }]], tensors: [] })).toThrow(TypeError);
    expect(() => writeGguf({ metadata: [["k", { type: "bool", value: true }], ["k", { type: "bool", value: false }]], tensors: [] })).toThrow("Duplicate GGUF metadata key `k`");
    expect(() => writeGguf({ metadata: [["general.alignment", { type: "uint32", value: 24 }]], tensors: [] })).toThrow(RangeError);
    expect(() => writeGguf({ metadata: [], tensors: [t(new Float32Array(3))] })).toThrow("expected 4 f32 values");
    expect(() => writeGguf({ metadata: [], tensors: [t(new Float32Array(4), "f16")] })).toThrow(RangeError);
    expect(() => writeGguf({ metadata: [], tensors: [t(new Float32Array(4)), t(new Float32Array(4))] })).toThrow("Duplicate GGUF tensor `t`");
    expect(() => readGguf(new TextEncoder().encode("GGML and more bytes than a header"))).toThrow("Not a GGUF file");
    const good = writeGguf({ metadata: [["k", { type: "string", value: "value" }]], tensors: [t(new Float32Array(4))] });
    expect(() => readGguf(good.subarray(0, 30))).toThrow("GGUF file cut short at byte 24");
    expect(() => readGguf(good.subarray(0, good.length - 20))).toThrow("GGUF file cut short: tensor `t` ends at byte");
  });
});

describe("tinyLlamaGguf", () => {
  it("is a pure function of its options: same seed, same bytes; another seed, other weights only", () => {
    const a = tinyLlamaGguf({ seed: 1 });
    expect(Buffer.compare(a, tinyLlamaGguf({ seed: 1 }))).toBe(0);
    const b = tinyLlamaGguf({ seed: 2 });
    expect(b.length).toBe(a.length);
    expect(Buffer.compare(a, b)).not.toBe(0);
    const [fa, fb] = [readGguf(a), readGguf(b)];
    expect(fb.tensors).toEqual(fa.tensors);
    expect([...fb.metadata.keys()]).toEqual([...fa.metadata.keys()]);
  });

  it("pins the default model's bytes (a change to the generator changes this on purpose)", () => {
    const bytes = tinyLlamaGguf();
    expect(bytes.length).toBe(6_827_680);
    expect(createHash("sha256").update(bytes).digest("hex")).toBe("afc9d61540d2bc42f854f7b69ba967363486f075b227da584cda69384a4b3a35");
  });

  it("describes a llama model with a byte-level BPE vocabulary llama.cpp reads", () => {
    const file = readGguf(tinyLlamaGguf());
    const value = (k: string): unknown => {
      const v = file.metadata.get(k);
      if (v === undefined) throw new Error(`missing ${k}`);
      return v.type === "array" ? v.values : v.value;
    };
    const d = DEFAULT_TINY_LLAMA;
    expect(value("general.architecture")).toBe("llama");
    expect(value("llama.context_length")).toBe(d.contextLength);
    expect(value("llama.embedding_length")).toBe(d.embeddingLength);
    expect(value("llama.block_count")).toBe(d.layers);
    expect(value("llama.attention.head_count")).toBe(d.heads);
    expect(value("llama.attention.head_count_kv")).toBe(d.kvHeads);
    expect(value("llama.rope.dimension_count")).toBe(d.embeddingLength / d.heads);
    expect(value("tokenizer.ggml.model")).toBe("gpt2");
    expect(value("tokenizer.ggml.pre")).toBe("qwen2");
    const bpe = tinyLlamaTokenizer().model;
    expect(value("tokenizer.ggml.merges")).toEqual(bpe.merges.map(([a, b]) => `${a} ${b}`));
    expect([value("tokenizer.ggml.bos_token_id"), value("tokenizer.ggml.eos_token_id")]).toEqual([TINY_LLAMA_BOS, TINY_LLAMA_EOS]);
    expect([value("tokenizer.ggml.add_bos_token"), value("tokenizer.ggml.add_eos_token")]).toEqual([false, false]);
    const tokens = value("tokenizer.ggml.tokens") as string[];
    const vocabularySize = tinyLlamaVocabularySize();
    expect(tokens).toEqual(bpe.tokens);
    // GPT-2's byte characters: printable bytes are themselves, the rest are shifted past U+00FF.
    expect(new Set(tokens).size).toBe(vocabularySize);
    expect([tokens[0x61], tokens[0x20], tokens[0x0a], tokens[0xe9]]).toEqual(["a", "\u0120", "\u010a", "é"]);
    expect(tokens.slice(0, 256).every((t) => [...t].length === 1)).toBe(true);
    expect((value("tokenizer.ggml.token_type") as number[]).slice(254, 262)).toEqual([1, 1, 3, 3, 3, 3, 3, 1]);
    expect(tokens.slice(256, 261)).toEqual(["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]);
    const names = file.tensors.map((t) => t.name);
    expect(names.slice(0, 2)).toEqual(["token_embd.weight", "output_norm.weight"]);
    expect(names).toHaveLength(2 + 9 * d.layers);
    const byName = new Map(file.tensors.map((t) => [t.name, t]));
    const headDim = d.embeddingLength / d.heads;
    expect(byName.get("token_embd.weight")!.dims).toEqual([d.embeddingLength, vocabularySize]);
    expect(byName.get("blk.3.attn_k.weight")!.dims).toEqual([d.embeddingLength, headDim * d.kvHeads]);
    expect(byName.get("blk.0.ffn_down.weight")!.dims).toEqual([d.feedForwardLength, d.embeddingLength]);
    expect(byName.get("blk.0.attn_norm.weight")!.type).toBe(0);
    expect(byName.get("blk.0.attn_q.weight")!.type).toBe(1);
  });

  it("rejects shapes llama.cpp cannot run, naming the option", () => {
    expect(() => tinyLlamaGguf({ heads: 3 })).toThrow("Expected `embeddingLength` (256) to be a multiple of `heads` (3)");
    expect(() => tinyLlamaGguf({ kvHeads: 3 })).toThrow("Expected `kvHeads` (3) to divide `heads` (4)");
    expect(() => tinyLlamaGguf({ layers: 0 })).toThrow(RangeError);
    expect(() => tinyLlamaGguf({ seed: -1 })).toThrow("Expected `seed` to be an integer from 0 to 4294967295, got -1");
  });
});
