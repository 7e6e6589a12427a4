import fc from "fast-check";
import xxhash from "xxhash-wasm";
import { describe, expect, it } from "vitest";
import { textPrefix } from "../../../src/routing-input.js";
import { type BlockChain, ChainHasher } from "../../../src/strategies/longest-prefix/chain.js";
import { oracleBytesPrefix } from "../../bytes-prefix-oracle.js";
import { jsonText } from "../../json-texts.js";

const api = await xxhash();

/**
 * The chain as documented, computed the slow way: the whole routing input first (text through
 * `textPrefix`, bytes through the parse-everything implementation), then xxhash-wasm per block.
 */
function reference(mode: "text" | "bytes", body: unknown, tenant: string | undefined, model: string | undefined, max: number, blockSize: number, seed: bigint) {
  let input: Uint8Array;
  if (mode === "text") {
    const s = textPrefix(body, max);
    input = new Uint8Array(Buffer.from(s, "utf16le"));
  } else {
    input = oracleBytesPrefix(body, max);
  }
  const size = mode === "text" ? 2 * blockSize : blockSize;
  const t = [...(tenant ?? "")].map((c) => c.charCodeAt(0));
  const m = model === undefined ? [0xff, 0xff, 0xff, 0xff] : [...u32(new TextEncoder().encode(model).length), ...new TextEncoder().encode(model)];
  const header = Uint8Array.from([0x4c, 1, mode.charCodeAt(0), t.length, ...t, ...m, ...u32(blockSize)]);
  const h = api.h64Raw(header, seed);
  const mix = 0;
  let k = Number(h >> 32n) ^ Number(h & 0xffff_ffffn);
  const keys: number[] = [];
  let at = 0;
  for (; at + size <= input.length; at += size) {
    k = api.h32Raw(input.subarray(at, at + size), (k ^ mix) >>> 0) | 0;
    keys.push(k);
  }
  const lastKey = at < input.length ? api.h32Raw(input.subarray(at), (k ^ mix) >>> 0) | 0 : k;
  return { keys, lastKey, length: input.length };
}

function u32(v: number): number[] {
  return [v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, v >>> 24];
}

const simple = (c: BlockChain | undefined) => (c === undefined ? undefined : { keys: Array.from(c.keys.subarray(0, c.n)), lastKey: c.lastKey, length: c.length });

describe("block chains", () => {
  it("equal the documented chain over the routing input, in both modes, hashed as the input is written (property)", () => {
    const piece = fc.string({ unit: fc.constantFrom("a", "é", "😀", "\ud800", "\u0000", "x", "数", " "), maxLength: 700 });
    const chat = fc.record({ model: fc.constantFrom("m", "é"), messages: fc.array(fc.record({ role: fc.constantFrom("user", "system"), content: piece }), { maxLength: 4 }) });
    const tenant = fc.option(fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), minLength: 1, maxLength: 64 }), { nil: undefined });
    const blockSize = fc.constantFrom(64, 65, 66, 67, 256);
    fc.assert(
      fc.property(chat, jsonText, tenant, blockSize, fc.integer({ min: 1024, max: 1500 }), (body, t, who, size, max) => {
        const seed = 7n;
        const text = new ChainHasher(api, seed, "text", { maxInputLength: max, blockSize: size });
        const expected = reference("text", body, who, body.model, max, size, seed);
        expect(simple(text.chain(body, who, body.model))).toEqual(expected.length === 0 ? undefined : expected);
        const bytes = new ChainHasher(api, seed, "bytes", { maxInputLength: max, blockSize: size });
        for (const b of [body, t, new TextEncoder().encode(`${t}${t}${t}`)]) {
          const exp = reference("bytes", b, who, undefined, max, size, seed);
          expect(simple(bytes.chain(b, who, undefined))).toEqual(exp.length === 0 ? undefined : exp);
        }
      }),
      { numRuns: 500 },
    );
  });
});
