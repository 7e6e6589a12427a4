/**
 * The llama fleet's KV events from slot contents (kv-events.ts), without llama.cpp: whatever
 * the slots come to hold, the events replayed by a subscriber give exactly the slots' whole
 * 16-token blocks, each block stored once however many slots hold it.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { KV_BLOCK_SIZE, SlotBlockEvents, engineBlockHash, ipcPublisher, toVllmEvents, type KvEvent } from "../../../../tools/fleet/llama/kv-events.js";
import { HeldBlocks, expectedPrefixes } from "./kv-events-model.js";

const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);

describe("engineBlockHash", () => {
  it("is a 64-bit hash of the parent and the tokens, pinned", () => {
    const first = engineBlockHash(undefined, range(0, 16), 0, 16);
    expect(first).toBe(engineBlockHash(0n, range(0, 16), 0, 16));
    expect(first).toBeLessThan(1n << 64n);
    expect(engineBlockHash(first, range(16, 16), 0, 16)).not.toBe(engineBlockHash(1n, range(16, 16), 0, 16));
    expect(engineBlockHash(undefined, [1, 2, 3, 4], 1, 3)).toBe(engineBlockHash(undefined, [2, 3], 0, 2));
    expect(first.toString(16)).toBe("26cd50f6e33d719a");
  });
});

describe("SlotBlockEvents", () => {
  it("stores a slot's whole blocks as one chain; the partial block waits", () => {
    const ev = new SlotBlockEvents(2);
    const events = ev.update(0, range(0, 40));
    expect(events).toHaveLength(1);
    const stored = events[0]!;
    expect(stored.type).toBe("BlockStored");
    if (stored.type !== "BlockStored") return;
    expect(stored.blockHashes).toHaveLength(2);
    expect(stored.parentBlockHash).toBeUndefined();
    expect(stored.tokenIds).toEqual(range(0, 32));
    expect(stored.blockSize).toBe(KV_BLOCK_SIZE);
    // Growing inside the partial block changes nothing; completing it stores one block.
    expect(ev.update(0, range(0, 47))).toEqual([]);
    const more = ev.update(0, range(0, 48));
    expect(more).toEqual([{ type: "BlockStored", blockHashes: [expect.any(BigInt)], parentBlockHash: stored.blockHashes[1], tokenIds: range(32, 16), blockSize: 16, loraName: undefined, medium: "GPU" }]);
  });

  it("a slot taken over by another prompt removes its old blocks; a block two slots hold stays until both drop it", () => {
    const ev = new SlotBlockEvents(2);
    const held = new HeldBlocks();
    const a = range(0, 64);
    const b = [...range(0, 32), ...range(500, 32)];
    held.apply(ev.update(0, a));
    // Slot 1 takes a prompt sharing two blocks with slot 0: only its own two blocks are new.
    const second = ev.update(1, b);
    held.apply(second);
    expect(second.map((e) => e.type)).toEqual(["BlockStored"]);
    expect(second[0]!.type === "BlockStored" && second[0]!.tokenIds).toEqual(range(500, 32));
    expect(ev.blocks).toBe(6);
    // Slot 0 is taken over by an unrelated prompt: its blocks 3–4 go, 1–2 stay (slot 1 has them).
    const takeover = ev.update(0, range(1000, 32));
    held.apply(takeover);
    expect(takeover.map((e) => e.type)).toEqual(["BlockRemoved", "BlockStored"]);
    expect(takeover[0]!.type === "BlockRemoved" && takeover[0]!.blockHashes).toHaveLength(2);
    expect(held.prefixes()).toEqual(expectedPrefixes([range(1000, 32), b]));
  });

  it("replayed by a subscriber, the events give exactly the slots' whole blocks, whatever the slots hold", () => {
    // Prompts from a few shared stems, so slots share, extend, cut and replace chains.
    const stems = [range(0, 80), range(100, 50), [...range(0, 40), ...range(300, 40)]];
    const tokens = fc.tuple(fc.integer({ min: 0, max: stems.length - 1 }), fc.integer({ min: 0, max: 80 }), fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 40 }));
    const step = fc.tuple(fc.integer({ min: 0, max: 3 }), tokens);
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const ev = new SlotBlockEvents(4);
        const held = new HeldBlocks();
        const slots: number[][] = [[], [], [], []];
        for (const [slot, [stem, cut, tail]] of steps) {
          slots[slot] = [...stems[stem]!.slice(0, cut), ...tail];
          held.apply(ev.update(slot, slots[slot]!));
          const expected = expectedPrefixes(slots);
          expect(held.prefixes()).toEqual(expected);
          expect(ev.blocks).toBe(expected.size);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe("ipcPublisher", () => {
  it("hands each publish to the channel as one batch with the clock's time in seconds", () => {
    const batches: unknown[] = [];
    const events: KvEvent[] = [{ type: "AllBlocksCleared" }];
    ipcPublisher((b) => batches.push(b), { now: () => 1_500 }).publish(events);
    expect(batches).toEqual([{ ts: 1.5, events, dataParallelRank: undefined }]);
  });
});

describe("startLlamaFleet's kvEvents option", () => {
  it("is checked before anything starts, naming the option", async () => {
    const { startLlamaFleet } = await import("prefix-router/fleet");
    await expect(startLlamaFleet({ kvEvents: { replayPort: 6000 } })).rejects.toThrow("Expected `kvEvents.port` with `kvEvents.replayPort`");
    await expect(startLlamaFleet({ instances: 4, kvEvents: { port: 65534 } })).rejects.toThrow("Expected `kvEvents.port` to be an integer from 1 to 65532, got 65534");
    await expect(startLlamaFleet({ kvEvents: { onBatch: 3 as never } })).rejects.toThrow("Expected `kvEvents.onBatch` to be a function, got number");
  });
});

describe("toVllmEvents", () => {
  it("gives vLLM's field names, null for none", () => {
    const ev = new SlotBlockEvents(1);
    const [stored] = ev.update(0, range(0, 16));
    const [removed] = ev.update(0, []);
    expect(toVllmEvents([stored!, removed!, { type: "AllBlocksCleared" }])).toEqual([
      { type: "BlockStored", block_hashes: [engineBlockHash(undefined, range(0, 16), 0, 16)], parent_block_hash: null, token_ids: range(0, 16), block_size: 16, lora_id: null, medium: "GPU", lora_name: null },
      { type: "BlockRemoved", block_hashes: [engineBlockHash(undefined, range(0, 16), 0, 16)], medium: "GPU" },
      { type: "AllBlocksCleared" },
    ]);
  });
});
