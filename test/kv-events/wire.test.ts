/**
 * The wire decoder against the tools' independent encoder (both encodings, every hash width),
 * real captures, and hostile payloads.
 */
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { isRouterError } from "../../src/errors.js";
import { KvWireDecoder, normalizeBlockHash, readSeq, seqFrame } from "../../src/kv-events/wire.js";
import { encodeMsgpack, Float64 } from "../../tools/fleet/kv-events/msgpack.js";
import { encodeWireBatch, wireSeq, type WireBatch, type WireEvent } from "../../tools/fleet/kv-events/publisher.js";
import {
  SGLANG_ARRAY_EXAMPLE,
  SGLANG_MAP_EXAMPLE,
  VLLM_0_26_CAPTURE,
  VLLM_0_26_HASH,
  VLLM_0_26_TOKENS,
  VLLM_0_26_TS,
} from "../fixtures/kv-events/captures.js";

let wire: KvWireDecoder;
beforeAll(async () => {
  wire = await KvWireDecoder.load();
});

const hex = (s: string) => Uint8Array.from(Buffer.from(s, "hex"));
const U64 = (1n << 64n) - 1n;

function decodeError(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(isRouterError(error)).toBe(true);
    return (error as { code: string }).code;
  }
  throw new Error("expected a decode error");
}

describe("real captures", () => {
  it("decodes vLLM v0.26.0's batch (volcano-sh/kthena#1535) exactly", () => {
    const { batch, skippedEvents } = wire.decodePayload(hex(VLLM_0_26_CAPTURE));
    expect(skippedEvents).toBe(0);
    expect(batch.ts).toBe(VLLM_0_26_TS);
    expect(batch.dataParallelRank).toBe(0);
    expect(batch.events).toEqual([
      {
        type: "BlockStored",
        blockHashes: [VLLM_0_26_HASH],
        parentBlockHash: undefined,
        tokenIds: VLLM_0_26_TOKENS,
        blockSize: 16,
        loraName: undefined,
        medium: "GPU",
        loraId: undefined,
        groupIdx: 0,
        extraKeys: [null],
      },
    ]);
  });

  it("decodes a whole live message of it: [topic, seq, payload]", () => {
    const m = wire.decodeMessage([Buffer.from("kv-events"), wireSeq(41n), hex(VLLM_0_26_CAPTURE)]);
    expect(m.seq).toBe(41n);
    expect(Buffer.from(m.topic).toString()).toBe("kv-events");
    expect(m.batch.events).toHaveLength(1);
  });

  it("the tools' encoder writes the capture's bytes from the same values (the encoders agree)", () => {
    const bytes = encodeWireBatch(
      {
        ts: VLLM_0_26_TS,
        data_parallel_rank: 0,
        events: [
          {
            type: "BlockStored",
            block_hashes: [VLLM_0_26_HASH],
            parent_block_hash: null,
            token_ids: VLLM_0_26_TOKENS,
            block_size: 16,
            lora_id: null,
            medium: "GPU",
            lora_name: null,
            extra_keys: [null],
            group_idx: 0,
            kv_cache_spec_kind: "full_attention",
          },
        ],
      },
      { events: "map", batch: "array" },
    );
    expect(Buffer.from(bytes).toString("hex")).toBe(VLLM_0_26_CAPTURE);
  });

  it("decodes SGLang's salted batch before and after events became maps (sgl-project/sglang#37271) alike", () => {
    const before = wire.decodePayload(hex(SGLANG_ARRAY_EXAMPLE)).batch;
    const after = wire.decodePayload(hex(SGLANG_MAP_EXAMPLE)).batch;
    const expected = { type: "BlockStored", blockHashes: [123n], parentBlockHash: undefined, tokenIds: [1, 2], blockSize: 2, medium: "GPU" };
    expect(before.events[0]).toMatchObject(expected);
    expect(after.events[0]).toMatchObject(expected);
    expect(before.events[0]).toMatchObject({ loraName: undefined, extraKeys: undefined });
    expect(before.ts).toBe(1);
    expect(before.dataParallelRank).toBeUndefined();
  });
});

const hashArb = fc.oneof(
  fc.bigInt({ min: 0n, max: U64 }),
  fc.bigInt({ min: -(1n << 63n), max: -1n }),
  fc.integer(),
  fc.uint8Array({ minLength: 8, maxLength: 8 }),
  fc.uint8Array({ minLength: 32, maxLength: 32 }),
);

function expectedHash(h: bigint | number | Uint8Array): bigint {
  if (h instanceof Uint8Array) return BigInt(`0x${Buffer.from(h.subarray(h.length - 8)).toString("hex")}`);
  return BigInt.asUintN(64, BigInt(h));
}

