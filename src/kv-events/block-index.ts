/**
 * The KV-event index: which blocks each engine holds, built from the engines' own events
 * (`BlockStored`, `BlockRemoved`, `AllBlocksCleared`) and keyed by our chained hash of the
 * blocks' tokens (`block-hash.ts`), never by the engine's hash.
 *
 * Structures (typed arrays only, no object per block; `block-table.ts` and `pending.ts`, over
 * `open-addressing.ts`):
 *
 * - **blocks**: one entry per distinct block key — the key's two uint32 halves, a bitset of the
 *   engines holding it (`⌈engines / 32⌉` words), the head of its list of engine-hash entries and
 *   a CLOCK reference bit; found through an open-addressing table of entry ids (linear probing,
 *   deletion by backward shift, load ≤ ½).
 * - **engine hashes**: one entry per (engine, block) the engines hold — the engine's hash (low 64
 *   bits), the engine, our block entry, the next entry of the same block — found through a second
 *   table keyed by (engine, engine hash). It resolves `parent_block_hash` and `BlockRemoved`.
 * - **pending**: the strategy's own decisions (blocks just sent to an engine), each until its
 *   expiry or until a `BlockStored` confirms it: a ring in insertion (= expiry) order plus a table.
 *
 * Bounds: at most `capacityBlocks` (engine, block) pairs. Past it, the CLOCK hand (Corbató's
 * second-chance approximation of LRU) evicts whole blocks whose reference bit is clear; a store
 * sets the bit. Engines send `BlockRemoved` for what they evict, so the bound is only reached
 * when removals were lost; evictions are counted. Memory: pools grow by doubling up to the
 * bound; a held block costs 17 + 4·(words − 1) bytes of block entry + 8 of table, an (engine,
 * block) pair 18 + 8 — ≤ 51 bytes per pair with up to 32 engines (measured:
 * test/kv-events/index.test.ts, microbench/precise-index.ts).
 *
 * Each engine has a generation, bumped whenever it loses a block: a run seen at an unchanged
 * generation still holds, so a caller may pass it back (`held`) and only blocks past it are probed.
 *
 * Costs: a stored block O(1) expected (two XXH32 lanes over its tokens, three probes); a removal
 * O(1) + the block's holders; a query O(n) probes for n request blocks (one probe per block gives
 * every engine's bit) + pending probes only where a bit is missing; `clear(engine)` O(pairs held)
 * — engine restarts and unfillable gaps only.
 */
import type { BlockRemoved, BlockStored, KvEventBatch, KvEventSink } from "./events.js";
import { type BlockExtraKeys, BlockHasher, type TokenBlocks } from "./block-hash.js";
import { BlockTable } from "./block-table.js";
import { type KvIndexStats, newIndexCounts } from "./index-stats.js";
import { EMPTY, pow2 } from "./open-addressing.js";
import { PendingDecisions } from "./pending.js";

export { BlockHasher, type BlockExtraKeys, type TokenBlocks } from "./block-hash.js";
export type { KvIndexStats } from "./index-stats.js";

/** Options of {@link KvBlockIndex}. */
export interface KvBlockIndexOptions {
  /** Tokens per block: must equal the engines' (`--block-size`; vLLM's default 16). */
  readonly blockSize: number;
  /** The most (engine, block) pairs held; past it whole blocks are evicted (CLOCK). */
  readonly capacityBlocks: number;
  /** The served base model's name, the first extra key of every chain the events describe. */
  readonly model: string | undefined;
  /** How long the strategy's own decisions count as held before events confirm them, ms. */
  readonly pendingTtlMs: number;
  /** The most pending (engine, block) entries; the oldest go first. */
  readonly pendingCapacity: number;
}

/**
 * What {@link KvBlockIndex.runs} reads and writes. A caller on the decision path keeps one and
 * refills its fields for each query (no allocation).
 */
