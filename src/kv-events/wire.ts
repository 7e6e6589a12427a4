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
 */
import { RouterError } from "../errors.js";
import { importPeer } from "../internal/optional-peer.js";
import { checkInteger, describe } from "../internal/validate.js";
import type { BlockRemoved, BlockStored, EngineBlockHash, KvEvent, KvEventBatch } from "./events.js";

/** Bounds the decoder enforces; see {@link DEFAULT_KV_WIRE_LIMITS}. */
export interface KvWireLimits {
  /** Largest payload frame read, in bytes (one scheduler step's events rarely reach a few hundred KiB). @default 4 MiB */
  readonly maxPayloadBytes: number;
  /** Largest topic frame, in bytes. @default 4096 */
  readonly maxTopicBytes: number;
  /** Most events in one batch. @default 65,536 */
  readonly maxEventsPerBatch: number;
  /** Most block hashes in one event. @default 65,536 */
  readonly maxBlocksPerEvent: number;
  /** Most token ids in one event. @default 1,048,576 */
  readonly maxTokensPerEvent: number;
  /** Largest block size, in tokens. @default 65,536 */
  readonly maxBlockSize: number;
  /** Deepest nesting of arrays and maps in a payload (vLLM's is 5 or 6 deep). @default 16 */
  readonly maxDepth: number;
  /** Most arrays and maps in a payload: what a one-byte `[]` costs once decoded is ~50 bytes. @default 262,144 */
  readonly maxContainers: number;
}

/** The decoder's default bounds: far above what vLLM and SGLang send, far below what hurts. */
export const DEFAULT_KV_WIRE_LIMITS: KvWireLimits = Object.freeze({
  maxPayloadBytes: 4 * 1024 * 1024,
  maxTopicBytes: 4096,
  maxEventsPerBatch: 65_536,
  maxBlocksPerEvent: 65_536,
  maxTokensPerEvent: 1_048_576,
  maxBlockSize: 65_536,
  maxDepth: 16,
  maxContainers: 262_144,
});

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
 * Normalises one wire block hash to its low 64 bits, unsigned: a non-negative or negative
 * integer (number or bigint) modulo 2^64; a byte string's last 8 bytes, big-endian (the whole
 * string when shorter), as vLLM's `maybe_convert_block_hash` reads a digest.
 * @throws RouterError `ERR_KV_EVENT_DECODE` for anything else (a float, a string, null…)
 */
export function normalizeBlockHash(value: unknown): EngineBlockHash {
  if (typeof value === "bigint") return BigInt.asUintN(64, value);
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) fail(`a block hash is ${describe(value)}, not an integer`);
    return BigInt.asUintN(64, BigInt(value));
  }
  if (value instanceof Uint8Array) {
    if (value.byteLength === 0) fail("a block hash is an empty byte string");
    let h = 0n;
    for (let i = Math.max(0, value.byteLength - 8); i < value.byteLength; i++) h = (h << 8n) | BigInt(value[i]!);
    return h;
  }
  return fail(`a block hash is ${describe(value)}, not an integer or a byte string`);
}

function fail(message: string, cause?: unknown): never {
  throw new RouterError("ERR_KV_EVENT_DECODE", `KV event: ${message}`, cause === undefined ? undefined : { cause });
}

function checkLimits(limits: Partial<KvWireLimits> | undefined): KvWireLimits {
  const l = { ...DEFAULT_KV_WIRE_LIMITS, ...limits };
  checkInteger("limits.maxPayloadBytes", l.maxPayloadBytes, 1, 1 << 30);
  checkInteger("limits.maxTopicBytes", l.maxTopicBytes, 0, 1 << 20);
  checkInteger("limits.maxEventsPerBatch", l.maxEventsPerBatch, 1, 1 << 24);
  checkInteger("limits.maxBlocksPerEvent", l.maxBlocksPerEvent, 1, 1 << 24);
  checkInteger("limits.maxTokensPerEvent", l.maxTokensPerEvent, 1, 1 << 28);
  checkInteger("limits.maxBlockSize", l.maxBlockSize, 1, 1 << 24);
  checkInteger("limits.maxDepth", l.maxDepth, 2, 1024);
  checkInteger("limits.maxContainers", l.maxContainers, 2, 1 << 26);
  return Object.freeze(l);
}

// Bytes after the type byte of msgpack's fixed-size formats 0xc0..0xdf (−1: not fixed-size).
const FIXED = new Int8Array(32).fill(-1);
for (const [t, n] of [[0xc0, 0], [0xc2, 0], [0xc3, 0], [0xca, 4], [0xcb, 8], [0xcc, 1], [0xcd, 2], [0xce, 4], [0xcf, 8], [0xd0, 1], [0xd1, 2], [0xd2, 4], [0xd3, 8], [0xd4, 2], [0xd5, 3], [0xd6, 5], [0xd7, 9], [0xd8, 17]] as const) {
  FIXED[t - 0xc0] = n;
}

