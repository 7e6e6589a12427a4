/**
 * The `longest-prefix` strategy: send a request to the target that most recently received the
 * longest prefix of it, with no prefix length to tune.
 *
 * Blocks and chained hashes. The routing input (text mode: the prompt text's first
 * `maxInputLength` code points as UTF-16LE; bytes mode: the first `maxInputLength` body bytes) is
 * cut into blocks of `blockSize` code units (text) or bytes. Block i's key is xxHash32 of its bytes
 * seeded with block i − 1's key, the first seed being a 64-bit xxHash of (router seed, mode,
 * tenant, model, block size) folded to 32 bits:
 *
 *   k_-1 = fold(xxh64(header(mode, tenant, model, blockSize), seed)),  k_i = xxh32(block_i, k_i-1)
 *
 * so a key covers everything before it (llm-d's chained block hashes; vLLM's block hashes) and two
 * tenants never share a key. Cost: one xxHash32 call per block, O(input) bytes hashed. UTF-16
 * rather than UTF-8 because JavaScript strings are UTF-16: Node writes them out at memory speed,
 * while UTF-8 encoding of non-ASCII text costs ~25 µs per 32 KB (more than everything else).
 *
 * Index. Each target keeps a bounded LRU of the keys it was sent (`prefix-index.ts`); a request's
 * match on target t, m_t, is the number of its leading blocks t holds (binary search, O(log n)).
 *
 * Ranking. Let M = max_t m_t. The divergence key d is the key of block M, the first block no target
 * holds (the partial last block, or the last block, when every block is held); the anchor key a
 * is the key of block M − 1, the end of the longest held prefix. Eligible targets are ranked
 *
 *   1. targets with m_t = M, by rendezvous score on d — with a common start held everywhere
 *      (a hot system prompt), the block where a request diverges decides, so new documents
 *      spread over the fleet and every router process agrees where they go;
 *   2. the others by m_t descending, then by rendezvous score on a — a prefix that outgrows its
 *      holder spills to the same second target every time (it replicates to few targets).
 *
 * A prefix no target holds (M = 0) is placed by rendezvous hashing on its first block: weighted
 * highest-random-weight, P(t) = w_t / Σw, and only ~1/(n+1) of new prefixes move when a target
 * is added (see `rendezvous.ts`).
 *
 * Load guard. The ranking is walked to the first target that is not excluded, not ejected, below
 * `concurrencyThreshold` in flight (SageMaker's rule), and within its bounded load: after Mirrokni,
 * Thorup & Zadimoghaddam, "Consistent Hashing with Bounded Loads" (SODA 2018), a target may take
 * a request only while its recent picks are below `loadFactor` × its fair share,
 *
 *   g_t < c · (f_t + w_t / W),   g_t, f_t decayed by (1 − 1/loadWindow) per pick,
 *
 * where g_t counts picks of t, f_t the weighted share t was due (w_t / W for each request t was
 * eligible for, W the eligible weight). Measured in picks rather than in-flight requests: an
 * in-flight cap ⌈c · mean⌉ forbids any second concurrent request at light load (when it costs
 * nothing) yet lets a target reach ⌈c · mean⌉ / mean ≫ c of the traffic at moderate load; the pick
 * bound keeps every target's share of requests at most c times its weighted share over any
 * horizon, which is what a fleet sized for its mean needs. When every target is outside its
 * bound the walk repeats with only the concurrency rule, then falls back to the target with the
 * least queued prefill per weight.
 *
 * Several processes (`exclusive: false`, the default). Applications embed a router in every
 * replica; each process learns only from what it routed and counts only its own picks and
 * requests in flight, so any choice made on load differs between processes, and a document one
 * process placed by load is, for the others, new: they place it elsewhere, and its copies crowd
 * the engines' caches (four processes placing by load: hit rate 97% → 67–78% on long-context). So a
 * request the index knows little of — less than half of it held anywhere (2M < its blocks), or its
 * longest match a common start held by several targets (the choice among them is the choice of a
 * home for what follows) — has two candidates computed from the request alone, the first two of
 * its ranking, and takes the first that is open and within c (strictly when both hold the longest
 * match: moving between them costs no cache) — or, when the first has at least 4× the queued
 * prefill that the second would have with the request, the second (else, the same test, the
 * third of the ranking): a burst of cold prompts, which every process sees in its own share of
 * the traffic, unlike a nuance between two queues. Every process agrees on the first unless it
 * is full, beyond its bound or swamped, and then on the second: two homes per prefix, a third
 * only under a burst.
 * Only a target below 1/c of its share that lacks the common start (an instance just added) comes
 * before them, so a scale-up still receives new prefixes. Other requests, and these when both
 * candidates fail, take the load guard's walk above.
 *
 * Work (`exclusive: true`: this process sees all the traffic). Picks are blind to size: two
 * 60,000-token cold prompts count as two requests. Each target keeps the uncached blocks of the
 * requests sent to it that have not answered yet — a pick adds the blocks the target did not
 * hold, the response's first byte (the prefill is done) or the request's end takes them out: the
 * prefill queued there, as far as this process knows. It is the work signal of both modes. A request
 * of which less than half is held anywhere (2M < its blocks; SGLang's cache threshold) pays most
 * of its prefill wherever it goes: the target the walk found competes with the next two of the
 * ranking that hold as much of it and pass the same load rule (open, and within the factor of the
 * pass that found it), and the one with the least queued prefill takes it. A new prefix so goes
 * to one of its first three rendezvous targets, by this process's view of their queues. In both
 * modes the last resort, when every target is full, is the least queued prefill per weight.
 *
 * Decision cost: hashing O(input) + O(T log n) index probes + T rendezvous scores (+ T anchor
 * scores and two O(T) scans for a low-match request), T eligible targets; recording O(n) LRU
 * updates on the chosen target.
 */
