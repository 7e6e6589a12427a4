import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { BlockStored, KvEvent, KvEventBatch } from "../../src/kv-events/events.js";
import { KvBlockIndex, type KvBlockIndexOptions } from "../../src/kv-events/block-index.js";

const B = 4;
const NO_KEYS = { model: "m", lora: undefined, cacheSalt: undefined };

function makeIndex(o: Partial<KvBlockIndexOptions> = {}): KvBlockIndex {
  return new KvBlockIndex({ blockSize: B, capacityBlocks: 1 << 16, model: "m", pendingTtlMs: 1000, pendingCapacity: 256, ...o });
}

/**
 * A fake engine: its block hash is its own (a counter per distinct prefix, offset by the engine's
 * "seed"), so nothing in the index can rely on it matching ours.
 */
class FakeEngine {
  private readonly ids = new Map<string, bigint>();
  constructor(private readonly seed: bigint) {}
  hash(tokens: readonly number[], blocks: number, salt = ""): bigint {
    const key = `${salt}|${tokens.slice(0, blocks * B).join(",")}`;
    let h = this.ids.get(key);
    if (h === undefined) {
      h = (this.seed << 40n) + BigInt(this.ids.size + 1);
      this.ids.set(key, h);
    }
    return h;
  }
  /** BlockStored for blocks [from, to) of `tokens`. */
  stored(tokens: readonly number[], from: number, to: number, extra: { loraName?: string; cacheSalt?: string } = {}): BlockStored & { cacheSalt?: string } {
    const salt = `${extra.loraName ?? ""}/${extra.cacheSalt ?? ""}`;
    return {
      type: "BlockStored",
      blockHashes: Array.from({ length: to - from }, (_, k) => this.hash(tokens, from + k + 1, salt)),
      parentBlockHash: from === 0 ? undefined : this.hash(tokens, from, salt),
      tokenIds: tokens.slice(from * B, to * B),
      blockSize: B,
      loraName: extra.loraName,
      medium: "GPU",
      cacheSalt: extra.cacheSalt,
    };
  }
  removed(tokens: readonly number[], blocks: number[]): KvEvent {
    return { type: "BlockRemoved", blockHashes: blocks.map((b) => this.hash(tokens, b + 1, "/")), medium: undefined };
  }
}

const batch = (...events: KvEvent[]): KvEventBatch => ({ ts: 0, events, dataParallelRank: undefined });
const seq = (n: number, base = 0) => Array.from({ length: n * B }, (_, i) => base + i);

