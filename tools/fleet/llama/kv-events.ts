/**
 * KV-cache events for the llama fleet, in vLLM's format: what each slot really holds, as
 * 16-token blocks. llama-server publishes no such events (and its `/slots` shows no block
 * contents); our engine does, from node-llama-cpp's own record of each sequence's tokens
 * (`contextTokens`: the prompt and the generated tokens it evaluated).
 *
 * {@link SlotBlockEvents} turns "slot s now holds these tokens" into events: the slot's full
 * 16-token blocks are chained (block i's hash covers block i − 1's hash and its 16 tokens); the
 * blocks it held before and no longer holds are `BlockRemoved`, the new ones one `BlockStored`
 * (parent hash, `token_ids`, `block_size` 16). The engine holds a block once however many slots
 * hold it, as vLLM holds a page once: a block is stored when its first holder takes it and
 * removed when its last holder drops it. The engine calls it when a slot's tokens change:
 * at admission (the prompt it is about to evaluate, as vLLM publishes a request's blocks when it
 * allocates them) and at the request's end (what the slot really holds).
 *
 * Block hashes are this engine's own stand-in — the first 8 bytes of SHA-256 over the parent's
 * hash (8 bytes big-endian, 0 for the first block) and the block's tokens (4 bytes little-endian
 * each) — deliberately not the router's hash function: a router must index the events'
 * `token_ids`, as llm-d's and Dynamo's do, and use the engine's hashes only to resolve removals
 * and parents. Cost: one SHA-256 of 72 bytes per new block.
 *
 * The events leave through a {@link KvPublisher}: the ZeroMQ publisher (vLLM's wire format,
 * replay, seq) when the fleet is given `kvEvents.port`, and/or the engine's IPC channel to the
 * fleet's process when it is given `kvEvents.onBatch`.
 */

import { createHash } from "node:crypto";
import type { KvEvent, KvEventBatch } from "prefix-router/kv-events";
import { KvEventPublisher, type WireEvent } from "../kv-events/publisher.js";

export type { KvEvent, KvEventBatch };

/** Tokens per published block: vLLM's default block size. */
export const KV_BLOCK_SIZE = 16;

/** Where an engine's events go: the ZeroMQ publisher, the fleet's process, a test. */
export interface KvPublisher {
  /** Publishes one batch of events, in order. Never throws for a closed or slow consumer. */
  publish(events: KvEvent[]): void;
  /** Releases the publisher's sockets. */
  close?(): Promise<void>;
}

/** The engine's hash of a block: see the file header. */
export function engineBlockHash(parent: bigint | undefined, tokens: readonly number[], from: number, to: number): bigint {
  const buf = Buffer.allocUnsafe(8 + 4 * (to - from));
  buf.writeBigUInt64BE(parent ?? 0n, 0);
  for (let i = from; i < to; i++) buf.writeUInt32LE(tokens[i]! >>> 0, 8 + 4 * (i - from));
  return createHash("sha256").update(buf).digest().readBigUInt64BE(0);
}

/** What was published for one slot: its tokens (whole blocks only) and their blocks' hashes. */
interface SlotState {
  tokens: number[];
  hashes: bigint[];
}

/** The diff of each slot's blocks into events; see the file header. */
export class SlotBlockEvents {
  private readonly slots: SlotState[];
  /** Holders of each block the engine holds. */
  private readonly holders = new Map<bigint, number>();

  constructor(
    slots: number,
    readonly blockSize: number = KV_BLOCK_SIZE,
  ) {
    if (!Number.isSafeInteger(blockSize) || blockSize < 1) throw new RangeError(`Expected \`blockSize\` to be an integer ≥ 1, got ${String(blockSize)}`);
    this.slots = Array.from({ length: slots }, () => ({ tokens: [], hashes: [] }));
  }

  /** Distinct blocks the engine holds, as published. */
  get blocks(): number {
    return this.holders.size;
  }