import { checkBoolean, checkInteger, checkNumber, describe } from "./internal/validate.js";
import { type IndexSettings, type PrefixIndexStats, TargetBlocks, ttlNow } from "./prefix-index.js";
import type { RendezvousTable } from "./rendezvous.js";
import { type RoutingMode, bytesPrefix, textPrefix } from "./routing-input.js";
import type { TargetState } from "./target-state.js";
import { writeU32 } from "./internal/bytes.js";

type XXHashAPI = {
  h32Raw(input: Uint8Array, seed?: number): number;
  h64Raw(input: Uint8Array, seed?: bigint): bigint;
};

/** Options of the `longest-prefix` strategy (`RouterOptions.longestPrefix`). */
export interface LongestPrefixOptions {
  /**
   * How much of the routing input is read: code points in text mode, bytes in bytes mode. From
   * 1,024 to 1,048,576. 65,536 characters is about 16,000 tokens — past any system prompt, tool
   * list or retrieved document; a longer shared prefix still matches its first 65,536.
   * @default 65536
   */
  maxInputLength?: number;
  /**
   * Block size: UTF-16 code units (characters) in text mode, bytes in bytes mode. From 64 to
   * 16,384. 256 characters ≈ 64 tokens = 4 of vLLM's 16-token blocks: fine enough to follow a
   * conversation turn by turn, coarse enough that a 32 KB prompt is 128 blocks.
   * @default 256
   */
  blockSize?: number;
  /**
   * Blocks remembered per target (LRU). From 1 to 16,777,216. Set it to the engine's prefix
   * cache in tokens × 4 / `blockSize`: the default, 16,384 blocks ≈ 4 M characters ≈ 1 M tokens,
   * is about one 8 × H100 vLLM instance serving a 70B model. About 52 bytes per block:
   * 16,384 blocks ≈ 0.85 MB per target.
   * @default 16384
   */
  capacityBlocks?: number;
  /**
   * Time after which an index entry no longer counts as cached, ms, read from the router's
   * clock; refreshed whenever the block is sent again. `0`: entries leave only by LRU eviction.
   * Set it when engines evict by time or restart often. From 0 to 2^31 − 1.
   * @default 0
   */
  ttlMs?: number;
  /**
   * Bounded-load factor c = 1 + ε: a target takes a request only while its recent share of
   * requests is below c times its weighted fair share. From 1 to 100, or `Infinity` to disable.
   * @default 1.25
   */
  loadFactor?: number;
  /**
   * Horizon of the recent share, in picks: counts decay by 1 − 1/`loadWindow` per pick. Longer
   * tolerates longer bursts on one target (keeps conversations in place); shorter reacts sooner.
   * From 1 to 1,000,000.
   * @default 4096
   */
  loadWindow?: number;
  /**
   * Whether this router is the only one sending requests to its targets. `false` (the default):
   * other processes may embed a router in front of the same fleet — application replicas,
   * workers — so a request the index knows little of goes to the first of the two targets its
   * ranking puts first that is open and within the bounded load (the second, or the third, also
   * when the first has 4× the queued prefill that one would have): every process computes the
   * same candidates, from the request alone, and they agree on the first unless it is full,
   * beyond its bound or swamped.
   * `true`: this process sees all the fleet's traffic, so it may also use its own view of each
   * target's queued prefill to place such requests (lower tail latency on bursty traffic, e.g.
   * −144 ms P90 on the sample trace); with several processes that view differs between them and
   * the same prefix ends up on several targets (hit rate 97% → 78% with four processes on
   * long-context).
   * See docs/longest-prefix.md, "Several router processes".
   * @default false
   */
  exclusive?: boolean;
}

