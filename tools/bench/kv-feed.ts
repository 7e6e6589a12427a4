/**
 * The virtual fleet's KV events, delivered to the `precise-prefix` routers after a modelled lag.
 *
 * The emulated engines publish vLLM-exact events (`VirtualFleet({ kvEvents })`, in the wire's
 * shape); here each is converted into the shape the library's decoder produces (`KvEventBatch`:
 * engine hashes as unsigned 64-bit `bigint`, the `cache_salt` read from the first block's extra
 * keys, a `BlockStored` of a partial block skipped), queued, and handed to every router's index
 * once `lagMs` of virtual time has passed since the engine emitted it — the time a real event
 * takes from the engine's scheduler step through ZeroMQ to a subscriber. Delivery happens before
 * each routing decision ({@link KvEventHub.deliverUntil}), the only moment an index is read, so
 * it is the same as delivering continuously. Every router process gets its own index, fed by the
 * same events (each process subscribes to every engine). An engine's feed is in sync from its
 * first delivered event on (a subscriber that joined before the engine started).
 *
 * Cost: one object per event and one `bigint` per block hash; the queue holds `lagMs` of events.
 */
import type { WireEvent } from "../fleet/index.js";
import { type KvEvent, type KvEventBatch, type KvEventSink, normalizeBlockHash } from "prefix-router/kv-events";

/** What the benchmark's feed reports (`router.stats().precise.feed`). */
export interface VirtualFeedStats {
  /** The modelled lag, ms of virtual time. */
  readonly lagMs: number;
  /** Events delivered to each index, and batches (consecutive events of one engine at one time). */
  readonly events: number;
  readonly batches: number;
  /** Engines in sync (that delivered at least one event). */
  readonly inSync: number;
}

/** The default modelled lag, ms: a scheduler step, a ZeroMQ hop and a decode. */
export const DEFAULT_KV_LAG_MS = 50;

/** The virtual fleet's events, queued until their lag has passed, then fanned out to every subscribed index. */
export class KvEventHub {
  private readonly engines: string[] = [];
  private readonly events: KvEvent[] = [];
  private readonly times: number[] = [];
  private head = 0;
  private readonly sinks: KvEventSink[] = [];
  private readonly synced = new Set<string>();
  private delivered = 0;
  private batches = 0;

  /**
   * @param lagMs virtual time from an engine's emission to the routers' indexes
   * @param blockSize the engines' tokens per block (the routers' `precisePrefix.blockSize`)
   */
  constructor(
    readonly lagMs: number,
    readonly blockSize: number,
  ) {}

  /** The fleet's `kvEvents` callback: converts and queues one event. */
  readonly push = (instance: string, event: WireEvent, atMs: number): void => {
    const e = toKvEvent(event);
    if (e === undefined) return;
    this.engines.push(instance);
    this.events.push(e);
    this.times.push(atMs);
  };

  /** Delivers, in emission order, every event emitted at or before `nowMs − lagMs`. */
  deliverUntil(nowMs: number): void {
    const until = nowMs - this.lagMs;
    let k = this.head;
    const n = this.events.length;
    while (k < n && (this.times[k] as number) <= until) {
      const engine = this.engines[k] as string;
      const at = this.times[k] as number;
      let end = k + 1;
      while (end < n && this.engines[end] === engine && this.times[end] === at) end++;
      const batch: KvEventBatch = { ts: at / 1000, events: this.events.slice(k, end), dataParallelRank: undefined };
      for (const sink of this.sinks) sink.apply(engine, batch);
      this.synced.add(engine);
      this.delivered += end - k;
      this.batches++;
      k = end;
    }
    this.head = k;
    if (k > 4096 && k * 2 > n) {
      this.engines.splice(0, k);
      this.events.splice(0, k);
      this.times.splice(0, k);
      this.head = 0;
    }
  }

  /** A feed for one router: its index becomes a sink of every event delivered from now on. */
  feed(sink: KvEventSink): { inSync(engine: string): boolean; stats(): VirtualFeedStats } {
    this.sinks.push(sink);
    return { inSync: (engine) => this.synced.has(engine), stats: () => this.stats() };
  }

  /** What was delivered so far (to each subscribed index). */
  stats(): VirtualFeedStats {
    return { lagMs: this.lagMs, events: this.delivered, batches: this.batches, inSync: this.synced.size };
  }
}

/**
 * One wire event in the decoder's shape (`KvWireDecoder`): `undefined` for what the
 * decoder skips (a `BlockStored` without tokens or of a partial block).
 */
export function toKvEvent(e: WireEvent): KvEvent | undefined {
  if (e.type === "AllBlocksCleared") return { type: "AllBlocksCleared" };
  if (e.type === "BlockRemoved") return { type: "BlockRemoved", blockHashes: e.block_hashes.map(normalizeBlockHash), medium: e.medium ?? undefined, groupIdx: e.group_idx ?? undefined };
  const blockHashes = e.block_hashes.map(normalizeBlockHash);
  if (e.token_ids.length === 0 || e.block_size === 0 || e.token_ids.length !== blockHashes.length * e.block_size) return undefined;
  const parentBlockHash = e.parent_block_hash === null ? undefined : normalizeBlockHash(e.parent_block_hash);
  const loraName = e.lora_name ?? undefined;
  const extraKeys = e.extra_keys ?? undefined;
  return {
    type: "BlockStored",
    blockHashes,
    parentBlockHash,
    tokenIds: e.token_ids,
    blockSize: e.block_size,
    loraName,
    medium: e.medium ?? undefined,
    loraId: e.lora_id ?? undefined,
    groupIdx: e.group_idx ?? undefined,
    extraKeys,
  };
}