  /**
   * The events that bring what was published for `slot` to `tokens` (its whole blocks; a
   * partial last block is not a block yet): removals first, then one chained store. Empty when
   * its whole blocks did not change.
   */
  update(slot: number, tokens: readonly number[]): KvEvent[] {
    const s = this.slots[slot];
    if (s === undefined) throw new RangeError(`No slot ${slot}`);
    const bs = this.blockSize;
    const full = Math.floor(tokens.length / bs);
    // Whole blocks kept: those whose tokens, and so whose chain, did not change.
    let kept = 0;
    const limit = Math.min(full, s.hashes.length);
    outer: for (; kept < limit; kept++) {
      for (let i = kept * bs; i < (kept + 1) * bs; i++) if (s.tokens[i] !== tokens[i]) break outer;
    }
    const events: KvEvent[] = [];
    const removed: bigint[] = [];
    for (const h of s.hashes.slice(kept)) {
      const n = this.holders.get(h)! - 1;
      if (n === 0) {
        this.holders.delete(h);
        removed.push(h);
      } else this.holders.set(h, n);
    }
    // Deepest first, as an engine evicts a chain from its end.
    if (removed.length > 0) events.push({ type: "BlockRemoved", blockHashes: removed.reverse(), medium: "GPU" });
    const hashes = s.hashes.slice(0, kept);
    let firstNew = -1;
    for (let b = kept; b < full; b++) {
      const h = engineBlockHash(b === 0 ? undefined : hashes[b - 1], tokens, b * bs, (b + 1) * bs);
      hashes.push(h);
      const n = this.holders.get(h) ?? 0;
      this.holders.set(h, n + 1);
      // A block another slot holds is already stored, and so is every block before it.
      if (n === 0 && firstNew < 0) firstNew = b;
    }
    if (firstNew >= 0) {
      events.push({
        type: "BlockStored",
        blockHashes: hashes.slice(firstNew),
        parentBlockHash: firstNew === 0 ? undefined : hashes[firstNew - 1],
        tokenIds: tokens.slice(firstNew * bs, full * bs),
        blockSize: bs,
        loraName: undefined,
        medium: "GPU",
      });
    }
    s.tokens = tokens.slice(0, full * bs);
    s.hashes = hashes;
    return events;
  }
}

/** Forwards batches over the engine process's IPC channel to the fleet's process. */
export function ipcPublisher(send: (batch: KvEventBatch) => void, clock: { now(): number } = Date): KvPublisher {
  return {
    publish(events) {
      send({ ts: clock.now() / 1000, events, dataParallelRank: undefined });
    },
  };
}

/**
 * `events` with vLLM's field names (`block_hashes`, `parent_block_hash`, `token_ids`, …; `null`
 * for none): what a vLLM-exact publisher encodes. The fleet's ZeroMQ publisher takes these.
 */
export function toVllmEvents(events: readonly KvEvent[]): WireEvent[] {
  return events.map((e): WireEvent => {
    if (e.type === "BlockStored") {
      return {
        type: "BlockStored",
        block_hashes: e.blockHashes,
        parent_block_hash: e.parentBlockHash ?? null,
        token_ids: e.tokenIds,
        block_size: e.blockSize,
        lora_id: null,
        medium: e.medium ?? null,
        lora_name: e.loraName ?? null,
      };
    }
    if (e.type === "BlockRemoved") return { type: "BlockRemoved", block_hashes: e.blockHashes, medium: e.medium ?? null };
    return { type: "AllBlocksCleared" };
  });
}

/** Where an engine's ZeroMQ publisher binds. */
export interface ZmqKvEndpoint {
  /** The PUB socket: `tcp://host:port`. */
  readonly endpoint: string;
  /** The replay ROUTER socket, if any. */
  readonly replayEndpoint: string | undefined;
}

/**
 * Opens the ZeroMQ publisher of vLLM's wire format on `where` (the fleet's vLLM-exact
 * publisher, `tools/fleet/kv-events/publisher.ts`). `publish` is not awaited, so the engine
 * never waits on a subscriber.
 */
export async function openZmqKvPublisher(where: ZmqKvEndpoint): Promise<KvPublisher> {
  const pub = await KvEventPublisher.open({ endpoint: where.endpoint, ...(where.replayEndpoint !== undefined && { replayEndpoint: where.replayEndpoint }) });
  return {
    publish: (events) => void pub.publish(toVllmEvents(events)),
    close: () => pub.close(),
  };
}

/** Several publishers as one. */
export function fanOut(publishers: readonly KvPublisher[]): KvPublisher {
  return {
    publish(events) {
      for (const p of publishers) p.publish(events);
    },
    async close() {
      await Promise.all(publishers.map((p) => p.close?.()));
    },
  };
}