/**
 * Walks a msgpack value without building it: refuses nesting deeper than `stack.length − 1`, more
 * than `maxContainers` arrays and maps, a length longer than the bytes left, a truncated value and
 * trailing bytes. Decoding then allocates at most in proportion to what real batches hold.
 * O(payload bytes); `stack` is the caller's scratch space (items left per nesting level).
 */
function scanShape(b: Uint8Array, stack: Float64Array, maxContainers: number): void {
  const maxDepth = stack.length - 1;
  const end = b.byteLength;
  let depth = 0;
  let pos = 0;
  let containers = 0;
  stack[0] = 1;
  while (depth >= 0) {
    if (stack[depth] === 0) {
      depth--;
      continue;
    }
    stack[depth]!--;
    if (pos >= end) fail("the payload is truncated");
    const t = b[pos++]!;
    if (t <= 0x7f || t >= 0xe0) continue;
    let items: number;
    if (t <= 0x8f) items = (t & 0x0f) * 2;
    else if (t <= 0x9f) items = t & 0x0f;
    else if (t <= 0xbf) {
      pos += t & 0x1f;
      continue;
    } else {
      const fixed = FIXED[t - 0xc0]!;
      if (fixed >= 0) {
        pos += fixed;
        continue;
      }
      // Variable lengths: bin, str and ext (8/16/32-bit length), then arrays and maps.
      if (t === 0xc4 || t === 0xd9) {
        pos += 1 + (b[pos] ?? 0);
        continue;
      }
      if (t === 0xc5 || t === 0xda || t === 0xc6 || t === 0xdb || t === 0xc7 || t === 0xc8 || t === 0xc9) {
        const w = t === 0xc5 || t === 0xda || t === 0xc8 ? 2 : t === 0xc7 ? 1 : 4;
        if (pos + w > end) fail("the payload is truncated");
        let n = 0;
        for (let i = 0; i < w; i++) n = n * 256 + b[pos + i]!;
        pos += w + n + (t >= 0xc7 && t <= 0xc9 ? 1 : 0);
        continue;
      }
      if (t === 0xc1) fail("the payload holds the reserved msgpack byte 0xc1");
      const w = t === 0xdc || t === 0xde ? 2 : 4;
      if (pos + w > end) fail("the payload is truncated");
      let n = 0;
      for (let i = 0; i < w; i++) n = n * 256 + b[pos + i]!;
      pos += w;
      items = t === 0xde || t === 0xdf ? n * 2 : n;
    }
    if (++containers > maxContainers) fail(`the payload holds more than ${maxContainers} arrays and maps`);
    if (items > end - pos) fail(`the payload declares ${items} items with ${end - pos} bytes left`);
    if (items === 0) continue;
    if (depth === maxDepth) fail(`the payload nests deeper than ${maxDepth}`);
    stack[++depth] = items;
  }
  if (pos > end) fail("the payload is truncated");
  if (pos !== end) fail(`the payload has ${end - pos} bytes after its value`);
}

