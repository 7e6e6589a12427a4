/**
 * A KV-event publisher that speaks exactly what vLLM's `ZmqEventPublisher`
 * (`vllm/distributed/kv_events.py`, v0.26) puts on the wire, for tests and the emulated fleet:
 *
 * - a PUB socket bound to `endpoint`, sending `[topic, seq (8 bytes big-endian), payload]` with
 *   `seq` counting from 0 for each publisher (a restarted engine starts again at 0);
 * - an optional ROUTER socket bound to `replayEndpoint` that answers a request
 *   `[identity, "", start_seq]` with every buffered batch whose seq ≥ start_seq, each as
 *   `[identity, "", topic, seq, payload]` (`replayTopic: false` leaves the topic out, as vLLM did
 *   before v0.26), then the end marker with seq −1 and an empty payload; the buffer keeps the
 *   last `bufferSteps` batches (vLLM's `buffer_steps`);
 * - both ports offset by the data-parallel rank (`tcp://…:5557` → `:5557 + rank`; an `ipc://` or
 *   `inproc://` endpoint gets the suffix `_dp<rank>`), as `offset_endpoint_port` does;
 * - payloads in either encoding vLLM has shipped (`encoding`): events as msgspec tagged arrays
 *   (`array_like`, before vllm-project/vllm#42892) or as maps with `type` (after it); the batch
 *   itself as an array `[ts, events, data_parallel_rank]` (as vLLM sends it) or, with
 *   `batchEncoding: "map"`, as a map.
 *
 * Its msgpack encoder (`msgpack.ts`) is independent of the library's decoder. It reaches
 * ZeroMQ through the optional package `zeromq`.
 */
import { importOptional } from "../../common/optional.js";
import { encodeMsgpack, Float64, type MsgpackValue } from "./msgpack.js";

/** A block hash as an engine may put it on the wire: an integer of any width, or digest bytes. */
export type WireBlockHash = bigint | number | Uint8Array;

/** vLLM's `BlockStored`, field for field (snake_case as on the wire). */
export interface WireBlockStored {
  readonly type: "BlockStored";
  readonly block_hashes: readonly WireBlockHash[];
  readonly parent_block_hash: WireBlockHash | null;
  readonly token_ids: readonly number[];
  readonly block_size: number;
  readonly lora_id: number | null;
  readonly medium: string | null;
  readonly lora_name: string | null;
  readonly extra_keys?: readonly MsgpackValue[] | null;
  readonly group_idx?: number | null;
  readonly kv_cache_spec_kind?: string | null;
  readonly kv_cache_spec_sliding_window?: number | null;
}

/** vLLM's `BlockRemoved`. */
export interface WireBlockRemoved {
  readonly type: "BlockRemoved";
  readonly block_hashes: readonly WireBlockHash[];
  readonly medium: string | null;
  readonly group_idx?: number | null;
}

/** vLLM's `AllBlocksCleared`. */
export interface WireAllBlocksCleared {
  readonly type: "AllBlocksCleared";
}

export type WireEvent = WireBlockStored | WireBlockRemoved | WireAllBlocksCleared;

/** vLLM's `KVEventBatch`. */
export interface WireBatch {
  /** Seconds since the epoch (a float on the wire). */
  readonly ts: number;
  readonly events: readonly WireEvent[];
  readonly data_parallel_rank?: number | null;
}

/** How events and batches are laid out in msgpack. */
export interface WireEncoding {
  /** `"array"`: msgspec tagged arrays (vLLM before mid-2026); `"map"`: maps with `type`. @default "map" */
  readonly events?: "array" | "map";
  /** `"array"`: `[ts, events, data_parallel_rank]` as vLLM sends it; `"map"`: `{ts, events, data_parallel_rank}`. @default "array" */
  readonly batch?: "array" | "map";
}

// Field order of vLLM's structs; fields after `required` have a default (None) and are
// omitted when left at it (msgspec `omit_defaults`: for arrays, only trailing ones).
const STORED_FIELDS = [
  "block_hashes",
  "parent_block_hash",
  "token_ids",
  "block_size",
  "lora_id",
  "medium",
  "lora_name",
  "extra_keys",
  "group_idx",
  "kv_cache_spec_kind",
  "kv_cache_spec_sliding_window",
] as const;
const STORED_REQUIRED = 7;
const REMOVED_FIELDS = ["block_hashes", "medium", "group_idx"] as const;
const REMOVED_REQUIRED = 2;

