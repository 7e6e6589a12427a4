import fc from "fast-check";
import xxhash from "xxhash-wasm";
import { describe, expect, it } from "vitest";
import { textPrefix } from "../../../src/routing/routing-input.js";
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
  const hi = Number(h >> 32n) | 0;
  const mix = tenant === undefined ? 0 : hi;
  let k = hi ^ Number(h & 0xffff_ffffn);
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

describe("tenants", () => {
  const hasher = new ChainHasher(api, 0n, "bytes", { maxInputLength: 65_536, blockSize: 256 });
  const text = new TextEncoder().encode(`~${"the same shared system prompt ".repeat(40)}`);

  it("separates the two tenants whose folded 32-bit seeds collide, in every block", () => {
    // customer-48014 and customer-49068 have the same fold(xxh64(header)) in text mode, model "m",
    // router seed 0: before the fix every chain of theirs was identical.
    const chat = new ChainHasher(api, 0n, "text", { maxInputLength: 65_536, blockSize: 256 });
    expect(chat.seedOf("customer-48014", "m").key).toBe(chat.seedOf("customer-49068", "m").key);
    const body = { messages: [{ role: "system", content: "the same shared system prompt ".repeat(40) }] };
    const x = chat.chain(body, "customer-48014", "m") as BlockChain;
    const y = chat.chain(body, "customer-49068", "m") as BlockChain;
    for (let i = 0; i < x.n; i++) expect(x.keys[i]).not.toBe(y.keys[i]);
    expect(x.lastKey).not.toBe(y.lastKey);
  });

  it("gives 100,000 tenants 100,000 different chains for the same text", () => {
    // 32-bit keys: among 100,000 tenants about C(100000, 2) / 2^32 ≈ 1.2 pairs share a first-block
    // key by chance (the birthday bound), with or without the fix; what the fix guarantees is that
    // such a pair shares nothing after it — their next blocks are seeded with different high halves.
    const first = new Map<number, string>();
    const chains = new Set<string>();
    let firstCollisions = 0;
    for (let i = 0; i < 100_000; i++) {
      const tenant = `customer-${i}`;
      const c = hasher.chain(text, tenant, "m") as BlockChain;
      const k0 = c.keys[0] as number;
      const other = first.get(k0);
      if (other !== undefined) {
        firstCollisions++;
        const d = hasher.chain(text, other, "m") as BlockChain;
        expect(d.keys[1]).not.toBe(c.keys[1]);
      }
      first.set(k0, tenant);
      chains.add(`${k0},${c.keys[1]}`);
    }
    expect(chains.size).toBe(100_000);
    expect(firstCollisions).toBeLessThanOrEqual(5);
  });
});

describe("re-entrancy", () => {
  it("routes a body whose toJSON routes another request through the same router, in both modes", async () => {
    const { createRouter } = await import("prefix-router");
    const targets = [{ id: "a" }, { id: "b" }, { id: "c" }];
    for (const mode of ["text", "bytes"] as const) {
      for (const strategy of ["longest-prefix", "prefix-aware"] as const) {
        const router = await createRouter({ targets, strategy, mode });
        // Keys as a router that has routed nothing gives them: neither body shares a block with the other.
        const fresh = await createRouter({ targets, strategy, mode });
        const inner = { model: "m", messages: [{ role: "user", content: "inner ".repeat(400) }] };
        const innerKeys: (string | undefined)[] = [];
        const tool = {
          toJSON: () => {
            const lease = router.route({ body: inner });
            innerKeys.push(lease.key);
            lease.release();
            return { name: "t" };
          },
        };
        const body = (t: unknown) => (mode === "text" ? { model: "m", tools: [t], messages: [{ role: "user", content: "outer ".repeat(400) }] } : { a: t, z: "outer ".repeat(400) });
        const lease = router.route({ body: body(tool) });
        expect(lease.key).toBe(fresh.rank({ body: body({ name: "t" }) }).key);
        expect(innerKeys[0]).toBe(fresh.rank({ body: inner }).key);
        lease.release();
      }
    }
  });
});
