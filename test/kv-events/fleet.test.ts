/**
 * The emulated fleet publishes its caches' KV events in vLLM's format, and the feed reads them:
 * stores with the prompt's tokens (the emulated 4-character tokens by default, or any
 * `tokenize`), evictions, a reset — the paged cache's, and what the slot cache's slots hold.
 */
import { freePort, waitFor } from "./support.js";
import fc from "fast-check";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { byteTokens, emulatedTokens, encodeWireBatch, startFleet, VirtualFleet, type LiveFleet, type WireEvent } from "prefix-router/fleet";
import { KvWireDecoder } from "../../src/kv-events/wire.js";
import { KvBlockIndex } from "../../src/kv-events/block-index.js";
import { Engine, type EngineRequest, type EngineTicket } from "../../tools/fleet/engine.js";
import type { EngineConfig } from "../../tools/fleet/config.js";
import { cacheNamespace } from "../../tools/fleet/cache-salt.js";
import { tokenBlockKeys } from "../../tools/fleet/tokenizer.js";
import type { BlockStored, KvEvent, KvEventBatch, KvEventSink } from "../../src/kv-events/events.js";
import { KvEventFeed } from "../../src/kv-events/feed.js";
import { renderPrompt } from "../../tools/fleet/template.js";

class Recorder implements KvEventSink {
  readonly events: KvEvent[] = [];
  apply(_engine: string, batch: KvEventBatch): void {
    this.events.push(...batch.events);
  }
  clear(): void {}
  of<T extends KvEvent["type"]>(type: T): Extract<KvEvent, { type: T }>[] {
    return this.events.filter((e) => e.type === type) as Extract<KvEvent, { type: T }>[];
  }
}

let fleet: LiveFleet | undefined;
let feed: KvEventFeed | undefined;
afterEach(async () => {
  await feed?.close();
  await fleet?.stop();
  fleet = feed = undefined;
});

const complete = (url: string, prompt: string) =>
  fetch(`${url}/v1/completions`, { method: "POST", body: JSON.stringify({ prompt, max_tokens: 2 }) }).then((r) => {
    expect(r.status).toBe(200);
    return r.json();
  });

