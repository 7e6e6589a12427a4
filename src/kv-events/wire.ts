/**
 * The wire format of engine KV-cache events: one ZeroMQ message → `{ seq, batch }`.
 *
 * Follows vLLM's `vllm/distributed/kv_events.py` (`ZmqEventPublisher`, `EventBatch`,
 * `BlockStored`, `BlockRemoved`, `AllBlocksCleared`; releases up to v0.26, late 2026) and
 * SGLang's copy (`python/sglang/srt/disaggregation/kv_events.py`):
 *
 * - A live message is three frames `[topic, seq, payload]`: `seq` is 8 bytes big-endian,
 *   counting from 0 per publisher process; `payload` is msgpack (msgspec's encoder).
 * - A replay reply, as a DEALER receives it, is `["", seq, payload]`, or `["", topic, seq,
 *   payload]` since vLLM added the topic to replies (vllm-project/vllm#45177, v0.26); the end of
 *   a replay is a reply whose seq is −1 (`0xff × 8`) and whose payload is empty.
 * - The payload is an `EventBatch`: an array `[ts, events, data_parallel_rank?]` (msgspec
 *   `array_like`; SGLang names the third field `attn_dp_rank`) or a map with those names.
 * - Each event is a msgspec tagged struct: an array whose first item is the tag
 *   (`["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium,
 *   lora_name, extra_keys, group_idx, …]`, `["BlockRemoved", block_hashes, medium, group_idx]`,
 *   `["AllBlocksCleared"]`; trailing fields left at their default are omitted), or, since vLLM
 *   dropped `array_like` from events (vllm-project/vllm#42892, mid-2026; SGLang followed), a map
 *   with the tag under `type`. Both are accepted, even mixed in one batch; unknown fields are
 *   ignored and unknown event types skipped (counted).
 * - Block hashes are vLLM's `ExternalBlockHash`: by default the low 64 bits of the block's
 *   digest as an unsigned integer (`int.from_bytes(digest, "big") & (2**64 − 1)`), so msgpack
 *   uint64 or, from other producers, int64; with `VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0` the
 *   digest bytes themselves. All normalise to the same unsigned 64-bit value: a negative integer
 *   is taken modulo 2^64 and a byte string gives its last 8 bytes read big-endian.
 *
 * Hostile input is bounded before and during decoding ({@link KvWireLimits}): payload size, then
 * a walk over the msgpack bytes that builds nothing (nesting depth, number of arrays and maps,
 * declared lengths against the bytes left), then array and string lengths, events per batch, blocks and tokens per event, token ids
 * (integers from 0 to 2^32 − 1) and block size. Anything malformed is one
 * `RouterError("ERR_KV_EVENT_DECODE")`, never a partial batch. A `BlockStored` that cannot be
 * indexed — no token ids (vLLM's offloading tiers send none) or a token count other than
 * blocks × block size — is skipped and counted, like an unknown event type.
 *
 * Cost: one msgpack pass plus one pass over the decoded arrays; O(payload bytes).
 *
 * This file holds the decoder and the frames; the bounds and the msgpack walk are in
 * `wire-limits.ts`, the decoding of each event in `wire-events.ts`.
 */
import { importPeer } from "../internal/optional-peer.js";
import { describe } from "../internal/validate.js";
import type { KvEvent, KvEventBatch } from "./events.js";
import { WireEvents, field, isMap, optInt } from "./wire-events.js";
import { type KvWireLimits, checkLimits, fail, scanShape } from "./wire-limits.js";

export { normalizeBlockHash } from "./wire-events.js";
export { DEFAULT_KV_WIRE_LIMITS, type KvWireLimits } from "./wire-limits.js";

/** One decoded live message. */
export interface KvWireMessage {
  /** The topic frame's bytes. */
  readonly topic: Uint8Array;
  /** The publisher's sequence number (from 0 per publisher process). */
  readonly seq: bigint;
  readonly batch: KvEventBatch;
  /** Events left out: unknown types, and `BlockStored` events without usable token ids. */
  readonly skippedEvents: number;
}

/** One decoded replay reply: a batch, or the end of the replay. */
export type KvReplayReply =
  | { readonly end: false; readonly topic: Uint8Array | undefined; readonly seq: bigint; readonly batch: KvEventBatch; readonly skippedEvents: number }
  | { readonly end: true };

/** The end-of-replay marker's seq: −1 as 8 signed big-endian bytes. */
export const REPLAY_END_SEQ = -1n;

interface MsgpackDecoder {
  decode(bytes: Uint8Array): unknown;
}
interface MsgpackModule {
  Decoder: new (options: Record<string, unknown>) => MsgpackDecoder;
}

/** Reads an 8-byte big-endian seq frame as a signed 64-bit integer (the replay end marker is −1). */
export function readSeq(frame: Uint8Array): bigint {
  if (frame.byteLength !== 8) fail(`the seq frame has ${frame.byteLength} bytes, expected 8`);
  return new DataView(frame.buffer, frame.byteOffset, 8).getBigInt64(0, false);
}

/** An 8-byte big-endian seq frame. */
export function seqFrame(seq: bigint): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigInt64(0, BigInt.asIntN(64, seq), false);
  return out;
}

/**
 * The KV-event wire decoder. Load it with {@link KvWireDecoder.load} (which imports the optional
 * peer `@msgpack/msgpack`); one decoder serves any number of feeds, and holds no state between
 * messages.
 *
 * @example
 * const wire = await KvWireDecoder.load();
 * const { seq, batch } = wire.decodeMessage(frames); // frames: [topic, seq, payload]
 */
