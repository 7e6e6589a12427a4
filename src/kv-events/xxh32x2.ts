/**
 * Two XXH32 lanes of the same input in one pass: `out[0]` = XXH32(input, seedA), `out[1]` =
 * XXH32(input, seedB), each equal to `../internal/xxh32.ts`'s (and xxhash-wasm's `h32Raw`).
 * The input's words are read once for both lanes' eight accumulators, which saves the
 * second pass's loads and loop overhead: the 64-bit keys of `block-hash.ts` and of the tokenizer's
 * segment cache are these two lanes. Input must be aligned (`start` a multiple of 4, `words` over
 * `bytes` from its `byteOffset`) on a little-endian host; otherwise it is two calls of `xxh32`.
 */
import { LITTLE_ENDIAN, xxh32 } from "../internal/xxh32.js";

const P1 = 0x9e3779b1 | 0;
const P2 = 0x85ebca77 | 0;
const P3 = 0xc2b2ae3d | 0;
const P4 = 0x27d4eb2f | 0;
const P5 = 0x165667b1 | 0;

/**
 * The two seeds of {@link xxh32x2} and where it writes their hashes: made once and reused for
 * every call (the hot paths hash thousands of blocks per request and allocate nothing per hash).
 */
export interface Xxh32Lanes {
  readonly seedA: number;
  readonly seedB: number;
  /** `out[0]` = XXH32(…, seedA), `out[1]` = XXH32(…, seedB), uint32: written by each call. */
  readonly out: Uint32Array;
}

/** The lanes of two seeds, with their output pair. */
export function xxh32Lanes(seedA: number, seedB: number): Xxh32Lanes {
  return { seedA, seedB, out: new Uint32Array(2) };
}

/** Writes XXH32(bytes[start..end), lanes.seedA) and (…, lanes.seedB) into `lanes.out[0]`, `lanes.out[1]` (uint32). */
export function xxh32x2(bytes: Uint8Array, words: Uint32Array | undefined, start: number, end: number, lanes: Xxh32Lanes): void {
  const seedA = lanes.seedA;
  const seedB = lanes.seedB;
  const out = lanes.out;
  if (words === undefined || !LITTLE_ENDIAN || (start & 3) !== 0) {
    out[0] = xxh32(bytes, words, start, end, seedA) >>> 0;
    out[1] = xxh32(bytes, words, start, end, seedB) >>> 0;
    return;
  }
  const length = end - start;
  let ha: number;
  let hb: number;
  let at = start;
  if (length >= 16) {
    let a1 = (seedA + P1 + P2) | 0;
    let a2 = (seedA + P2) | 0;
    let a3 = seedA | 0;
    let a4 = (seedA - P1) | 0;
    let b1 = (seedB + P1 + P2) | 0;
    let b2 = (seedB + P2) | 0;
    let b3 = seedB | 0;
    let b4 = (seedB - P1) | 0;
    let i = at >>> 2;
    const last = (end - 16) >>> 2;
    for (; i <= last; i += 4) {
      const w1 = Math.imul(words[i] as number, P2);
      const w2 = Math.imul(words[i + 1] as number, P2);
      const w3 = Math.imul(words[i + 2] as number, P2);
      const w4 = Math.imul(words[i + 3] as number, P2);
      a1 = (a1 + w1) | 0;
      a1 = Math.imul((a1 << 13) | (a1 >>> 19), P1);
      b1 = (b1 + w1) | 0;
      b1 = Math.imul((b1 << 13) | (b1 >>> 19), P1);
      a2 = (a2 + w2) | 0;
      a2 = Math.imul((a2 << 13) | (a2 >>> 19), P1);
      b2 = (b2 + w2) | 0;
      b2 = Math.imul((b2 << 13) | (b2 >>> 19), P1);
      a3 = (a3 + w3) | 0;
      a3 = Math.imul((a3 << 13) | (a3 >>> 19), P1);
      b3 = (b3 + w3) | 0;
      b3 = Math.imul((b3 << 13) | (b3 >>> 19), P1);
      a4 = (a4 + w4) | 0;
      a4 = Math.imul((a4 << 13) | (a4 >>> 19), P1);
      b4 = (b4 + w4) | 0;
      b4 = Math.imul((b4 << 13) | (b4 >>> 19), P1);
    }
    at = i << 2;
    ha = (((a1 << 1) | (a1 >>> 31)) + ((a2 << 7) | (a2 >>> 25)) + ((a3 << 12) | (a3 >>> 20)) + ((a4 << 18) | (a4 >>> 14))) | 0;
    hb = (((b1 << 1) | (b1 >>> 31)) + ((b2 << 7) | (b2 >>> 25)) + ((b3 << 12) | (b3 >>> 20)) + ((b4 << 18) | (b4 >>> 14))) | 0;
  } else {
    ha = (seedA + P5) | 0;
    hb = (seedB + P5) | 0;
  }
  ha = (ha + length) | 0;
  hb = (hb + length) | 0;
  for (; at + 4 <= end; at += 4) {
    const w = Math.imul(words[at >>> 2] as number, P3);
    ha = (ha + w) | 0;
    ha = Math.imul((ha << 17) | (ha >>> 15), P4);
    hb = (hb + w) | 0;
    hb = Math.imul((hb << 17) | (hb >>> 15), P4);
  }
  for (; at < end; at++) {
    const w = Math.imul(bytes[at] as number, P5);
    ha = (ha + w) | 0;
    ha = Math.imul((ha << 11) | (ha >>> 21), P1);
    hb = (hb + w) | 0;
    hb = Math.imul((hb << 11) | (hb >>> 21), P1);
  }
  out[0] = avalanche(ha);
  out[1] = avalanche(hb);
}

function avalanche(h: number): number {
  h ^= h >>> 15;
  h = Math.imul(h, P2);
  h ^= h >>> 13;
  h = Math.imul(h, P3);
  return (h ^ (h >>> 16)) >>> 0;
}
