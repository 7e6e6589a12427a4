import { runBenchmark } from "prefix-router/bench";
import type { BenchRow } from "prefix-router/bench";
import { encodeWireBatch, kvEventBlockSize, type WireEvent } from "prefix-router/fleet";
import { describe, expect, it } from "vitest";
import { KvWireDecoder } from "../../../src/kv-events/wire.js";
import type { KvEventBatch } from "../../../src/kv-events/events.js";
import { KvEventHub, toKvEvent } from "../../../tools/bench/kv-feed.js";

const simulated = (rows: readonly BenchRow[]) => JSON.stringify(rows.map(({ wall: _wall, ...rest }) => rest));

const EVENTS: WireEvent[] = [
  { type: "BlockStored", block_hashes: [1n, 2n], parent_block_hash: null, token_ids: [1, 2, 3, 4, 5, 6, 7, 8], block_size: 4, lora_id: null, medium: "GPU", lora_name: null, extra_keys: [["tenant-a"], null] },
  { type: "BlockStored", block_hashes: [3n], parent_block_hash: 2n, token_ids: [9, 10, 11, 12], block_size: 4, lora_id: null, medium: "GPU", lora_name: null },
  { type: "BlockStored", block_hashes: [4n], parent_block_hash: 3n, token_ids: [9, 10], block_size: 4, lora_id: null, medium: "GPU", lora_name: null },
  { type: "BlockRemoved", block_hashes: [2n ** 63n + 5n], medium: "GPU" },
  { type: "AllBlocksCleared" },
];

describe("bench: precise-prefix", () => {
  it("converts the fleet's events exactly as the library's decoder reads them off the wire", async () => {
    const wire = await KvWireDecoder.load();
    const { batch } = wire.decodePayload(encodeWireBatch({ ts: 1, events: EVENTS }));
    const ours = EVENTS.map(toKvEvent).filter((e) => e !== undefined);
    const strip = (x: unknown) => JSON.parse(JSON.stringify(x, (_k, v) => (typeof v === "bigint" ? `${v}n` : v)));
    expect(strip(ours)).toEqual(strip(batch.events));
    expect(ours).toHaveLength(4); // the partial block is skipped, as the decoder does
  });

  it("delivers each event to every subscribed index once its lag has passed, in order", () => {
    const hub = new KvEventHub(50, 4);
    const got: [string, string, KvEventBatch][] = [];
    const feeds = ["r0", "r1"].map((r) => hub.feed({ apply: (engine, batch) => got.push([r, engine, batch]), clear() {} }));
    hub.push("i0", EVENTS[0]!, 100);
    hub.push("i0", EVENTS[1]!, 100);
    hub.push("i1", EVENTS[3]!, 120);
    hub.deliverUntil(149);
    expect(got).toHaveLength(0);
    expect(feeds[0]!.inSync("i0")).toBe(false);
    hub.deliverUntil(150);
    expect(got.map(([r, e, b]) => [r, e, b.events.length])).toEqual([["r0", "i0", 2], ["r1", "i0", 2]]);
    expect(feeds[1]!.inSync("i0")).toBe(true);
    expect(feeds[1]!.inSync("i1")).toBe(false);
    hub.deliverUntil(1000);
    expect(got).toHaveLength(4);
    expect(hub.stats()).toEqual({ lagMs: 50, events: 3, batches: 2, inSync: 2 });
  });

  it("routes on the events with exact predictions, one index per router process, and leaves the other rows as they were", async () => {
    const base = { workloads: ["hot-prefix" as const], durationsMs: [8_000], seeds: [3] };
    const alone = await runBenchmark({ ...base, strategies: ["longest-prefix"], routers: [1, 2] });
    const rows = await runBenchmark({ ...base, strategies: ["longest-prefix", "precise-prefix"], routers: [1, 2], kvLagMs: 20 });
    expect(simulated(rows.filter((r) => r.strategy === "longest-prefix"))).toBe(simulated(alone));
    for (const routers of [1, 2]) {
      const p = rows.find((r) => r.strategy === "precise-prefix" && r.routers === routers)!;
      expect(p).toMatchObject({ kvLagMs: 20, prefixLength: null });
      expect(p.precise!.routedApproximate).toBe(0);
      expect(p.precise!.routedPrecise).toBe(p.requests);
      expect(p.precise!.predictionsWithin10Percent / p.precise!.predictionsTested).toBeGreaterThan(0.95);
      expect(p.tokenHitRate).toBeGreaterThan(0.5);
    }
    // Deterministic, like every row.
    const again = await runBenchmark({ ...base, strategies: ["precise-prefix"], routers: [2], kvLagMs: 20 });
    expect(simulated(again)).toBe(simulated(rows.filter((r) => r.strategy === "precise-prefix" && r.routers === 2)));
  });

  it("on short-prompts' slot engines, routes on their events in 16-token blocks, as they publish them", async () => {
    // The slots count reuse by the token (blockSizeTokens 1) and publish 16-token blocks: routers
    // indexing 1-token blocks would skip every store and predict little.
    expect(kvEventBlockSize({ slots: 4, blockSizeTokens: 1 })).toBe(16);
    expect(kvEventBlockSize({ slots: 0, blockSizeTokens: 1 })).toBe(1);
    const rows = await runBenchmark({ workloads: ["short-prompts"], durationsMs: [30_000], seeds: [3], strategies: ["precise-prefix"], routers: [1, 2] });
    for (const p of rows) {
      expect(p.precise!.events).toBeGreaterThan(0);
      expect(p.precise!.routedApproximate).toBe(0);
      expect(p.precise!.predictionsWithin10Percent / p.precise!.predictionsTested).toBeGreaterThan(0.7);
    }
  });

  it("is not in the default list, and --kv-lag is checked", async () => {
    const { BENCH_STRATEGIES } = await import("prefix-router/bench");
    expect(BENCH_STRATEGIES).not.toContain("precise-prefix");
    await expect(runBenchmark({ workloads: ["hot-prefix"], strategies: ["precise-prefix"], kvLagMs: -1 })).rejects.toThrow(/kvLagMs/);
  });
});