/** Defaults of {@link LongestPrefixOptions}. */
export const DEFAULT_LONGEST_PREFIX: Readonly<Required<LongestPrefixOptions>> = Object.freeze({
  maxInputLength: 65_536,
  blockSize: 256,
  capacityBlocks: 16_384,
  ttlMs: 0,
  loadFactor: 1.25,
  loadWindow: 4096,
  exclusive: false,
});

/** @internal Validated options. */
export type LongestPrefixConfig = Readonly<Required<LongestPrefixOptions>>;

/** @internal Validates `RouterOptions.longestPrefix`, naming the option, its range and the value. */
export function resolveLongestPrefixOptions(options: unknown): LongestPrefixConfig {
  if (options === undefined) return DEFAULT_LONGEST_PREFIX;
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new TypeError(`Expected \`longestPrefix\` to be an object, got ${describe(options)}`);
  }
  const o = options as LongestPrefixOptions;
  const d = DEFAULT_LONGEST_PREFIX;
  const loadFactor = o.loadFactor ?? d.loadFactor;
  return Object.freeze({
    maxInputLength: checkInteger("longestPrefix.maxInputLength", o.maxInputLength ?? d.maxInputLength, 1024, 1_048_576),
    blockSize: checkInteger("longestPrefix.blockSize", o.blockSize ?? d.blockSize, 64, 16_384),
    capacityBlocks: checkInteger("longestPrefix.capacityBlocks", o.capacityBlocks ?? d.capacityBlocks, 1, 16_777_216),
    ttlMs: checkNumber("longestPrefix.ttlMs", o.ttlMs ?? d.ttlMs, 0, 2_147_483_647),
    loadFactor: loadFactor === Number.POSITIVE_INFINITY ? loadFactor : checkNumber("longestPrefix.loadFactor", loadFactor, 1, 100),
    loadWindow: checkInteger("longestPrefix.loadWindow", o.loadWindow ?? d.loadWindow, 1, 1_000_000),
    exclusive: checkBoolean("longestPrefix.exclusive", o.exclusive ?? d.exclusive),
  });
}

/** @internal The view of a router snapshot the strategy reads. */
export interface SnapshotView {
  readonly targets: readonly { readonly id: string }[];
  readonly states: readonly TargetState[];
  readonly weights: Float64Array;
  readonly table: RendezvousTable;
}

/** @internal A request's blocks: keys of its full blocks and of its partial last block. */
export interface BlockChain {
  /** Keys of the full blocks, `keys[i]` = k_i (int32). */
  readonly keys: Int32Array;
  /** Number of full blocks. */
  readonly n: number;
  /** Key of the partial last block, or of the last full block when there is none. */
  readonly lastKey: number;
  /** Bytes of routing input hashed. */
  readonly length: number;
  /** Bytes per block: `blockSize` in bytes mode, 2 × `blockSize` (UTF-16) in text mode. */
  readonly blockBytes: number;
}

/** @internal What {@link LongestPrefixRouting.choose} picked, and what recording it needs. */
export interface LongestPrefixPick {
  index: number;
  kind: "preferred" | "spillover" | "fallback";
  rank: number;
  /** The divergence key, as the decision's routing key. */
  key: bigint;
}

/** A target's index and its recent-share counters. */
class Slot {
  /** Decayed picks. */
  recent = 0;
  /** Decayed fair share owed. */
  fair = 0;
  /**
   * Uncached blocks of the requests routed here that have not yet produced their first byte: the
   * prefill work queued on the target, as far as this router knows (see {@link QueuedPrefill}).
   */
  pending = 0;
  constructor(readonly blocks: TargetBlocks) {}
}

/**
 * @internal The prefill a pick put on its target's queue: the blocks of the request the target
 * did not hold. It counts in the target's backlog from the pick until the response's first byte
 * (the prefill is done: for a stream, the first token) or, without one, the lease's release —
 * whichever comes first; {@link QueuedPrefill.done} takes it out, once. Counts are whole blocks,
 * so the backlog returns to exactly 0 when every request has answered.
 *
 * A request that fails before its first byte (refused, a 4xx or 5xx answer) was never prefilled
 * there: {@link QueuedPrefill.forget} takes the blocks the pick added back out of the target's
 * index, so the next request with that prefix is not sent after a cache that does not exist.
 */
export class QueuedPrefill {
  constructor(
    private readonly slot: Slot,
    private work: number,
    /** The chain's full-block keys; the pick added `keys[from..]` to the target's index. */
    private keys: Int32Array | undefined,
    private readonly from: number,
  ) {}

  done(): void {
    this.slot.pending -= this.work;
    this.work = 0;
    this.keys = undefined;
  }