const eventArb: fc.Arbitrary<WireEvent> = fc.oneof(
  fc
    .record({
      hashes: fc.array(hashArb, { minLength: 1, maxLength: 4 }),
      blockSize: fc.integer({ min: 1, max: 8 }),
      parent: fc.option(hashArb, { nil: null }),
      lora: fc.option(fc.string({ maxLength: 40 }), { nil: null }),
      loraId: fc.option(fc.integer({ min: 0, max: 1000 }), { nil: null }),
      medium: fc.option(fc.constantFrom("GPU", "CPU"), { nil: null }),
      group: fc.option(fc.integer({ min: 0, max: 3 }), { nil: null }),
      seed: fc.integer({ min: 0, max: 0xffffffff }),
    })
    .map(
      (r): WireEvent => ({
        type: "BlockStored",
        block_hashes: r.hashes,
        parent_block_hash: r.parent,
        token_ids: Array.from({ length: r.hashes.length * r.blockSize }, (_, i) => (r.seed + i * 2654435761) >>> 0),
        block_size: r.blockSize,
        lora_id: r.loraId,
        medium: r.medium,
        lora_name: r.lora,
        group_idx: r.group,
      }),
    ),
  fc
    .record({ hashes: fc.array(hashArb, { maxLength: 6 }), medium: fc.option(fc.constantFrom("GPU", "CPU"), { nil: null }) })
    .map((r): WireEvent => ({ type: "BlockRemoved", block_hashes: r.hashes, medium: r.medium })),
  fc.constant<WireEvent>({ type: "AllBlocksCleared" }),
);

function expectedEvent(e: WireEvent) {
  if (e.type === "AllBlocksCleared") return { type: "AllBlocksCleared" };
  if (e.type === "BlockRemoved") return { type: "BlockRemoved", blockHashes: e.block_hashes.map(expectedHash), medium: e.medium ?? undefined, groupIdx: undefined };
  return {
    type: "BlockStored",
    blockHashes: e.block_hashes.map(expectedHash),
    parentBlockHash: e.parent_block_hash === null ? undefined : expectedHash(e.parent_block_hash),
    tokenIds: e.token_ids,
    blockSize: e.block_size,
    loraName: e.lora_name ?? undefined,
    medium: e.medium ?? undefined,
    loraId: e.lora_id ?? undefined,
    groupIdx: e.group_idx ?? undefined,
    extraKeys: undefined,
  };
}

describe("round trip through the tools' encoder", () => {
  for (const events of ["array", "map"] as const) {
    for (const batchLayout of ["array", "map"] as const) {
      it(`events as ${events}s, batch as ${batchLayout}: decode(encode(batch)) is the batch`, () => {
        fc.assert(
          fc.property(
            fc.array(eventArb, { maxLength: 8 }),
            fc.double({ min: 0, max: 4e9, noNaN: true }),
            fc.option(fc.integer({ min: 0, max: 64 }), { nil: null }),
            (evs, ts, rank) => {
              const batch: WireBatch = { ts, events: evs, data_parallel_rank: rank };
              const { batch: got, skippedEvents } = wire.decodePayload(encodeWireBatch(batch, { events, batch: batchLayout }));
              expect(skippedEvents).toBe(0);
              expect(got.ts).toBe(ts);
              expect(got.dataParallelRank).toBe(rank ?? undefined);
              expect(got.events).toEqual(evs.map(expectedEvent));
            },
          ),
          { numRuns: 200 },
        );
      });
    }
  }

  it("accepts array and map events mixed in one batch", () => {
    const stored: WireEvent = { type: "BlockStored", block_hashes: [1], parent_block_hash: null, token_ids: [5, 6], block_size: 2, lora_id: null, medium: "GPU", lora_name: null };
    const asArray = ["BlockStored", [1], null, [5, 6], 2, null, "GPU", null];
    const asMap = { type: "BlockRemoved", block_hashes: [1], medium: "GPU" };
    const { batch } = wire.decodePayload(encodeMsgpack([new Float64(1), [asArray, asMap, ["AllBlocksCleared"]]]));
    expect(batch.events.map((e) => e.type)).toEqual(["BlockStored", "BlockRemoved", "AllBlocksCleared"]);
    expect(batch.events[0]).toMatchObject(expectedEvent(stored));
  });
});

