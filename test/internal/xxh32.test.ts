import fc from "fast-check";
import xxhash from "xxhash-wasm";
import { describe, expect, it } from "vitest";
import { xxh32 } from "../../src/internal/xxh32.js";

const api = await xxhash();

/** `bytes` copied at `offset` into a fresh, 4-aligned buffer, with the word view the fast path reads. */
function placed(bytes: Uint8Array, offset: number): { data: Uint8Array; words: Uint32Array } {
  const buffer = new ArrayBuffer((offset + bytes.length + 3) & ~3);
  const data = new Uint8Array(buffer);
  data.set(bytes, offset);
  return { data, words: new Uint32Array(buffer) };
}

describe("xxh32", () => {
  it("gives the reference answers", () => {
    // XXH32 test vectors (xxHash's sanity checks and common published values).
    const enc = new TextEncoder();
    const h = (s: string, seed = 0) => xxh32(enc.encode(s), undefined, 0, enc.encode(s).length, seed) >>> 0;
    expect(h("")).toBe(0x02cc5d05);
    expect(h("", 0x9e3779b1)).toBe(0x36b78ae7);
    expect(h("a")).toBe(0x550d7456);
    expect(h("abc")).toBe(0x32d153ff);
    expect(h("Nobody inspects the spammish repetition")).toBe(0xe2293b2f);
  });

  it("equals xxhash-wasm's h32Raw on every length, offset, seed and path", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), fc.integer({ min: 0, max: 7 }), fc.integer({ min: 0, max: 0xffff_ffff }), (bytes, offset, seed) => {
        const expected = api.h32Raw(bytes, seed);
        const { data, words } = placed(bytes, offset);
        expect(xxh32(data, words, offset, offset + bytes.length, seed) >>> 0).toBe(expected);
        expect(xxh32(data, undefined, offset, offset + bytes.length, seed) >>> 0).toBe(expected);
        // Signed seeds (chain keys are int32) hash as their uint32 bits.
        expect(xxh32(data, words, offset, offset + bytes.length, seed | 0) >>> 0).toBe(expected);
      }),
      { numRuns: 2000 },
    );
  });
});