const own = Object.prototype.hasOwnProperty;
function field(map: Record<string, unknown>, key: string): unknown {
  return own.call(map, key) ? map[key] : undefined;
}
function isMap(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}
function optString(v: unknown, name: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") fail(`\`${name}\` is ${describe(v)}, not a string`);
  return v;
}
function optInt(v: unknown, name: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === "bigint") v = Number(v);
  if (typeof v !== "number" || !Number.isSafeInteger(v)) fail(`\`${name}\` is ${describe(v)}, not an integer`);
  return v as number;
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

  /** @internal Use {@link KvWireDecoder.load}. */
  constructor(msgpack: MsgpackModule, limits?: Partial<KvWireLimits>) {
    this.limits = checkLimits(limits);
    const l = this.limits;
    this.scanStack = new Float64Array(l.maxDepth + 1);
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
      const event = this.decodeEvent(e);
      if (event === undefined) skippedEvents++;
      else out.push(event);
    }
    return { batch: { ts: ts as number, events: out, dataParallelRank }, skippedEvents };
  }

  /** One event, or `undefined` when it is skipped. */
  private decodeEvent(e: unknown): KvEvent | undefined {
    if (Array.isArray(e)) {
      const tag = e[0];
      if (typeof tag !== "string") fail(`an event array starts with ${describe(tag)}, not its type name`);
      if (tag === "BlockStored") {
        // msgspec array_like: fields in declaration order. SGLang puts a metadata map at 7.
        const loraName = typeof e[7] === "string" ? e[7] : undefined;
        const extraKeys = Array.isArray(e[8]) ? e[8] : undefined;
        const groupIdx = typeof e[9] === "number" || typeof e[9] === "bigint" ? e[9] : undefined;
        return this.stored(e[1], e[2], e[3], e[4], e[5], e[6], loraName, extraKeys, groupIdx);
      }
      if (tag === "BlockRemoved") return this.removed(e[1], e[2], e[3]);
      if (tag === "AllBlocksCleared") return { type: "AllBlocksCleared" };
      return undefined;
    }
    if (isMap(e)) {
      const tag = field(e, "type");
      if (typeof tag !== "string") fail(`an event map's \`type\` is ${describe(tag)}, not its type name`);
      if (tag === "BlockStored") {
        return this.stored(
          field(e, "block_hashes"),
          field(e, "parent_block_hash"),
          field(e, "token_ids"),
          field(e, "block_size"),
          field(e, "lora_id"),
          field(e, "medium"),
          field(e, "lora_name"),
          field(e, "extra_keys"),
          field(e, "group_idx"),
        );
      }
      if (tag === "BlockRemoved") return this.removed(field(e, "block_hashes"), field(e, "medium"), field(e, "group_idx"));
      if (tag === "AllBlocksCleared") return { type: "AllBlocksCleared" };
      return undefined;
    }
    return fail(`an event is ${describe(e)}, not an array or a map`);
  }

  private hashes(v: unknown): EngineBlockHash[] {
    if (!Array.isArray(v)) fail(`\`block_hashes\` is ${describe(v)}, not an array`);
    if (v.length > this.limits.maxBlocksPerEvent) fail(`an event has ${v.length} block hashes, over ${this.limits.maxBlocksPerEvent}`);
    const out = new Array<EngineBlockHash>(v.length);
    for (let i = 0; i < v.length; i++) out[i] = normalizeBlockHash(v[i]);
    return out;
  }

  private stored(
    hashesRaw: unknown,
    parentRaw: unknown,
    tokensRaw: unknown,
    blockSizeRaw: unknown,
    loraIdRaw: unknown,
    mediumRaw: unknown,
    loraNameRaw: unknown,
    extraKeysRaw: unknown,
    groupIdxRaw: unknown,
  ): BlockStored | undefined {
    const blockHashes = this.hashes(hashesRaw);
    const parentBlockHash = parentRaw === undefined || parentRaw === null ? undefined : normalizeBlockHash(parentRaw);
    if (!Array.isArray(tokensRaw)) fail(`\`token_ids\` is ${describe(tokensRaw)}, not an array`);
    if (tokensRaw.length > this.limits.maxTokensPerEvent) fail(`an event has ${tokensRaw.length} token ids, over ${this.limits.maxTokensPerEvent}`);
    for (let i = 0; i < tokensRaw.length; i++) {
      const t = tokensRaw[i];
      // Integers from msgpack arrive as numbers up to 2^32 (uint64 formats as bigint, refused).
      if (typeof t !== "number" || !Number.isInteger(t) || t < 0 || t > 0xffffffff) {
        fail(`token id ${describe(t)} is not an integer from 0 to 2^32 − 1`);
      }
    }
    const blockSize = optInt(blockSizeRaw, "block_size");
    if (blockSize === undefined || blockSize < 0 || blockSize > this.limits.maxBlockSize) {
      fail(`\`block_size\` is ${describe(blockSizeRaw)}, not an integer from 0 to ${this.limits.maxBlockSize}`);
    }
    const loraId = optInt(loraIdRaw, "lora_id");
    const medium = optString(mediumRaw, "medium");
    const loraName = optString(loraNameRaw, "lora_name");
    const groupIdx = optInt(groupIdxRaw, "group_idx");
    let extraKeys: readonly unknown[] | undefined;
    if (extraKeysRaw !== undefined && extraKeysRaw !== null) {
      if (!Array.isArray(extraKeysRaw)) fail(`\`extra_keys\` is ${describe(extraKeysRaw)}, not an array`);
      extraKeys = extraKeysRaw;
    }
    // Not indexable: a tier that sends no tokens, or a partial block (not blocks × block size).
    if (tokensRaw.length === 0 || blockSize === 0 || tokensRaw.length !== blockHashes.length * blockSize) return undefined;
    const event: BlockStored = {
      type: "BlockStored",
      blockHashes,
      parentBlockHash,
      tokenIds: tokensRaw as number[],
      blockSize,
      loraName,
      medium,
      loraId,
      groupIdx,
      extraKeys,
      cacheSalt: parentBlockHash === undefined ? saltOf(extraKeys, loraName) : undefined,
    };
    return event;
  }

  private removed(hashesRaw: unknown, mediumRaw: unknown, groupIdxRaw: unknown): BlockRemoved {
    return {
      type: "BlockRemoved",
      blockHashes: this.hashes(hashesRaw),
      medium: optString(mediumRaw, "medium"),
      groupIdx: optInt(groupIdxRaw, "group_idx"),
    };
  }
}

/**
 * The request's `cache_salt` among a chain's first block's extra keys. vLLM keys the first block
 * with (LoRA name, multimodal hashes, cache salt, …) in that order: the salt is the last string
 * that is not the LoRA name. `undefined` without extra keys or without such a string.
 */
function saltOf(extraKeys: readonly unknown[] | undefined, loraName: string | undefined): string | undefined {
  const first = extraKeys?.[0];
  if (!Array.isArray(first)) return undefined;
  for (let i = first.length - 1; i >= 0; i--) {
    const k: unknown = first[i];
    if (typeof k === "string" && k !== loraName) return k;
  }
  return undefined;
}