describe("KvBlockIndex", () => {
  it("reads a chain's cache_salt from its first block's extra keys (vLLM: LoRA name, …, salt), beside the LoRA name", () => {
    const index = makeIndex();
    const a = new FakeEngine(1n);
    const t = seq(3);
    const { cacheSalt: _salt, ...bare } = a.stored(t, 0, 3, { loraName: "adapter", cacheSalt: "tenant-1" });
    index.apply("a", batch({ ...bare, extraKeys: [["adapter", "tenant-1"], null, null] }));
    const e = index.engine("a");
    expect(index.heldRun(index.hashTokens(t, { model: "m", lora: "adapter", cacheSalt: "tenant-1" }), e)).toBe(3);
    expect(index.heldRun(index.hashTokens(t, { model: "m", lora: "adapter", cacheSalt: undefined }), e)).toBe(0);
    expect(index.heldRun(index.hashTokens(t, { model: "m", lora: "adapter", cacheSalt: "tenant-2" }), e)).toBe(0);
  });

  it("store then query gives the run of leading blocks held, per engine", () => {
    const index = makeIndex();
    const a = new FakeEngine(1n);
    const t = seq(6);
    index.apply("a", batch(a.stored(t, 0, 2), a.stored(t, 2, 5)));
    const ea = index.engine("a");
    const eb = index.engine("b");
    expect(index.heldRun(index.hashTokens(t, NO_KEYS), ea)).toBe(5);
    expect(index.heldRun(index.hashTokens(t, NO_KEYS), eb)).toBe(0);
    // A request that diverges inside block 3 matches 3 blocks.
    const other = [...t];
    other[3 * B + 1] = 999;
    expect(index.heldRun(index.hashTokens(other, NO_KEYS), ea)).toBe(3);
    expect(index.stats()).toMatchObject({ blocks: 5, held: 5, stored: 5, unknownParents: 0 });
  });

  it("removal cuts the run; AllBlocksCleared and clear(engine) drop one engine only", () => {
    const index = makeIndex();
    const a = new FakeEngine(1n);
    const b = new FakeEngine(2n);
    const t = seq(4);
    index.apply("a", batch(a.stored(t, 0, 4)));
    index.apply("b", batch(b.stored(t, 0, 4)));
    const chain = index.hashTokens(t, NO_KEYS);
    index.apply("a", batch(a.removed(t, [2])));
    expect(index.heldRun(chain, index.engine("a"))).toBe(2);
    expect(index.heldRun(chain, index.engine("b"))).toBe(4);
    expect(index.stats()).toMatchObject({ blocks: 4, held: 7 });
    index.apply("a", batch({ type: "AllBlocksCleared" }));
    expect(index.heldRun(chain, index.engine("a"))).toBe(0);
    expect(index.heldRun(chain, index.engine("b"))).toBe(4);
    index.clear("b");
    expect(index.heldRun(chain, index.engine("b"))).toBe(0);
    expect(index.stats()).toMatchObject({ blocks: 0, held: 0, cleared: 2 });
  });

  it("a stored chain whose parent is unknown is counted and not placed", () => {
    const index = makeIndex();
    const a = new FakeEngine(1n);
    const t = seq(4);
    index.apply("a", batch(a.stored(t, 2, 4)));
    expect(index.stats()).toMatchObject({ held: 0, unknownParents: 1 });
    expect(index.heldRun(index.hashTokens(t, NO_KEYS), index.engine("a"))).toBe(0);
  });

  it("LoRA name and cache_salt separate chains with the same tokens", () => {
    const index = makeIndex();
    const a = new FakeEngine(1n);
    const t = seq(3);
    index.apply("a", batch(a.stored(t, 0, 3, { loraName: "sql" }), a.stored(t, 0, 2, { cacheSalt: "tenant-1" })));
    const e = index.engine("a");
    expect(index.heldRun(index.hashTokens(t, NO_KEYS), e)).toBe(0);
    expect(index.heldRun(index.hashTokens(t, { ...NO_KEYS, lora: "sql" }), e)).toBe(3);
    expect(index.heldRun(index.hashTokens(t, { ...NO_KEYS, cacheSalt: "tenant-1" }), e)).toBe(2);
    expect(index.heldRun(index.hashTokens(t, { ...NO_KEYS, cacheSalt: "tenant-2" }), e)).toBe(0);
    expect(index.heldRun(index.hashTokens(t, { ...NO_KEYS, model: "other" }), e)).toBe(0);
  });

  it("skips another block size or medium, and counts it", () => {
    const index = makeIndex();
    const a = new FakeEngine(1n);
    const t = seq(2);
    index.apply("a", batch({ ...a.stored(t, 0, 2), blockSize: 8 }, { ...a.stored(t, 0, 2), medium: "CPU" }));
    expect(index.stats()).toMatchObject({ held: 0, skipped: 2 });
  });

  it("pending entries count until they expire or an event confirms them", () => {
    const index = makeIndex({ pendingTtlMs: 100 });
    const a = new FakeEngine(1n);
    const t = seq(4);
    const chain = index.hashTokens(t, NO_KEYS);
    const e = index.engine("a");
    index.addPending(e, chain, 0, 4, 1000);
    expect(index.heldRun(chain, e, 1050)).toBe(4);
    expect(index.heldRun(chain, e, 1100)).toBe(0); // expired at 1000 + 100
    expect(index.heldRun(chain, index.engine("b"), 1050)).toBe(0);
    index.apply("a", batch(a.stored(t, 0, 2)));
    expect(index.stats()).toMatchObject({ pendingConfirmed: 2, pending: 2 });
    expect(index.heldRun(chain, e, 1050)).toBe(4);
    expect(index.heldRun(chain, e, 1200)).toBe(2);
    index.expire(1200);
    expect(index.stats()).toMatchObject({ pending: 0, pendingExpired: 2 });
    index.addPending(e, chain, 2, 4, 2000);
    index.forgetPending(e, chain, 2, 4);
    expect(index.heldRun(chain, e, 2001)).toBe(2);
  });

  it("never holds more than capacityBlocks pairs, evicting whole blocks", () => {
    const index = makeIndex({ capacityBlocks: 50 });
    const a = new FakeEngine(1n);
    for (let r = 0; r < 40; r++) index.apply("a", batch(a.stored(seq(5, 10_000 * r), 0, 5)));
    const s = index.stats();
    expect(s.held).toBeLessThanOrEqual(50);
    expect(s.evicted).toBe(200 - s.held);
    // The last stored chain is whole (its blocks were just referenced).
    expect(index.heldRun(index.hashTokens(seq(5, 390_000), NO_KEYS), index.engine("a"))).toBe(5);
  });

  it("agrees with a model of the engines under random stores, removals and clears (fast-check)", () => {
    const engines = ["a", "b", "c"];
    // Sequences over a tiny alphabet share prefixes.
    const seqArb = fc.array(fc.integer({ min: 0, max: 1 }), { minLength: 4 * B, maxLength: 4 * B });
    const op = fc.oneof(
      fc.record({ k: fc.constant("store" as const), e: fc.nat(2), s: fc.nat(5), from: fc.nat(3), len: fc.integer({ min: 1, max: 4 }) }),
      fc.record({ k: fc.constant("remove" as const), e: fc.nat(2), s: fc.nat(5), block: fc.nat(3) }),
      fc.record({ k: fc.constant("clear" as const), e: fc.nat(2) }),
    );
    fc.assert(
      fc.property(fc.array(seqArb, { minLength: 6, maxLength: 6 }), fc.array(op, { maxLength: 60 }), (seqs, ops) => {
        const index = makeIndex({ capacityBlocks: 1 << 12 });
        const fakes = engines.map((_, i) => new FakeEngine(BigInt(i + 1)));
        const model = engines.map(() => new Set<string>());
        const key = (t: number[], blocks: number) => t.slice(0, blocks * B).join(",");
        for (const o of ops) {
          const id = engines[o.e] as string;
          const held = model[o.e] as Set<string>;
          if (o.k === "store") {
            const t = seqs[o.s] as number[];
            const to = Math.min(4, o.from + o.len);
            if (o.from >= to) continue;
            index.apply(id, batch((fakes[o.e] as FakeEngine).stored(t, o.from, to)));
            if (o.from === 0 || held.has(key(t, o.from))) for (let b = o.from; b < to; b++) held.add(key(t, b + 1));
          } else if (o.k === "remove") {
            const t = seqs[o.s] as number[];
            if (!held.has(key(t, o.block + 1))) continue; // an engine removes only what it holds
            index.apply(id, batch((fakes[o.e] as FakeEngine).removed(t, [o.block])));
            held.delete(key(t, o.block + 1));
          } else {
            index.clear(id);
            held.clear();
          }
        }
        for (const t of seqs) {
          const chain = index.hashTokens(t, NO_KEYS);
          engines.forEach((id, e) => {
            let run = 0;
            while (run < 4 && (model[e] as Set<string>).has(key(t, run + 1))) run++;
            expect(index.heldRun(chain, index.engine(id))).toBe(run);
          });
        }
        expect(index.held).toBe(model.reduce((n, s) => n + s.size, 0));
      }),
      { numRuns: 300 },
    );
  });

  it("under a small bound: never more pairs than the bound, and never a run an engine does not hold (fast-check)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ e: fc.nat(3), s: fc.nat(30), len: fc.integer({ min: 1, max: 6 }), remove: fc.boolean() }), { maxLength: 80 }),
        (ops) => {
          const index = makeIndex({ capacityBlocks: 24 });
          const fakes = [0, 1, 2, 3].map((i) => new FakeEngine(BigInt(i + 1)));
          const model = [0, 1, 2, 3].map(() => new Set<string>());
          const key = (t: number[], blocks: number) => t.slice(0, blocks * B).join(",");
          const seqOf = (s: number) => seq(6, (s % 5) * 1000).map((x, i) => (i >= 2 * B ? x + s * 7 : x));
          for (const o of ops) {
            const t = seqOf(o.s);
            if (o.remove) {
              if (!(model[o.e] as Set<string>).has(key(t, o.len))) continue;
              index.apply(`e${o.e}`, batch((fakes[o.e] as FakeEngine).removed(t, [o.len - 1])));
              (model[o.e] as Set<string>).delete(key(t, o.len));
            } else {
              index.apply(`e${o.e}`, batch((fakes[o.e] as FakeEngine).stored(t, 0, o.len)));
              for (let b = 1; b <= o.len; b++) (model[o.e] as Set<string>).add(key(t, b));
            }
            expect(index.held).toBeLessThanOrEqual(24);
          }
          for (let s = 0; s < 31; s++) {
            const t = seqOf(s);
            const chain = index.hashTokens(t, NO_KEYS);
            for (let e = 0; e < 4; e++) {
              let run = 0;
              while (run < 6 && (model[e] as Set<string>).has(key(t, run + 1))) run++;
              expect(index.heldRun(chain, index.engine(`e${e}`))).toBeLessThanOrEqual(run);
            }
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it("with 64 engines the bitset widens and each engine stays isolated", () => {
    const index = makeIndex();
    const t = seq(3);
    for (let e = 0; e < 64; e++) index.apply(`e${e}`, batch(new FakeEngine(BigInt(e + 1)).stored(t, 0, e % 3 + 1)));
    const chain = index.hashTokens(t, NO_KEYS);
    for (let e = 0; e < 64; e++) expect(index.heldRun(chain, index.engine(`e${e}`))).toBe(e % 3 + 1);
    expect(index.stats().blocks).toBe(3);
  });

  it("costs at most 64 bytes per held block when full", () => {
    const cap = 1 << 16;
    const index = makeIndex({ capacityBlocks: cap, blockSize: 16, pendingCapacity: 0 });
    const engines = Array.from({ length: 8 }, (_, i) => new FakeEngine(BigInt(i + 1)));
    let r = 0;
    const tokens = (n: number) => Array.from({ length: 16 * 8 }, (_, i) => n * 1000 + i);
    while (index.held < cap) {
      const t = tokens(r++);
      const e = r % 8;
      const fake = engines[e] as FakeEngine;
      index.apply(`e${e}`, batch({ ...fake.stored(t, 0, 8), blockSize: 16, tokenIds: t, blockHashes: Array.from({ length: 8 }, (_, k) => fake.hash(t, k + 1)) }));
    }
    const s = index.stats();
    expect(s.held).toBe(cap);
    expect(s.bytesPerBlock).toBeLessThanOrEqual(64);
  });
});