function structFields(event: WireEvent): { names: readonly string[]; required: number } {
  if (event.type === "BlockStored") return { names: STORED_FIELDS, required: STORED_REQUIRED };
  if (event.type === "BlockRemoved") return { names: REMOVED_FIELDS, required: REMOVED_REQUIRED };
  return { names: [], required: 0 };
}

function fieldValue(event: WireEvent, name: string): MsgpackValue {
  const v = (event as unknown as Record<string, MsgpackValue>)[name];
  return v === undefined ? null : v;
}

function encodeEvent(event: WireEvent, layout: "array" | "map"): MsgpackValue {
  const { names, required } = structFields(event);
  if (layout === "array") {
    let last = required;
    for (let i = required; i < names.length; i++) if (fieldValue(event, names[i]!) !== null) last = i + 1;
    return [event.type, ...names.slice(0, last).map((n) => fieldValue(event, n))];
  }
  const map = new Map<string, MsgpackValue>([["type", event.type]]);
  names.forEach((n, i) => {
    const v = fieldValue(event, n);
    if (i < required || v !== null) map.set(n, v);
  });
  return map;
}

/** Encodes a batch as msgspec would encode vLLM's `KVEventBatch` with `encoding`. */
export function encodeWireBatch(batch: WireBatch, encoding: WireEncoding = {}): Uint8Array {
  const events = batch.events.map((e) => encodeEvent(e, encoding.events ?? "map"));
  const rank = batch.data_parallel_rank ?? null;
  if ((encoding.batch ?? "array") === "array") {
    return encodeMsgpack(rank === null ? [new Float64(batch.ts), events] : [new Float64(batch.ts), events, rank]);
  }
  const map = new Map<string, MsgpackValue>([
    ["ts", new Float64(batch.ts)],
    ["events", events],
  ]);
  if (rank !== null) map.set("data_parallel_rank", rank);
  return encodeMsgpack(map);
}

/** An 8-byte big-endian seq frame (signed: the replay end marker is −1). */
export function wireSeq(seq: bigint): Uint8Array {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigInt64(0, BigInt.asIntN(64, seq), false);
  return b;
}

/**
 * vLLM's `offset_endpoint_port`: `tcp://host:port` → `tcp://host:(port + rank)`; an `ipc://` or
 * `inproc://` endpoint gets `_dp<rank>` appended; rank 0 changes nothing.
 */
export function offsetEndpoint(endpoint: string, rank: number): string {
  if (rank === 0) return endpoint;
  if (endpoint.startsWith("ipc://") || endpoint.startsWith("inproc://")) return `${endpoint}_dp${rank}`;
  const colon = endpoint.lastIndexOf(":");
  const port = Number(endpoint.slice(colon + 1));
  if (!endpoint.startsWith("tcp://") || colon < 6 || !Number.isInteger(port)) throw new RangeError(`Expected a tcp://host:port, ipc:// or inproc:// endpoint, got ${JSON.stringify(endpoint)}`);
  return `${endpoint.slice(0, colon)}:${port + rank}`;
}

/** Options of {@link KvEventPublisher.open}. */
export interface KvEventPublisherOptions {
  /** Where the PUB socket binds, before the rank offset: `"tcp://127.0.0.1:5557"`. */
  readonly endpoint: string;
  /** Where the replay ROUTER binds, before the rank offset; none when absent. */
  readonly replayEndpoint?: string;
  /** The data-parallel rank: offsets both ports and fills `data_parallel_rank`. @default 0 */
  readonly dataParallelRank?: number;
  /** The topic frame. @default "" */
  readonly topic?: string;
  /** Payload layout. @default { events: "map", batch: "array" } (vLLM v0.26) */
  readonly encoding?: WireEncoding;
  /** Replies carry the topic frame (vLLM ≥ 0.26). @default true */
  readonly replayTopic?: boolean;
  /** Batches kept for replay (vLLM's `buffer_steps`). @default 10000 */
  readonly bufferSteps?: number;
  /** The PUB socket's send high-water mark (vLLM's `hwm`). @default 100000 */
  readonly sendHighWaterMark?: number;
  /** Wall clock in ms for the batches' `ts`. @default Date */
  readonly clock?: { now(): number };
}

type ZmqModule = typeof import("zeromq");

/** A vLLM-exact KV-event publisher; see the file header. */
export class KvEventPublisher {
  /** The PUB socket's endpoint after the rank offset (the port resolved when bound to `:0`… use explicit ports). */
  readonly endpoint: string;
  /** The replay ROUTER's endpoint after the rank offset, if any. */
  readonly replayEndpoint: string | undefined;
  /** Replay requests answered so far. */
  replayRequests = 0;
  private nextSeq = 0n;
  private readonly buffer: { seq: bigint; payload: Uint8Array }[] = [];
  private closed = false;
  private readonly topic: Uint8Array;
  private replayLoop: Promise<void> | undefined;