export interface RunsQuery {
  /** Engine slots, one per candidate `k` (−1: an engine the index never saw, whose run is 0). */
  engines: ArrayLike<number>;
  /** Pending decisions count while unexpired at `now` (NaN: they do not count). */
  now: number;
  /** Out: `out[k]`, the run of `engines[k]`, pending decisions included. */
  out: Int32Array;
  /** `held[k]`: blocks engine `k` is known to hold (a run seen at an unchanged generation), not probed again. */
  held: Int32Array | undefined;
  /** Out: `eventRuns[k]`, the run from the events alone (pending decisions not counted). */
  eventRuns: Int32Array | undefined;
}

/** The engine-hash key's halves from an engine block hash (a bigint, its low 64 bits). */
function halves(h: bigint): [number, number] {
  return [Number((h >> 32n) & 0xffffffffn), Number(h & 0xffffffffn)];
}

/**
 * What each engine holds, from its KV events: a {@link KvEventSink} for one or more engine feeds,
 * queried by the `precise-prefix` strategy. Engines are the router's target ids.
 *
 * @example
 * const index = new KvBlockIndex({ blockSize: 16, capacityBlocks: 1 << 20, model: "llama", pendingTtlMs: 10_000, pendingCapacity: 65_536 });
 * index.apply("a", batch);                         // from the engine's feed
 * const chain = index.hashTokens(tokens, { model: "llama", lora: undefined, cacheSalt: undefined });
 * const run = index.heldRun(chain, index.engine("a"), clock.now());
 */
export class KvBlockIndex implements KvEventSink {
  readonly hasher: BlockHasher;
  private readonly cap: number;

  // Engines.
  private readonly slotById = new Map<string, number>();
  private readonly ids: string[] = [];

  private readonly counts = newIndexCounts();
  /** Blocks and engine hashes (`block-table.ts`). */
  private readonly table: BlockTable;
  /** The strategy's own decisions (`pending.ts`). */
  private readonly pending: PendingDecisions;
  private readonly scratch = { hashes: new Uint32Array(64), parent: new Uint32Array(2) };
  private active = new Int32Array(16);

  constructor(readonly options: KvBlockIndexOptions) {
    this.hasher = new BlockHasher(options.blockSize);
    this.cap = options.capacityBlocks;
    this.table = new BlockTable(this.cap, this.counts);
    this.pending = new PendingDecisions(options.pendingCapacity, this.counts);
  }

  // ───────────────────────── engines ─────────────────────────

  /** The engine's slot (created on first sight; at most 65,535 engines). */
  engine(id: string): number {
    let s = this.slotById.get(id);
    if (s === undefined) {
      s = this.ids.length;
      if (s >= 0xffff) throw new RangeError(`Expected at most 65535 engines in one KV-event index, got engine number ${s + 1} (${JSON.stringify(id)})`);
      this.slotById.set(id, s);
      this.ids.push(id);
      this.table.addEngine(s);
    }
    return s;
  }

  /** Engine slot `e`'s generation: it changes whenever the engine loses a block, so a run seen at an unchanged generation still holds. */
  generation(e: number): number {
    return this.table.gens[e] ?? 0;
  }

  /** Pairs engine `id` holds. */
  heldByEngine(id: string): number {
    const s = this.slotById.get(id);
    return s === undefined ? 0 : (this.table.heldBy[s] as number);
  }

  // ───────────────────────── the sink ─────────────────────────

  /** Applies one batch of engine `engine`'s events, in order. */
  apply(engine: string, batch: KvEventBatch): void {
    const e = this.engine(engine);
    this.counts.batches++;
    for (const event of batch.events) {
      if (event.type === "BlockStored") this.stored(e, event);
      else if (event.type === "BlockRemoved") this.removedEvent(e, event);
      else if (event.type === "AllBlocksCleared") this.clearSlot(e);
    }
  }

  /** Forgets everything engine `engine` holds (and the decisions pending on it). */
  clear(engine: string): void {
    this.clearSlot(this.engine(engine));
  }