export class KvWireDecoder {
  readonly limits: KvWireLimits;
  private readonly msgpack: MsgpackDecoder;
  private readonly scanStack: Float64Array;
  private readonly events: WireEvents;

  /** @internal Use {@link KvWireDecoder.load}. */
  constructor(msgpack: MsgpackModule, limits?: Partial<KvWireLimits>) {
    this.limits = checkLimits(limits);
    const l = this.limits;
    this.scanStack = new Float64Array(l.maxDepth + 1);
    this.events = new WireEvents(l);
    this.msgpack = new msgpack.Decoder({
      useBigInt64: true,
      maxStrLength: 1 << 16,
      maxBinLength: 1 << 16,
      maxArrayLength: Math.max(l.maxEventsPerBatch, l.maxBlocksPerEvent, l.maxTokensPerEvent, 64),
      maxMapLength: 1024,
      maxExtLength: 1 << 16,
    });
  }

  /**
   * Loads `@msgpack/msgpack` and returns a decoder with `limits` over the defaults.
   * @throws RouterError `ERR_MISSING_PEER` when `@msgpack/msgpack` is not installed
   * @throws TypeError / RangeError for a limit out of range
   */
  static async load(limits?: Partial<KvWireLimits>): Promise<KvWireDecoder> {
    const mod = await importPeer("@msgpack/msgpack", "The KV-event feed", () => import("@msgpack/msgpack"));
    return new KvWireDecoder(mod as unknown as MsgpackModule, limits);
  }

  /**
   * Decodes a live message `[topic, seq, payload]`.
   * @throws RouterError `ERR_KV_EVENT_DECODE` when any part is malformed or over the bounds
   */
  decodeMessage(frames: readonly Uint8Array[]): KvWireMessage {
    if (frames.length !== 3) fail(`a message has ${frames.length} frames, expected 3 (topic, seq, payload)`);
    const topic = frames[0]!;
    if (topic.byteLength > this.limits.maxTopicBytes) fail(`the topic has ${topic.byteLength} bytes, over ${this.limits.maxTopicBytes}`);
    const seq = readSeq(frames[1]!);
    if (seq < 0n) fail(`a live message's seq is ${seq}`);
    const { batch, skippedEvents } = this.decodePayload(frames[2]!);
    return { topic, seq, batch, skippedEvents };
  }

  /**
   * Decodes one replay reply as a DEALER receives it: `["", seq, payload]` or `["", topic, seq,
   * payload]` (the leading empty delimiter is optional), the end marker having seq −1.
   * @throws RouterError `ERR_KV_EVENT_DECODE` when it is malformed
   */
  decodeReplayReply(frames: readonly Uint8Array[]): KvReplayReply {
    let parts = frames;
    if (parts.length >= 3 && parts[0]!.byteLength === 0) parts = parts.slice(1);
    if (parts.length !== 2 && parts.length !== 3) fail(`a replay reply has ${frames.length} frames, expected 3 or 4`);
    const topic = parts.length === 3 ? parts[0] : undefined;
    const seq = readSeq(parts[parts.length - 2]!);
    if (seq === REPLAY_END_SEQ) return { end: true };
    if (seq < 0n) fail(`a replay reply's seq is ${seq}`);
    if (topic !== undefined && topic.byteLength > this.limits.maxTopicBytes) fail(`the topic has ${topic.byteLength} bytes`);
    const { batch, skippedEvents } = this.decodePayload(parts[parts.length - 1]!);
    return { end: false, topic, seq, batch, skippedEvents };
  }

  /**
   * Decodes a msgpack `EventBatch` payload.
   * @throws RouterError `ERR_KV_EVENT_DECODE` when it is malformed or over the bounds
   */
  decodePayload(payload: Uint8Array): { batch: KvEventBatch; skippedEvents: number } {
    if (payload.byteLength > this.limits.maxPayloadBytes) fail(`the payload has ${payload.byteLength} bytes, over ${this.limits.maxPayloadBytes}`);
    scanShape(payload, this.scanStack, this.limits.maxContainers);
    let raw: unknown;
    try {
      raw = this.msgpack.decode(payload);
    } catch (error) {
      return fail(`the payload is not msgpack within bounds (${error instanceof Error ? error.message : String(error)})`, error);
    }
    let ts: unknown;
    let events: unknown;
    let rank: unknown;
    if (Array.isArray(raw)) {
      if (raw.length < 2) fail(`a batch array has ${raw.length} items, expected at least 2 (ts, events)`);
      [ts, events, rank] = raw;
    } else if (isMap(raw)) {
      ts = field(raw, "ts");
      events = field(raw, "events");
      rank = field(raw, "data_parallel_rank") ?? field(raw, "attn_dp_rank");
    } else {
      return fail(`the batch is ${describe(raw)}, not an array or a map`);
    }
    if (typeof ts === "bigint") ts = Number(ts);
    if (typeof ts !== "number" || !Number.isFinite(ts)) fail(`the batch's ts is ${describe(ts)}, not a number`);
    if (!Array.isArray(events)) fail(`the batch's events are ${describe(events)}, not an array`);
    if (events.length > this.limits.maxEventsPerBatch) fail(`a batch has ${events.length} events, over ${this.limits.maxEventsPerBatch}`);
    const dataParallelRank = optInt(rank, "data_parallel_rank");
    const out: KvEvent[] = [];
    let skippedEvents = 0;
    for (const e of events) {
      const event = this.events.event(e);
      if (event === undefined) skippedEvents++;
      else out.push(event);
    }
    return { batch: { ts: ts as number, events: out, dataParallelRank }, skippedEvents };
  }
}