  /**
   * Removes the blocks this pick added from the target's index, then {@link done}. Blocks that
   * the target held before the pick stay. Approximate like the index: blocks another request
   * sent to the same target while this one was in flight go too (that prefix is new again, and
   * rendezvous hashing places it on the same first candidate).
   */
  forget(): void {
    if (this.keys !== undefined) this.slot.blocks.forget(this.keys, this.from);
    this.done();
  }
}

const encoder = new TextEncoder();
const FORMAT_VERSION = 1;
/** A low-match request chooses by work among this many of the first targets of the ranking. */
const WORK_CHOICES = 3;
/**
 * With several processes, a request the index knows little of moves from its first candidate to
 * its second (or third) only when the first has this many times the queued prefill that one
 * would have.
 */
const QUEUE_RATIO = 4;

/**
 * @internal The strategy's state for one router: block hasher, per-target indexes and
 * recent-share counters. Synchronous and allocation-light; no module-level state.
 */
export class LongestPrefixRouting {
  private readonly settings: IndexSettings;
  private readonly decay: number;
  private slots: Slot[] = [];
  private readonly byId = new Map<string, Slot>();
  private buffer: Uint8Array = newBuffer(8192);
  private readonly blockBytes: number;
  /** `buffer`'s blocks as views, built on first use: hashing allocates nothing per block. */
  private views: Uint8Array[] = [];
  private match = new Int32Array(16);
  private scores = new Float64Array(16);
  private anchorScores = new Float64Array(16);
  /** Whether `anchorScores` holds this decision's anchor scores. */
  private anchored = false;
  /** Eligible weight of the last `choose` (the fair-share denominator for `commit`). */
  private lastWeight = 0;
  private lastCandidates: Int32Array = new Int32Array(0);
  private lastNow = 0;
  /** Uncached blocks of the last pick: what `commit` adds to the target's backlog. */
  private lastWork = 0;

  constructor(
    private readonly api: XXHashAPI,
    private readonly seed: bigint,
    private readonly mode: RoutingMode,
    readonly config: LongestPrefixConfig,
    clock: { now(): number },
  ) {
    this.settings = { capacityBlocks: config.capacityBlocks, ttlMs: config.ttlMs, clock, originMs: clock.now() };
    this.decay = 1 - 1 / config.loadWindow;
    this.blockBytes = mode === "text" ? 2 * config.blockSize : config.blockSize;
  }

  /** Aligns the per-target state with a new target list; ids that left lose their index. */
  setTargets(targets: readonly { readonly id: string }[]): void {
    const ids = new Set(targets.map((t) => t.id));
    for (const id of this.byId.keys()) if (!ids.has(id)) this.byId.delete(id);
    this.slots = targets.map((t) => {
      let slot = this.byId.get(t.id);
      if (slot === undefined) {
        slot = new Slot(new TargetBlocks(t.id, this.settings));
        this.byId.set(t.id, slot);
      }
      return slot;
    });
  }

  /**
   * The request's block chain, or `undefined` when it has no routing input (text mode: no
   * prompt text). `tenant` must be validated.
   */
  chain(body: unknown, tenant: string | undefined, model: string | undefined): BlockChain | undefined {
    let bytes: Uint8Array;
    let length: number;
    if (this.mode === "text") {
      const text = textPrefix(body, this.config.maxInputLength);
      if (text.length === 0) return undefined;
      if (this.buffer.length < text.length * 2) {
        this.buffer = newBuffer(Math.max(text.length * 2, this.buffer.length * 2));
        this.views = [];
      }
      length = writeUtf16le(text, this.buffer);
      bytes = this.buffer;
    } else {
      bytes = bytesPrefix(body, this.config.maxInputLength);
      length = bytes.length;
      if (length === 0) return undefined;
    }
    return this.hashBlocks(bytes, length, this.seedKey(tenant, model));
  }

  /** @internal Chains `bytes[0..length)` from `seedKey`. Exposed for known-answer tests. */
  hashBlocks(bytes: Uint8Array, length: number, seedKey: number): BlockChain {
    const size = this.blockBytes;
    const n = Math.floor(length / size);
    const keys = new Int32Array(n);
    const api = this.api;
    const views = bytes === this.buffer ? this.views : undefined;
    let key = seedKey;
    for (let i = 0, at = 0; i < n; i++, at += size) {
      let block: Uint8Array | undefined;
      if (views !== undefined) {
        block = views[i];
        if (block === undefined) views[i] = block = bytes.subarray(at, at + size);
      } else {
        block = bytes.subarray(at, at + size);
      }
      key = api.h32Raw(block, key >>> 0) | 0;
      keys[i] = key;
    }
    const lastKey = n * size < length ? api.h32Raw(bytes.subarray(n * size, length), key >>> 0) | 0 : key;
    return { keys, n, lastKey, length, blockBytes: size };
  }