  private stored(e: number, event: BlockStored): void {
    const B = this.options.blockSize;
    const k = event.blockHashes.length;
    if (event.blockSize !== B || (event.medium !== undefined && event.medium !== "GPU" && event.medium !== "gpu")) {
      this.counts.skipped++;
      return;
    }
    let parent: ArrayLike<number>;
    if (event.parentBlockHash === undefined) {
      parent = this.hasher.root({ model: this.options.model, lora: event.loraName, cacheSalt: event.cacheSalt ?? saltOf(event.extraKeys, event.loraName) });
    } else {
      const [hh, hl] = halves(event.parentBlockHash);
      parent = this.scratch.parent;
      if (!this.table.keyOf(e, hh, hl, this.scratch.parent)) {
        this.counts.unknownParents++;
        return;
      }
    }
    const n = Math.min(k, Math.floor(event.tokenIds.length / B));
    if (this.scratch.hashes.length < 2 * n) this.scratch.hashes = new Uint32Array(pow2(2 * n));
    const hashes = this.scratch.hashes;
    this.hasher.chain(parent, event.tokenIds, 0, n, hashes);
    for (let j = 0; j < n; j++) {
      const [eh, el] = halves(event.blockHashes[j] as bigint);
      const hi = hashes[2 * j] as number;
      const lo = hashes[2 * j + 1] as number;
      if (this.table.store(e, hi, lo, eh, el) && this.pending.live > 0 && this.pending.forget(e, hi, lo)) this.counts.pendingConfirmed++;
    }
    this.counts.stored += n;
  }

  private removedEvent(e: number, event: BlockRemoved): void {
    if (event.medium !== undefined && event.medium !== "GPU" && event.medium !== "gpu") {
      this.counts.skipped++;
      return;
    }
    for (const h of event.blockHashes) {
      const [eh, el] = halves(h);
      if (this.table.remove(e, eh, el)) this.counts.removed++;
      else this.counts.unknownRemovals++;
    }
  }

  private clearSlot(e: number): void {
    this.counts.cleared++;
    this.table.clearEngine(e);
    this.pending.dropEngine(e);
  }

  // ───────────────────────── queries ─────────────────────────

  /** The chain of `tokens[0..length)` (full blocks only) under these extra keys. */
  hashTokens(tokens: ArrayLike<number>, keys: BlockExtraKeys, length = tokens.length): TokenBlocks {
    const n = Math.floor(length / this.options.blockSize);
    const hashes = new Uint32Array(2 * n);
    this.hasher.chain(this.hasher.root(keys), tokens, 0, n, hashes);
    return { hashes, n };
  }

  /**
   * Leading blocks of `chain` each engine of `q.engines` holds or was just sent (pending,
   * unexpired at `q.now`), into `q.out` (see {@link RunsQuery}). One table probe per block serves
   * every engine; pending entries are probed only where a bit is missing.
   */
  runs(chain: TokenBlocks, q: RunsQuery): void {
    const { engines, now, out, held, eventRuns } = q;
    const E = engines.length;
    // The engines still running, compacted as they stop: once only the holders are left, a block costs one probe and their bits.
    if (this.active.length < E) this.active = new Int32Array(2 * E);
    const active = this.active;
    let running = 0;
    for (let k = 0; k < E; k++) {
      out[k] = chain.n;
      if (eventRuns !== undefined) eventRuns[k] = chain.n;
      if ((engines[k] as number) >= 0) active[running++] = k;
      else {
        out[k] = 0;
        if (eventRuns !== undefined) eventRuns[k] = 0;
      }
    }
    const table = this.table;
    const pending = this.pending;
    const W = table.W;
    const bits = table.bits;
    const pendingAlive = pending.live > 0 && !Number.isNaN(now);
    for (let i = 0; i < chain.n && running > 0; i++) {
      if (held !== undefined) {
        // Blocks every running engine is known to hold (`held[k]`: a run seen at an unchanged generation) need no probe.
        let skip = chain.n;
        for (let a = 0; a < running; a++) skip = Math.min(skip, held[active[a] as number] as number);
        if (skip > i) i = Math.min(skip, chain.n) - 1;
        if (skip > i) continue;
      }
      const hi = chain.hashes[2 * i] as number;
      const lo = chain.hashes[2 * i + 1] as number;
      const b = table.find(hi, lo);
      for (let a = 0; a < running; ) {
        const k = active[a] as number;
        if (held !== undefined && (held[k] as number) > i) {
          a++;
          continue;
        }
        const e = engines[k] as number;
        const bit = b !== EMPTY && ((bits[b * W + (e >>> 5)] as number) & (1 << (e & 31))) !== 0;
        if (!bit && eventRuns !== undefined && (eventRuns[k] as number) > i) eventRuns[k] = i;
        if (bit || (pendingAlive && pending.has(e, hi, lo, now))) {
          a++;
          continue;
        }
        out[k] = i;
        active[a] = active[--running] as number;
      }
    }
    if (eventRuns !== undefined) for (let k = 0; k < E; k++) eventRuns[k] = Math.min(eventRuns[k] as number, out[k] as number);
  }