describe("block hashes of every width", () => {
  it.each([
    ["0", 0, 0n],
    ["a positive fixint", 5, 5n],
    ["uint32", 0xfffffffe, 0xfffffffen],
    ["2^53 − 1", Number.MAX_SAFE_INTEGER, BigInt(Number.MAX_SAFE_INTEGER)],
    ["uint64 max", U64, U64],
    ["2^63", 1n << 63n, 1n << 63n],
    ["−1 (int8)", -1, U64],
    ["int64 min", -(1n << 63n), 1n << 63n],
    ["−2^31 (int32)", -(2 ** 31), (1n << 64n) - (1n << 31n)],
    ["8 bytes", Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8]), 0x0102030405060708n],
    ["32 bytes: the last 8, big-endian", Uint8Array.from({ length: 32 }, (_, i) => i), 0x18191a1b1c1d1e1fn],
    ["4 bytes", Uint8Array.from([0xde, 0xad, 0xbe, 0xef]), 0xdeadbeefn],
  ] as [string, bigint | number | Uint8Array, bigint][])("%s", (_, wireHash, expected) => {
    const p = encodeWireBatch({ ts: 1, events: [{ type: "BlockRemoved", block_hashes: [wireHash], medium: null }] }, { events: "array" });
    expect(wire.decodePayload(p).batch.events[0]).toMatchObject({ blockHashes: [expected] });
    expect(normalizeBlockHash(wireHash)).toBe(expected);
  });

  it("refuses a float, a string, null and an empty byte string", () => {
    for (const bad of [1.5, "12", null, new Uint8Array(0)]) expect(decodeError(() => normalizeBlockHash(bad))).toBe("ERR_KV_EVENT_DECODE");
  });
});

describe("seq frames", () => {
  it("reads 8 bytes big-endian, the end marker as −1", () => {
    expect(readSeq(wireSeq(0n))).toBe(0n);
    expect(readSeq(wireSeq(258n))).toBe(258n);
    expect(readSeq(Uint8Array.from([255, 255, 255, 255, 255, 255, 255, 255]))).toBe(-1n);
    expect(Buffer.from(seqFrame(1n)).toString("hex")).toBe("0000000000000001");
  });

  it("reads both replay reply layouts, with and without the topic, and the end marker", () => {
    const p = hex(VLLM_0_26_CAPTURE);
    const e = new Uint8Array(0);
    const withTopic = wire.decodeReplayReply([e, Buffer.from("kv"), wireSeq(3n), p]);
    const without = wire.decodeReplayReply([e, wireSeq(3n), p]);
    expect(withTopic).toMatchObject({ end: false, seq: 3n });
    expect(without).toMatchObject({ end: false, seq: 3n, topic: undefined });
    expect(wire.decodeReplayReply([e, wireSeq(-1n), e])).toEqual({ end: true });
    expect(wire.decodeReplayReply([e, Buffer.from("kv"), wireSeq(-1n), e])).toEqual({ end: true });
    expect(wire.decodeReplayReply([e, e, wireSeq(-1n), e])).toEqual({ end: true });
  });
});