  /**
   * The chain's first seed: xxHash64 (router seed) of an injective header, folded to 32 bits.
   *   'L' | version | mode | tenant length (0 = none) | tenant | model length u32 LE
   *   (0xFFFFFFFF = none) | model UTF-8 | block size u32 LE
   */
  seedKey(tenant: string | undefined, model: string | undefined): number {
    const modelBytes = model === undefined ? undefined : encoder.encode(model);
    const tenantLength = tenant === undefined ? 0 : tenant.length;
    const header = new Uint8Array(4 + tenantLength + 4 + (modelBytes?.length ?? 0) + 4);
    let at = 0;
    header[at++] = 0x4c;
    header[at++] = FORMAT_VERSION;
    header[at++] = this.mode === "text" ? 0x74 : 0x62;
    header[at++] = tenantLength;
    for (let i = 0; i < tenantLength; i++) header[at++] = (tenant as string).charCodeAt(i);
    at = writeU32(header, at, modelBytes === undefined ? 0xffff_ffff : modelBytes.length);
    if (modelBytes !== undefined) {
      header.set(modelBytes, at);
      at += modelBytes.length;
    }
    writeU32(header, at, this.config.blockSize);
    const h = this.api.h64Raw(header, this.seed);
    return (Number(h >> 32n) ^ Number(h & 0xffff_ffffn)) | 0;
  }

  /** Match lengths of `candidates` into the scratch array; returns M, the longest. */
  private matches(candidates: Int32Array, chain: BlockChain): number {
    const T = candidates.length;
    if (this.match.length < T) {
      const size = Math.max(T, this.match.length * 2);
      this.match = new Int32Array(size);
      this.scores = new Float64Array(size);
      this.anchorScores = new Float64Array(size);
    }
    const now = ttlNow(this.settings);
    let best = 0;
    for (let j = 0; j < T; j++) {
      const m = (this.slots[candidates[j] as number] as Slot).blocks.matchLength(chain.keys, chain.n, now);
      this.match[j] = m;
      if (m > best) best = m;
    }
    return best;
  }

  /** The ranking of `candidates` for `chain`, best first, ignoring load. */
  ranking(snap: SnapshotView, candidates: Int32Array, chain: BlockChain): { order: number[]; key: bigint } {
    const M = this.matches(candidates, chain);
    const [dHi, dLo] = divergence(chain, M);
    this.score(snap, candidates, chain, M, dHi, dLo, true);
    const positions = Array.from({ length: candidates.length }, (_, j) => j);
    positions.sort((a, b) => this.compare(a, b, M));
    return { order: positions.map((j) => candidates[j] as number), key: toKey(dHi, dLo) };
  }