  /** Leading blocks of `chain` engine slot `e` holds (or was just sent, when `now` is given). */
  heldRun(chain: TokenBlocks, e: number, now = Number.NaN): number {
    const out = new Int32Array(1);
    this.runs(chain, { engines: [e], now, out, held: undefined, eventRuns: undefined }); // now NaN: pending decisions do not count
    return out[0] as number;
  }

  // ───────────────────────── pending ─────────────────────────

  /**
   * Records that blocks `chain[from..to)` were just sent to engine slot `e`: they count as held
   * there until `now + pendingTtlMs`, or until the engine's `BlockStored` confirms them. When the
   * ring is full the oldest entry goes.
   */
  addPending(e: number, chain: TokenBlocks, from: number, to: number, now: number): void {
    if (this.pending.capacity === 0) return;
    this.pending.expire(now);
    const expiry = now + this.options.pendingTtlMs;
    for (let i = from; i < to; i++) {
      const hi = chain.hashes[2 * i] as number;
      const lo = chain.hashes[2 * i + 1] as number;
      if (!this.table.holds(e, hi, lo)) this.pending.add(e, hi, lo, expiry);
    }
  }

  /** Drops the pending entries of `chain[from..to)` on engine slot `e` (the request failed before the engine computed anything). */
  forgetPending(e: number, chain: TokenBlocks, from: number, to: number): void {
    for (let i = from; i < to; i++) this.pending.forget(e, chain.hashes[2 * i] as number, chain.hashes[2 * i + 1] as number);
  }

  /** Drops expired pending entries from the ring's head. */
  expire(now: number): void {
    this.pending.expire(now);
  }

  // ───────────────────────── stats ─────────────────────────

  /** Heap bytes of the typed arrays. */
  get bytes(): number {
    return this.table.bytes + this.pending.bytes;
  }

  /** Bytes of the block and engine-hash structures only (the pending ring is fixed, `pendingCapacity` × 34 bytes). */
  get blockBytes(): number {
    return this.table.bytes;
  }

  /** Distinct blocks held. */
  get size(): number {
    return this.table.blocks;
  }

  /** (engine, block) pairs held. */
  get held(): number {
    return this.table.pairs;
  }

  stats(): KvIndexStats {
    const held = this.table.pairs;
    const bytes = this.bytes;
    return {
      blocks: this.table.blocks,
      held,
      capacityBlocks: this.cap,
      bytes,
      bytesPerBlock: held === 0 ? 0 : this.blockBytes / held,
      ...this.counts,
      pending: this.pending.live,
      engines: this.ids.map((id, s) => ({ id, blocks: this.table.heldBy[s] as number })),
    };
  }
}

/**
 * The request's `cache_salt` among a chain's first block's extra keys, when the event does not
 * carry it: vLLM keys the first block with (LoRA name, multimodal hashes, cache salt, …) in that
 * order, so the salt is the last string that is not the LoRA name.
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
