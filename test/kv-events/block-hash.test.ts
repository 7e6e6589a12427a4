import xxhash from "xxhash-wasm";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BlockHasher } from "../../src/kv-events/block-hash.js";

const api = await xxhash();

/** The chain as documented, the slow way: the bytes written out, xxhash-wasm's XXH32 per lane. */
function reference(tokens: number[], B: number, keys: { model?: string; lora?: string; cacheSalt?: string }): number[] {
  const enc = new TextEncoder();
  const parts = [keys.model, keys.lora, keys.cacheSalt].map((s) => (s === undefined ? undefined : enc.encode(s)));
  const head: number[] = [0, 0, 0, 0, 0, 0, 0, 0, 0x4b, 1, 0, 0, B & 255, (B >> 8) & 255, 0, 0];
  for (const p of parts) {
    const n = p === undefined ? 0xffffffff : p.length;
    head.push(n & 255, (n >>> 8) & 255, (n >>> 16) & 255, n >>> 24, ...(p ?? []));
  }
  const lane = (bytes: Uint8Array, seed: number) => api.h32Raw(bytes, seed) >>> 0;
  let hi = lane(Uint8Array.from(head), 0x61c88647);
  let lo = lane(Uint8Array.from(head), 0x2545f491);
  const out: number[] = [];
  for (let t = 0; t + B <= tokens.length; t += B) {
    const words = Uint32Array.from([lo, hi, ...tokens.slice(t, t + B)]);
    const bytes = new Uint8Array(words.buffer);
    [hi, lo] = [lane(bytes, 0x61c88647), lane(bytes, 0x2545f491)];
    out.push(hi, lo);
  }
  return out;
}

function chain(tokens: number[], B: number, keys: { model?: string; lora?: string; cacheSalt?: string }): number[] {
  const h = new BlockHasher(B);
  const [hi, lo] = h.root({ model: keys.model, lora: keys.lora, cacheSalt: keys.cacheSalt });
  const out = new Uint32Array(2 * Math.floor(tokens.length / B));
  h.chain([hi, lo], tokens, 0, Math.floor(tokens.length / B), out);
  return Array.from(out);
}

describe("our block hash", () => {
  it("is the documented formula (xxhash-wasm reference, random tokens and keys)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat(200_000), { maxLength: 80 }),
        fc.integer({ min: 1, max: 20 }),
        fc.record({ model: fc.option(fc.string(), { nil: undefined }), lora: fc.option(fc.string(), { nil: undefined }), cacheSalt: fc.option(fc.string(), { nil: undefined }) }),
        (tokens, B, keys) => {
          expect(chain(tokens, B, keys)).toEqual(reference(tokens, B, keys));
        },
      ),
    );
  });

  it("known answers (changing them is a breaking change for every index)", () => {
    const tokens = Array.from({ length: 32 }, (_, i) => i * 1000 + 7);
    const hex = (xs: number[]) => xs.map((x) => x.toString(16).padStart(8, "0")).join("");
    expect(hex(chain(tokens, 16, { model: "llama" }))).toBe(KNOWN.plain);
    expect(hex(chain(tokens, 16, { model: "llama", lora: "sql" }))).toBe(KNOWN.lora);
    expect(hex(chain(tokens, 16, { model: "llama", cacheSalt: "tenant-1" }))).toBe(KNOWN.salt);
  });
});

const KNOWN = {
  plain: "b4e341049838bfc5f1be12da7a8bee3c",
  lora: "9cc5e6f4736c37f3e2df53812937a974",
  salt: "67fbe408a7a7ff056708ca0ed3a0b157",
};