  /**
   * Picks a target: the best-ranked one that passes the load rules of the first pass that has
   * one (see the file header), then the least loaded. Linear scans, no sort: O(T) per pass.
   */
  choose(
    snap: SnapshotView,
    candidates: Int32Array,
    chain: BlockChain,
    exclude: ReadonlySet<string> | undefined,
    now: number,
    concurrencyThreshold: number,
  ): LongestPrefixPick {
    const T = candidates.length;
    const M = this.matches(candidates, chain);
    const [dHi, dLo] = divergence(chain, M);
    const key = toKey(dHi, dLo);
    const group = this.score(snap, candidates, chain, M, dHi, dLo, false);
    const match = this.match;
    // The request's blocks as the index counts them: the full ones and the last (partial) one.
    const blocks = chain.n + 1;

    // Fair-share denominator: the eligible, non-ejected weight; and their requests in flight.
    let weight = 0;
    let inflight = 0;
    for (let j = 0; j < T; j++) {
      const i = candidates[j] as number;
      const s = snap.states[i] as TargetState;
      if (!s.isEjected(now)) {
        weight += snap.weights[i] as number;
        inflight += s.inflight;
      }
    }
    this.lastWeight = weight;
    this.lastCandidates = candidates;
    this.lastNow = now;

    const open = (i: number): boolean => {
      const s = snap.states[i] as TargetState;
      return s.inflight < concurrencyThreshold && !s.isEjected(now) && !(exclude !== undefined && exclude.has((snap.targets[i] as { id: string }).id));
    };
    // The bounded load (factor c > 1) binds only a busy target: one with requests in flight, at
    // least its weighted share of the fleet's. A target that is idle, or less busy than its share,
    // keeps the prefixes it holds whatever its history: at light load a conversation stays put.
    const within = (i: number, factor: number): boolean => {
      if (weight === 0 || factor === Number.POSITIVE_INFINITY) return true;
      const w = snap.weights[i] as number;
      const busy = (snap.states[i] as TargetState).inflight;
      if (factor > 1 && (busy === 0 || busy * weight < inflight * w)) return true;
      return this.below(i, factor, w / weight);
    };
    const c = this.config.loadFactor;
    // Among targets that tie on the longest match the choice costs no cache, so it first goes to
    // one at or below its fair share (factor 1): new prefixes behind a common start steer away
    // from busy targets, which keeps them below c for the requests that do depend on them. A
    // longest match held by two or more targets is a common start (a system prompt, a tool list):
    // when every holder is above its fair share, a target below 1/c of its own takes the request
    // and pays the common start once — bounded loads cap the top, this fills the bottom, so no
    // target idles while the holders of a common start share everything within c.
    const fair = c === Number.POSITIVE_INFINITY ? c : Math.min(1, c);
    const common = group > 1;
    // The best-ranked target of a scope (0: holders of the longest match, 1: the others, 2: all)
    // that is open and within `factor`, or -1.
    const bestIn = (scope: number, factor: number): number => {
      if (scope !== 0) this.scoreAnchors(snap, candidates, chain, M);
      let best = -1;
      for (let j = 0; j < T; j++) {
        if ((scope === 0 && match[j] !== M) || (scope === 1 && match[j] === M)) continue;
        const i = candidates[j] as number;
        if (!open(i) || !within(i, factor)) continue;
        if (best === -1 || this.compare(j, best, M) < 0) best = j;
      }
      return best;
    };
    // A target holding the longest match loses nothing: preferred, even when load chose it among
    // several holders. Spillover means a shorter match (or a new prefix's later choice).
    const picked = (best: number): LongestPrefixPick => {
      this.lastWork = blocks - (match[best] as number);
      const rank = this.rankOf(best, T, M);
      const kind = rank === 0 || (M > 0 && match[best] === M) ? "preferred" : "spillover";
      return { index: candidates[best] as number, kind, rank, key };
    };
    // Passes [scope, factor], scope 0: holders of the longest match, 1: the others, 2: all.
    // Several processes may route to this fleet: a request the index knows little of (less than
    // half of it held, or its longest match a common start) has two candidates that every process
    // computes alike, the first two of its ranking, and goes to the first that is open and within
    // c — deviating from the ranking on load alone only at the bound, so the processes agree on
    // where a document or conversation lives instead of each copying it where it saw room.
    // A common start not yet on every target first goes to a target below 1/c of its share (an
    // instance just added), as in the walk below, so a scale-up still takes new prefixes.
    if (!this.config.exclusive && (2 * M < blocks || common)) {
      // When both hold the longest match (a common start), moving between them costs no cache,
      // so the bound is strict: no exemption for a target that is idle or below its share of
      // requests in flight, which would let a replicated hot prefix push one holder past c.
      // Otherwise the first may hold part of the request (a conversation's earlier turns), and at
      // light load it keeps it, as in the walk.
      const bounded = (i: number): boolean =>
        common ? weight === 0 || c === Number.POSITIVE_INFINITY || this.below(i, c, (snap.weights[i] as number) / weight) : within(i, c);
      this.scoreAnchors(snap, candidates, chain, M);
      // The first three positions of the ranking (-1 when there are fewer targets).
      let first = -1;
      let second = -1;
      let third = -1;
      for (let j = 0; j < T; j++) {
        if (first === -1 || this.compare(j, first, M) < 0) {
          third = second;
          second = first;
          first = j;
        } else if (second === -1 || this.compare(j, second, M) < 0) {
          third = second;
          second = j;
        } else if (third === -1 || this.compare(j, third, M) < 0) third = j;
      }
      let best = common && group !== T ? bestIn(1, 1 / c) : -1;
      if (best === -1) {
        const ok = (j: number) => j !== -1 && open(candidates[j] as number) && bounded(candidates[j] as number);
        best = ok(first) ? first : ok(second) ? second : -1;
        // A burst of cold prompts on the first: the next candidate (the second, else the third)
        // takes the request once the first's queued prefill is QUEUE_RATIO times what that one's
        // would be with this request — a gap that every process sees in its own share of the
        // traffic, not a nuance only one of them sees. Requests that are decoding do not count:
        // they hold a slot in the batch, not the prefill queue.
        if (best === first) {
          const queued = this.backlog(candidates[first] as number);
          for (const next of [second, third]) {
            if (!ok(next)) continue;
            if (queued >= QUEUE_RATIO * (this.backlog(candidates[next] as number) + blocks - (match[next] as number))) {
              best = next;
              break;
            }
          }
        }
      }
      if (best !== -1) return picked(best);
    }
    const passes: readonly (readonly [number, number])[] = common
      ? [[0, fair], [1, 1 / c], [2, c], [2, Number.POSITIVE_INFINITY]]
      : [[0, c], [2, c], [2, Number.POSITIVE_INFINITY]];
    for (const [scope, factor] of passes) {
      if (scope !== 0 && group === T) continue;
      let best = bestIn(scope, factor);
      if (best !== -1) {
        // Less than half of the request is held anywhere: it pays most of its prefill wherever it
        // goes, so among the next targets of the ranking holding as much of it, one with less
        // prefill queued takes it — one that passes this pass's load rule too,
        // so a new prefix behind a common start still goes only to a target at or below its fair
        // share, and the work signal never undoes the share signal.
        if (this.config.exclusive && 2 * M < blocks) best = this.lighter(snap, candidates, chain, best, M, (i) => open(i) && within(i, factor));
        return picked(best);
      }
    }
    // Everything is full, ejected or excluded: the least queued prefill per weight (blocks
    // queued plus the request's uncached blocks there), ties by rank; ejected targets only when
    // nothing else is left; all excluded: the first choice.
    this.scoreAnchors(snap, candidates, chain, M);
    for (const allowEjected of [false, true]) {
      let best = -1;
      let bestLoad = Number.POSITIVE_INFINITY;
      for (let j = 0; j < T; j++) {
        const i = candidates[j] as number;
        const s = snap.states[i] as TargetState;
        if (exclude !== undefined && exclude.has((snap.targets[i] as { id: string }).id)) continue;
        if (!allowEjected && s.isEjected(now)) continue;
        const load = (this.backlog(i) + blocks - (match[j] as number)) / (snap.weights[i] as number);
        if (best === -1 || load < bestLoad || (load === bestLoad && this.compare(j, best, M) < 0)) {
          best = j;
          bestLoad = load;
        }
      }
      if (best !== -1) {
        this.lastWork = blocks - (match[best] as number);
        return { index: candidates[best] as number, kind: "fallback", rank: this.rankOf(best, T, M), key };
      }
    }
    let top = 0;
    for (let j = 1; j < T; j++) if (this.compare(j, top, M) < 0) top = j;
    this.lastWork = blocks - (match[top] as number);
    return { index: candidates[top] as number, kind: "fallback", rank: 0, key };
  }

