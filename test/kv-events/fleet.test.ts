/**
 * The emulated fleet publishes its paged cache's KV events in vLLM's format, and the feed reads
 * them: stores with the prompt's tokens (the emulated 4-character tokens by default, or any
 * `tokenize`), evictions, a reset.
 */
import { freePort, waitFor } from "./support.js";
import { afterEach, describe, expect, it } from "vitest";
import { byteTokens, emulatedTokens, encodeWireBatch, startFleet, VirtualFleet, type LiveFleet, type WireEvent } from "prefix-router/fleet";
import { KvWireDecoder } from "../../src/kv-events/wire.js";
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