  private constructor(
    private readonly pub: import("zeromq").Publisher,
    private readonly router: import("zeromq").Router | undefined,
    private readonly options: KvEventPublisherOptions,
  ) {
    this.endpoint = pub.lastEndpoint ?? options.endpoint;
    this.replayEndpoint = router?.lastEndpoint ?? undefined;
    this.topic = new TextEncoder().encode(options.topic ?? "");
    if (router) this.replayLoop = this.serveReplays(router);
  }

  /** Binds the sockets and starts answering replay requests. */
  static async open(options: KvEventPublisherOptions): Promise<KvEventPublisher> {
    const zmq: ZmqModule = await importOptional("zeromq", () => import("zeromq"), "The KV-event publisher");
    const rank = options.dataParallelRank ?? 0;
    const pub = new zmq.Publisher({ sendHighWaterMark: options.sendHighWaterMark ?? 100_000, linger: 0 });
    let router: import("zeromq").Router | undefined;
    try {
      await pub.bind(offsetEndpoint(options.endpoint, rank));
      if (options.replayEndpoint !== undefined) {
        router = new zmq.Router({ linger: 0 });
        await router.bind(offsetEndpoint(options.replayEndpoint, rank));
      }
    } catch (error) {
      pub.close();
      router?.close();
      throw error;
    }
    return new KvEventPublisher(pub, router, options);
  }

  /** The seq the next batch gets. */
  get seq(): bigint {
    return this.nextSeq;
  }

  /** Encodes `events` as this publisher's next batch (its `ts` from the clock, its rank filled in). */
  encode(events: readonly WireEvent[], ts?: number): Uint8Array {
    const rank = this.options.dataParallelRank ?? 0;
    const now = ts ?? (this.options.clock ?? Date).now() / 1000;
    return encodeWireBatch({ ts: now, events, data_parallel_rank: rank }, this.options.encoding);
  }

  /** Publishes one batch; returns its seq. */
  async publish(events: readonly WireEvent[], ts?: number): Promise<bigint> {
    return this.publishPayload(this.encode(events, ts));
  }

  /** Publishes an already encoded payload as the next batch (kept for replay); returns its seq. */
  async publishPayload(payload: Uint8Array, options: { drop?: boolean } = {}): Promise<bigint> {
    const seq = this.nextSeq++;
    this.buffer.push({ seq, payload });
    const max = this.options.bufferSteps ?? 10_000;
    if (this.buffer.length > max) this.buffer.splice(0, this.buffer.length - max);
    if (!options.drop) await this.pub.send([this.topic, wireSeq(seq), payload]);
    return seq;
  }

  /**
   * Takes the next seq and keeps the batch for replay without sending it: a batch lost to the
   * high-water mark, as subscribers see one.
   */
  async drop(events: readonly WireEvent[], ts?: number): Promise<bigint> {
    return this.publishPayload(this.encode(events, ts), { drop: true });
  }

  /** Sends arbitrary frames on the PUB socket (hostile-input tests). */
  async sendRaw(frames: readonly Uint8Array[]): Promise<void> {
    await this.pub.send([...frames]);
  }

  /**
   * Closes both sockets (a restart is `close()` then a new `open()` on the same endpoints): they
   * are unbound first, so their ports are free when it resolves (a socket's `close()` alone
   * releases its port later, in ZeroMQ's I/O thread).
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([this.pub.unbind(this.endpoint), ...(this.router && this.replayEndpoint !== undefined ? [this.router.unbind(this.replayEndpoint)] : [])]);
    this.pub.close();
    this.router?.close();
    await this.replayLoop?.catch(() => {});
  }

  private async serveReplays(router: import("zeromq").Router): Promise<void> {
    try {
      for await (const frames of router) {
        if (frames.length !== 3) continue; // vLLM logs "Invalid replay request" and carries on
        const [id, , start] = frames as [Buffer, Buffer, Buffer];
        if (start.byteLength !== 8) continue;
        this.replayRequests++;
        const from = start.readBigUInt64BE(0);
        const head = this.options.replayTopic === false ? [] : [this.topic];
        for (const { seq, payload } of this.buffer.slice()) {
          if (seq >= from) await router.send([id, new Uint8Array(0), ...head, wireSeq(seq), payload]);
        }
        await router.send([id, new Uint8Array(0), ...head, wireSeq(-1n), new Uint8Array(0)]);
      }
    } catch {
      // Closed.
    }
  }
}

export { Float64 } from "./msgpack.js";