  /** Whether target i's recent picks are below `factor` × (its fair share owed + `share`). */
  private below(i: number, factor: number, share: number): boolean {
    const slot = this.slots[i] as Slot;
    return slot.recent < factor * (slot.fair + share);
  }

  /**
   * Uncached blocks queued on target i: those of the requests this router sent there that have
   * not yet produced a first byte (`commit` adds a pick's, {@link QueuedPrefill.done} removes
   * them). O(1).
   */
  private backlog(i: number): number {
    return (this.slots[i] as Slot).pending;
  }

  /**
   * The work-aware choice for a low-match request: among the first {@link WORK_CHOICES} targets of
   * the ranking that hold as much of it as `best` and pass `ok` (best and the next ones), the one
   * with the least queued prefill, keeping `best` on ties.
   */
  private lighter(snap: SnapshotView, candidates: Int32Array, chain: BlockChain, best: number, M: number, ok: (i: number) => boolean): number {
    this.scoreAnchors(snap, candidates, chain, M);
    const T = candidates.length;
    const m = this.match[best] as number;
    let pick = best;
    let least = this.backlog(candidates[best] as number);
    // The alternatives in ranking order: each is the best-ranked target after the previous one.
    let prev = -1;
    for (let k = 1; k < WORK_CHOICES; k++) {
      let alt = -1;
      for (let j = 0; j < T; j++) {
        if (j === best || this.match[j] !== m || (prev !== -1 && this.compare(j, prev, M) <= 0)) continue;
        if (!ok(candidates[j] as number)) continue;
        if (alt === -1 || this.compare(j, alt, M) < 0) alt = j;
      }
      if (alt === -1) break;
      prev = alt;
      const work = this.backlog(candidates[alt] as number);
      if (work < least) {
        pick = alt;
        least = work;
      }
    }
    return pick;
  }

  /**
   * Divergence scores of the holders of the longest match into `scores` (and, with `all`, anchor
   * scores of the others); returns the number of holders.
   */
  private score(snap: SnapshotView, candidates: Int32Array, chain: BlockChain, M: number, dHi: number, dLo: number, all: boolean): number {
    const match = this.match;
    const scores = this.scores;
    let group = 0;
    for (let j = 0; j < candidates.length; j++) {
      if (match[j] !== M) continue;
      scores[j] = snap.table.score(candidates[j] as number, dHi, dLo);
      group++;
    }
    this.anchored = false;
    if (all) this.scoreAnchors(snap, candidates, chain, M);
    return group;
  }

  /** Anchor scores of the targets below the longest match (once per decision). */
  private scoreAnchors(snap: SnapshotView, candidates: Int32Array, chain: BlockChain, M: number): void {
    if (this.anchored || M === 0) return;
    this.anchored = true;
    const aHi = (chain.keys[M - 1] as number) >>> 0;
    const aLo = M * chain.blockBytes;
    for (let j = 0; j < candidates.length; j++) {
      if (this.match[j] !== M) this.anchorScores[j] = snap.table.score(candidates[j] as number, aHi, aLo);
    }
  }