describe("the emulated fleet's KV events", () => {
  it("stores carry the prompt's byte tokens, evictions and resets follow, and the feed reads them", async () => {
    const [port, replayPort] = [await freePort(), await freePort()];
    fleet = await startFleet({
      instances: 1,
      timeScale: 0.01,
      engine: { numGpuBlocks: 8, maxModelLen: 128 },
      kvEvents: { port, replayPort, topic: "kv-events" },
      tokenize: byteTokens,
    });
    const inst = fleet.instances[0]!;
    expect(inst.kvEvents).toEqual({ endpoint: `tcp://127.0.0.1:${port}`, replayEndpoint: `tcp://127.0.0.1:${replayPort}` });
    const sink = new Recorder();
    feed = await KvEventFeed.open({ engine: inst.id, endpoint: inst.kvEvents!.endpoint, replayEndpoint: inst.kvEvents!.replayEndpoint, topic: "kv-events", sink, minReplayIntervalMs: 0 });

    const first = "The quick brown fox jumps over the lazy dog.";
    const rendered = Buffer.from(renderPrompt({ prompt: first })); // what the engine tokenizes
    await complete(inst.url, first);
    await waitFor(() => sink.of("BlockStored").length > 0, "the first store");
    const stored = sink.of("BlockStored")[0] as BlockStored;
    expect(stored.blockSize).toBe(16);
    expect(stored.blockHashes).toHaveLength(Math.floor(rendered.length / 16));
    expect(stored.parentBlockHash).toBeUndefined();
    expect(stored.tokenIds).toEqual([...rendered.subarray(0, stored.blockHashes.length * 16)]);
    expect(stored.medium).toBe("GPU");

    // A second prompt needs most of the 8 blocks: the first prompt's blocks are evicted.
    await complete(inst.url, "x".repeat(100));
    await waitFor(() => sink.of("BlockRemoved").length > 0, "an eviction");
    const removed = new Set(sink.of("BlockRemoved").flatMap((e) => e.blockHashes));
    expect(stored.blockHashes.some((h) => removed.has(h))).toBe(true);

    await fetch(`${inst.url}/reset_prefix_cache`, { method: "POST" });
    await waitFor(() => sink.of("AllBlocksCleared").length > 0, "the reset");
    expect(feed.stats()).toMatchObject({ inSync: true, decodeErrors: 0, dropped: 0 });
  });

  it("a prompt sharing a prefix stores only its new blocks, chained to the cached parent", async () => {
    const [port, replayPort] = [await freePort(), await freePort()];
    fleet = await startFleet({ instances: 1, timeScale: 0.01, kvEvents: { port, replayPort, encoding: { events: "array" } }, tokenize: (t) => [...Buffer.from(t)].map((b) => b + 1000) });
    const inst = fleet.instances[0]!;
    const sink = new Recorder();
    // With the replay socket, the feed's join recovers the stores its subscription missed.
    feed = await KvEventFeed.open({ engine: inst.id, endpoint: inst.kvEvents!.endpoint, replayEndpoint: inst.kvEvents!.replayEndpoint, sink, minReplayIntervalMs: 0 });
    const bos = Buffer.from(renderPrompt({ prompt: "x" })).length - 1;
    const shared = "s".repeat(64 - bos); // with the BOS text: 4 full blocks
    // Until the feed hears the first store (a SUB socket misses what precedes its subscription).
    for (let i = 0; sink.of("BlockStored").length === 0; i++) {
      if (i > 100) throw new Error("no store heard");
      await complete(inst.url, `${shared}${String(i).padStart(16, "-")}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const before = sink.of("BlockStored").length;
    await complete(inst.url, `${shared}${"n".repeat(16)}`);
    await waitFor(() => sink.of("BlockStored").length > before, "the second store");
    const second = sink.of("BlockStored").at(-1)!;
    const firstChain = sink.of("BlockStored")[0]!;
    expect(second.blockHashes).toHaveLength(1);
    expect(second.parentBlockHash).toBe(firstChain.blockHashes[3]);
    expect(second.tokenIds).toEqual([..."n".repeat(16)].map((c) => c.charCodeAt(0) + 1000));
  });
});

describe("the virtual fleet's KV events", () => {
  it("come with their virtual time, decode as the feed would, and a restart clears", async () => {
    const got: { instance: string; event: WireEvent; atMs: number }[] = [];
    const fleet = new VirtualFleet({ instances: 2, kvEvents: (instance, event, atMs) => got.push({ instance, event, atMs }), tokenize: byteTokens });
    const prompt = "a".repeat(40);
    fleet.advanceTo(1000);
    fleet.submit("i1", { id: 1, prompt, outputTokens: 4, cacheSalt: "tenant" }, { onDone() {} });
    fleet.runUntilIdle();
    expect(got).toHaveLength(1);
    expect(got[0]!.instance).toBe("i1");
    expect(got[0]!.atMs).toBeGreaterThan(1000); // admitted after the frontend's overhead
    expect(got[0]!.atMs).toBeLessThan(2000);
    const wire = await KvWireDecoder.load();
    const { batch } = wire.decodePayload(encodeWireBatch({ ts: 1, events: got.map((g) => g.event) }));
    expect(batch.events[0]).toMatchObject({ type: "BlockStored", tokenIds: [...Buffer.from(prompt.slice(0, 32))], blockSize: 16, extraKeys: [["tenant"], null] });
    fleet.restartInstance("i1");
    expect(got.at(-1)).toMatchObject({ instance: "i1", event: { type: "AllBlocksCleared" } });
  });
});

describe("the emulated tokens", () => {
  it("are the 4-character model's tokens: as many as countTokens, equal pieces equal ids, the default of a publishing fleet", () => {
    expect(emulatedTokens("")).toEqual([]);
    expect(emulatedTokens("Hello, world")).toHaveLength(3);
    expect(emulatedTokens("abcdabcdab")).toHaveLength(3);
    const [a, b, c] = emulatedTokens("abcdabcdab");
    expect(a).toBe(b);
    expect(c).not.toBe(a);
    for (const id of emulatedTokens("The quick brown fox jumps over the lazy dog ✓")) expect(id >>> 0 === id && id < 2 ** 31).toBe(true);
    const got: WireEvent[] = [];
    const fleet = new VirtualFleet({ instances: 1, kvEvents: (_instance, event) => got.push(event) });
    const prompt = "b".repeat(200);
    fleet.submit("i0", { id: 1, prompt, outputTokens: 2 }, { onDone() {} });
    fleet.runUntilIdle();
    const stored = got.find((e) => e.type === "BlockStored") as { token_ids: number[]; block_hashes: unknown[] } | undefined;
    expect(stored?.token_ids).toEqual(emulatedTokens(prompt).slice(0, stored!.block_hashes.length * 16));
  });
});

describe("the emulated slot cache's KV events", () => {
  const MODEL = "m";
  /** A request as the fleet builds one when it publishes: the prompt's emulated tokens, its keys in `bs`-token blocks. */
  function request(id: number, text: string, bs = 16, cacheSalt?: string): EngineRequest {
    const tokenIds = emulatedTokens(text);
    return {
      id,
      promptTokens: Math.max(1, tokenIds.length),
      blockKeys: tokenBlockKeys(tokenIds, bs, cacheNamespace(MODEL, cacheSalt)),
      outputTokens: 2,
      tokenIds,
      ...(cacheSalt !== undefined && { cacheSalt }),
    };
  }
  function slotEngine(config: Partial<EngineConfig>): { engine: Engine; got: WireEvent[] } {
    const got: WireEvent[] = [];
    return { engine: new Engine({ id: "e", config: { slots: 2, ...config }, kvEvents: (e) => got.push(e) }), got };
  }
  const settle = (engine: Engine) => {
    while (!engine.isIdle()) engine.processNext();
  };
  const run = (engine: Engine, req: EngineRequest) => {
    engine.enqueue(req, { onDone() {} }, engine.now);
    settle(engine);
  };
  /** 4-character pieces: `n` tokens of text that shares nothing with another `tag`'s. */
  const text = (tag: string, n: number) => Array.from({ length: n }, (_, i) => `${tag}${String(i).padStart(3, "0")}`.slice(-4)).join("");
  const ofType = <T extends WireEvent["type"]>(got: readonly WireEvent[], type: T) => got.filter((e) => e.type === type) as Extract<WireEvent, { type: T }>[];
  const hashes = (req: EngineRequest) => Array.from(req.blockKeys, (k) => BigInt(k));

  it("a slot's prompt blocks are stored at admission, with vLLM's fields, whole blocks only", () => {
    const { engine, got } = slotEngine({});
    const req = request(1, text("a", 40), 16, "tenant");
    let atAdmission: WireEvent[] = [];
    let done = false;
    engine.enqueue(req, { onAdmit: () => (atAdmission = [...got]), onDone: () => (done = true) }, 0);
    engine.advanceTo(engine.nextEventMs()); // the frontend's overhead: admitted in the first step
    expect(done).toBe(false);
    expect(atAdmission).toEqual([
      {
        type: "BlockStored",
        block_hashes: hashes(req),
        parent_block_hash: null,
        token_ids: req.tokenIds!.slice(0, 32),
        block_size: 16,
        lora_id: null,
        medium: "GPU",
        lora_name: null,
        extra_keys: [["tenant"], null],
      },
    ]);
    settle(engine);
    expect(done).toBe(true);
    expect(got).toEqual(atAdmission); // a slot keeps its prompt: nothing at release
  });

  it("a slot's replaced blocks are removed when no other slot holds them, its new blocks chained to the kept ones", () => {
    const { engine, got } = slotEngine({ slots: 1 });
    const head = text("h", 32);
    const a = request(1, head + text("a", 40));
    const b = request(2, head + text("b", 40));
    run(engine, a);
    got.length = 0;
    run(engine, b); // the same slot: it keeps the 2 head blocks, replaces a's 2 others
    expect(got).toEqual([
      { type: "BlockRemoved", block_hashes: hashes(a).slice(2).reverse(), medium: "GPU" },
      expect.objectContaining({ type: "BlockStored", block_hashes: hashes(b).slice(2), parent_block_hash: BigInt(b.blockKeys[1]!), token_ids: b.tokenIds!.slice(32, 64), extra_keys: null }),
    ]);
    got.length = 0;
    const c = request(3, text("c", 20));
    run(engine, c);
    expect(got).toEqual([{ type: "BlockRemoved", block_hashes: hashes(b).reverse(), medium: "GPU" }, expect.objectContaining({ type: "BlockStored", block_hashes: hashes(c), parent_block_hash: null })]);
  });

  it("a block is removed only when its last holder slot drops it, and stored only by its first", () => {
    const { engine, got } = slotEngine({ slots: 2, slotPromptSimilarity: 0 });
    const a = request(1, text("a", 48));
    // The same prompt twice at once: a busy slot is never shared, so both slots hold it; one store.
    engine.enqueue(a, { onDone() {} }, 0);
    engine.enqueue({ ...a, id: 2 }, { onDone() {} }, 0);
    settle(engine);
    expect(engine.slotKeys().map((k) => [...k])).toEqual([[...a.blockKeys], [...a.blockKeys]]);
    expect(got).toEqual([expect.objectContaining({ type: "BlockStored", block_hashes: hashes(a) })]);
    got.length = 0;
    const b = request(3, text("b", 48));
    run(engine, b); // replaces one copy of a: the other slot still holds a
    expect(ofType(got, "BlockRemoved")).toEqual([]);
    expect(ofType(got, "BlockStored")).toEqual([expect.objectContaining({ block_hashes: hashes(b) })]);
    got.length = 0;
    run(engine, request(4, text("c", 48))); // replaces the last copy
    expect(ofType(got, "BlockRemoved")).toEqual([{ type: "BlockRemoved", block_hashes: hashes(a).reverse(), medium: "GPU" }]);
  });

  it("a cancelled prefill removes the blocks its slot never computed", () => {
    const { engine, got } = slotEngine({ slots: 1, maxNumBatchedTokens: 32 });
    const a = request(1, text("a", 96));
    const ticket = engine.enqueue(a, { onDone() {} }, 0);
    engine.processNext(); // admitted; the first 32-token chunk runs
    engine.processNext(); // the chunk done: 2 blocks computed
    expect(ticket.cancel()).toBe(true);
    settle(engine);
    expect(engine.slotKeys()[0]).toHaveLength(2);
    expect(got.at(-1)).toEqual({ type: "BlockRemoved", block_hashes: hashes(a).slice(2).reverse(), medium: "GPU" });
  });

  it("a restart publishes AllBlocksCleared and forgets every holder; a slot busy meanwhile stores its prompt again at release", () => {
    const { engine, got } = slotEngine({ slots: 2, slotPromptSimilarity: 0 });
    const a = request(1, text("a", 48));
    run(engine, a);
    engine.restart();
    expect(got.at(-1)).toEqual({ type: "AllBlocksCleared" });
    got.length = 0;
    run(engine, { ...a, id: 2 }); // cold again, and stored again from the root
    expect(got).toEqual([expect.objectContaining({ type: "BlockStored", block_hashes: hashes(a), parent_block_hash: null })]);
    got.length = 0;
    const b = request(3, text("b", 48));
    engine.enqueue(b, { onDone() {} }, engine.now);
    engine.advanceTo(engine.nextEventMs()); // b is admitted (stored), then the engine restarts
    engine.restart();
    settle(engine);
    expect(engine.slotKeys().some((k) => k.length === b.blockKeys.length)).toBe(true);
    expect(got.map((e) => e.type)).toEqual(["BlockStored", "AllBlocksCleared", "BlockStored"]);
    expect(got[2]).toMatchObject({ block_hashes: hashes(b), parent_block_hash: null });
  });

  describe("fed to a KvBlockIndex, the index holds exactly what the slots hold", () => {
    let wire: KvWireDecoder;
    beforeAll(async () => {
      wire = await KvWireDecoder.load();
    });
    /** An index fed by `engine`'s events through vLLM's wire format and the library's decoder. */
    function indexed(config: Partial<EngineConfig>): { engine: Engine; index: KvBlockIndex; flush(): void } {
      const { engine, got } = slotEngine(config);
      const index = new KvBlockIndex({ blockSize: 16, capacityBlocks: 1 << 16, model: MODEL, pendingTtlMs: 0, pendingCapacity: 0 });
      return {
        engine,
        index,
        flush() {
          if (got.length === 0) return;
          index.apply("e", wire.decodePayload(encodeWireBatch({ ts: 0, events: got.splice(0) })).batch);
        },
      };
    }
    /** The index's run of `req`'s prompt, in 16-token blocks. */
    const indexRun = (index: KvBlockIndex, req: EngineRequest) =>
      index.heldRun(index.hashTokens(req.tokenIds!, { model: MODEL, lora: undefined, cacheSalt: req.cacheSalt }), index.engine("e"));
    /** The most whole 16-token blocks of `req`'s prompt some slot holds (`slotKeys`: blocks of `bs` tokens). */
    const slotRun = (engine: Engine, req: EngineRequest) => {
      const bs = engine.config.blockSizeTokens;
      let best = 0;
      for (const held of engine.slotKeys()) {
        let c = 0;
        while (c < held.length && c < req.blockKeys.length && held[c] === req.blockKeys[c]) c++;
        best = Math.max(best, Math.floor((c * bs) / 16));
      }
      return best;
    };

    it("for every prompt sent, and with token-sized slot blocks (published as 16-token blocks)", () => {
      for (const bs of [16, 1]) {
        const { engine, index, flush } = indexed({ slots: 2, blockSizeTokens: bs });
        const head = text("h", 40);
        const reqs = [request(1, head + text("a", 30), bs), request(2, head + text("b", 9), bs, "t"), request(3, text("c", 50), bs), request(4, head + text("d", 17), bs)];
        for (const r of reqs) {
          run(engine, r);
          flush();
          for (const q of reqs) expect([bs, q.id, indexRun(index, q)]).toEqual([bs, q.id, slotRun(engine, q)]);
        }
        expect(index.stats()).toMatchObject({ unknownParents: 0, unknownRemovals: 0, skipped: 0 });
        expect(reqs.map((q) => indexRun(index, q)).some((n) => n > 0)).toBe(true);
      }
    });

    it("after any sequence of requests, cancellations and restarts, once no slot is mid-change (property)", () => {
      const bases = [0, 1, 2].map((b) => Array.from({ length: 300 }, (_, i) => String.fromCharCode(97 + ((i * 7 + b * 11) % 26))).join(""));
      const op = fc.oneof(
        { weight: 6, arbitrary: fc.record({ kind: fc.constant("send" as const), base: fc.nat(2), cut: fc.nat(300), tail: fc.string({ unit: fc.constantFrom("x", "y"), maxLength: 40 }), salt: fc.constantFrom(undefined, "t") }) },
        { weight: 3, arbitrary: fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 120 }) }) },
        { weight: 2, arbitrary: fc.record({ kind: fc.constant("cancel" as const), back: fc.nat(2) }) },
        { weight: 2, arbitrary: fc.record({ kind: fc.constant("restart" as const) }) },
        { weight: 1, arbitrary: fc.record({ kind: fc.constant("settle" as const) }) },
      );
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 3 }), fc.constantFrom(1, 4, 16), fc.constantFrom(0, 0.1, 0.5), fc.array(op, { maxLength: 40 }), (slots, bs, similarity, ops) => {
          const { engine, index, flush } = indexed({ slots, blockSizeTokens: bs, slotPromptSimilarity: similarity, maxNumBatchedTokens: 64 });
          const sent: EngineRequest[] = [];
          const tickets: EngineTicket[] = [];
          const check = () => {
            flush();
            for (const q of sent) expect(indexRun(index, q)).toBe(slotRun(engine, q));
          };
          for (const o of ops) {
            if (o.kind === "send") {
              const r = request(sent.length, bases[o.base]!.slice(0, o.cut) + o.tail, bs, o.salt);
              sent.push(r);
              tickets.push(engine.enqueue(r, { onDone() {} }, engine.now));
            } else if (o.kind === "advance") engine.advanceTo(engine.now + o.ms);
            else if (o.kind === "cancel") tickets.at(-1 - o.back)?.cancel(); // one of the latest: likely still running
            else if (o.kind === "restart") engine.restart();
            else {
              settle(engine);
              check();
            }
          }
          settle(engine);
          check();
          expect(index.stats()).toMatchObject({ unknownParents: 0, unknownRemovals: 0, skipped: 0 });
        }),
        { numRuns: 150 },
      );
    });
  });
});