describe("hostile and malformed input: one typed error, never a crash", () => {
  const stored = (over: Record<string, unknown>) =>
    encodeMsgpack([new Float64(1), [{ type: "BlockStored", block_hashes: [1], parent_block_hash: null, token_ids: [1, 2], block_size: 2, lora_id: null, medium: null, lora_name: null, ...over }]]);

  it.each([
    ["not msgpack", Uint8Array.from([0xc1])],
    ["truncated", hex(VLLM_0_26_CAPTURE).subarray(0, 100)],
    ["trailing bytes", Uint8Array.from([...hex(VLLM_0_26_CAPTURE), 0])],
    ["a number, not a batch", encodeMsgpack(7)],
    ["a batch array of one item", encodeMsgpack([new Float64(1)])],
    ["ts a string", encodeMsgpack(["now", []])],
    ["events not an array", encodeMsgpack([new Float64(1), {}])],
    ["an event that is a number", encodeMsgpack([new Float64(1), [5]])],
    ["an event array without a tag", encodeMsgpack([new Float64(1), [[5, 6]]])],
    ["an event map without type", encodeMsgpack([new Float64(1), [{ block_hashes: [] }]])],
    ["a negative token id", stored({ token_ids: [1, -2] })],
    ["a token id of 2^32", stored({ token_ids: [1, 2 ** 32] })],
    ["a float token id", stored({ token_ids: [1, 2.5] })],
    ["a string token id", stored({ token_ids: [1, "2"] })],
    ["token_ids not an array", stored({ token_ids: 3 })],
    ["a negative block size", stored({ block_size: -2 })],
    ["a huge block size", stored({ block_size: 1 << 20 })],
    ["a missing block size", stored({ block_size: null })],
    ["block_hashes not an array", stored({ block_hashes: 1 })],
    ["a float hash", stored({ block_hashes: [1.5] })],
    ["medium a number", stored({ medium: 3 })],
    ["a huge declared array (array32 of 2^32 − 1)", Uint8Array.from([0x92, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0, 0xdd, 0xff, 0xff, 0xff, 0xff])],
    ["a huge declared string", Uint8Array.from([0xdb, 0xff, 0xff, 0xff, 0xff, 0x41])],
    ["a huge declared map", Uint8Array.from([0xdf, 0xff, 0xff, 0xff, 0xff])],
  ])("%s", (_, payload) => {
    expect(decodeError(() => wire.decodePayload(payload))).toBe("ERR_KV_EVENT_DECODE");
  });

  it("bounds payload size, events per batch, hashes and tokens per event", async () => {
    const small = await KvWireDecoder.load({ maxPayloadBytes: 64, maxEventsPerBatch: 2, maxBlocksPerEvent: 2, maxTokensPerEvent: 4 });
    expect(decodeError(() => small.decodePayload(new Uint8Array(65)))).toBe("ERR_KV_EVENT_DECODE");
    const cleared = ["AllBlocksCleared"];
    expect(decodeError(() => small.decodePayload(encodeMsgpack([new Float64(1), [cleared, cleared, cleared]])))).toBe("ERR_KV_EVENT_DECODE");
    expect(decodeError(() => small.decodePayload(encodeMsgpack([new Float64(1), [["BlockRemoved", [1, 2, 3], null]]])))).toBe("ERR_KV_EVENT_DECODE");
    expect(decodeError(() => small.decodePayload(encodeMsgpack([new Float64(1), [["BlockStored", [1], null, [1, 2, 3, 4, 5], 5, null, null, null]]])))).toBe(
      "ERR_KV_EVENT_DECODE",
    );
  });

  it("refuses deep nesting and container floods before building anything", () => {
    const deep = new Uint8Array(100_001).fill(0x91);
    deep[100_000] = 0xc0;
    expect(decodeError(() => wire.decodePayload(deep))).toBe("ERR_KV_EVENT_DECODE");
    // [1.0, [[], [], … 300,000 empty arrays]]: 300 KB that would decode to ~15 MB of arrays.
    const flood = new Uint8Array(1 + 9 + 5 + 300_000).fill(0x90);
    flood.set([0x92, 0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0xdd, 0x00, 0x04, 0x93, 0xe0]);
    expect(() => wire.decodePayload(flood)).toThrow(/more than 262144 arrays and maps/);
  });

  it("skips and counts unknown event types, stores without tokens and partial blocks; ignores unknown fields", () => {
    const p = encodeMsgpack([
      new Float64(1),
      [
        ["BlockMoved", [1]],
        { type: "SomethingNew", x: 1 },
        ["BlockStored", [1], null, [], 0, null, "CPU", null],
        ["BlockStored", [1, 2], null, [1, 2, 3], 2, null, "GPU", null],
        { type: "BlockRemoved", block_hashes: [7], medium: "GPU", locality: "local", future_field: { a: [1, 2] } },
        ["BlockRemoved", [8], "GPU", 0, "more", "fields"],
      ],
      3,
      "an unknown batch field",
    ]);
    const { batch, skippedEvents } = wire.decodePayload(p);
    expect(skippedEvents).toBe(4);
    expect(batch.events).toEqual([
      { type: "BlockRemoved", blockHashes: [7n], medium: "GPU", groupIdx: undefined },
      { type: "BlockRemoved", blockHashes: [8n], medium: "GPU", groupIdx: 0 },
    ]);
    expect(batch.dataParallelRank).toBe(3);
  });

  it.each([
    ["two frames", [Buffer.from(""), wireSeq(0n)]],
    ["four frames", [Buffer.from(""), wireSeq(0n), Buffer.from(""), Buffer.from("")]],
    ["a 4-byte seq", [Buffer.from(""), Uint8Array.from([0, 0, 0, 1]), hex(VLLM_0_26_CAPTURE)]],
    ["a 9-byte seq", [Buffer.from(""), new Uint8Array(9), hex(VLLM_0_26_CAPTURE)]],
    ["a negative live seq", [Buffer.from(""), wireSeq(-5n), hex(VLLM_0_26_CAPTURE)]],
    ["an oversized topic", [new Uint8Array(5000), wireSeq(0n), hex(VLLM_0_26_CAPTURE)]],
  ])("a live message with %s", (_, frames) => {
    expect(decodeError(() => wire.decodeMessage(frames as Uint8Array[]))).toBe("ERR_KV_EVENT_DECODE");
  });

  it("never throws anything but its typed error on random bytes", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        try {
          wire.decodePayload(bytes);
        } catch (error) {
          expect(isRouterError(error) && error.code).toBe("ERR_KV_EVENT_DECODE");
        }
      }),
      { numRuns: 2000 },
    );
  });

  it("rejects bad limits with the option's name", async () => {
    await expect(KvWireDecoder.load({ maxEventsPerBatch: 0 })).rejects.toThrow(/maxEventsPerBatch/);
    await expect(KvWireDecoder.load({ maxPayloadBytes: 1.5 })).rejects.toBeInstanceOf(TypeError);
  });
});