  /**
   * Ranking order of positions a and b (negative: a first): longest match first; among the
   * holders of the longest, divergence score; among the others, anchor score; then position.
   */
  private compare(a: number, b: number, M: number): number {
    const ma = this.match[a] as number;
    const mb = this.match[b] as number;
    if (ma !== mb) return mb - ma;
    const s = ma === M ? (this.scores[b] as number) - (this.scores[a] as number) : (this.anchorScores[b] as number) - (this.anchorScores[a] as number);
    return s || a - b;
  }

  /**
   * Position of `j` in the ranking: how many candidates rank before it. For a holder of the
   * longest match only holders can; for the others the anchor scores must be computed.
   */
  private rankOf(j: number, T: number, M: number): number {
    const holder = this.match[j] === M;
    let rank = 0;
    for (let k = 0; k < T; k++) {
      if (k === j || (holder && this.match[k] !== M)) continue;
      if (this.compare(k, j, M) < 0) rank++;
    }
    return rank;
  }

  /**
   * Records a pick: the chain's blocks go into the target's index, and the recent-share counters
   * advance by one pick. Call once per `choose`, after it, with the same snapshot. Returns the
   * prefill the pick queued on the target; call its `done()` at the response's first byte or the
   * request's end, or its `forget()` when the request failed without a first byte.
   */
  commit(snap: SnapshotView, index: number, chain: BlockChain): QueuedPrefill {
    const now = ttlNow(this.settings);
    const slot = this.slots[index] as Slot;
    slot.blocks.record(chain.keys, chain.n, now);
    this.count(snap, index, this.lastCandidates, this.lastWeight, this.lastNow);
    slot.pending += this.lastWork;
    // lastWork = the request's blocks (n full + the partial one) − those the target held.
    const from = chain.n + 1 - this.lastWork;
    return new QueuedPrefill(slot, this.lastWork, from < chain.n ? chain.keys : undefined, from);
  }

  /** Advances the recent-share counters by one pick of `index` among `candidates`. */
  private count(snap: SnapshotView, index: number, candidates: Int32Array, weight: number, now: number): void {
    const decay = this.decay;
    for (const slot of this.slots) {
      slot.recent *= decay;
      slot.fair *= decay;
    }
    if (weight > 0) {
      for (const i of candidates) {
        if (!(snap.states[i] as TargetState).isEjected(now)) {
          (this.slots[i] as Slot).fair += (snap.weights[i] as number) / weight;
        }
      }
    }
    (this.slots[index] as Slot).recent += 1;
  }

  /** Index statistics. */
  stats(): PrefixIndexStats {
    let blocks = 0;
    let estimatedBytes = 0;
    const targets: { id: string; blocks: number; queuedBlocks: number }[] = [];
    for (const slot of this.slots) {
      blocks += slot.blocks.size;
      estimatedBytes += slot.blocks.estimatedBytes();
      targets.push({ id: slot.blocks.id, blocks: slot.blocks.size, queuedBlocks: slot.pending });
    }
    return { blocks, capacityBlocks: this.config.capacityBlocks, estimatedBytes, targets };
  }
}

/** The divergence key (hi, lo): block M's key and its end offset. */
function divergence(chain: BlockChain, M: number): [number, number] {
  if (M < chain.n) return [(chain.keys[M] as number) >>> 0, (M + 1) * chain.blockBytes];
  return [chain.lastKey >>> 0, chain.length];
}

function toKey(hi: number, lo: number): bigint {
  return (BigInt(hi) << 32n) | BigInt(lo >>> 0);
}

/**
 * Node's `Buffer` (also in Bun and Deno) writes UTF-16LE natively, ~20× faster than a JS loop and
 * than UTF-8 encoding of non-ASCII text; elsewhere a plain `Uint8Array` and the loop.
 */
const NodeBuffer = (globalThis as { Buffer?: { alloc(size: number): Uint8Array & { write(s: string, offset: number, encoding: "utf16le"): number } } }).Buffer;

function newBuffer(size: number): Uint8Array {
  return NodeBuffer === undefined ? new Uint8Array(size) : NodeBuffer.alloc(size);
}

/** @internal Writes `text` as UTF-16LE (code units, low byte first, on every platform) at 0; returns the bytes written. */
export function writeUtf16le(text: string, out: Uint8Array): number {
  const write = (out as { write?: (s: string, offset: number, encoding: "utf16le") => number }).write;
  if (write !== undefined) return write.call(out, text, 0, "utf16le");
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    out[2 * i] = c & 0xff;
    out[2 * i + 1] = c >>> 8;
  }
  return 2 * text.length;
}
