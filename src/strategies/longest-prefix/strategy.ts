/**
 * The `longest-prefix` strategy: send a request to the target that most recently received the
 * longest prefix of it, with no prefix length to tune. The full description, with its measured
 * trade-offs, is docs/longest-prefix.md; the parts live beside this file:
 *
 * - `chain.ts`: the request's block chain (chained xxHash of `blockSize` blocks);
 * - `blocks.ts`: each target's bounded LRU of the blocks it was sent (the index);
 * - `ranking.ts`: longest match first, then rendezvous hashing on the divergence and anchor keys;
 * - here, the placement: the ranking walked under the concurrency threshold and the bounded load
 *   (`../bounded-load.ts`), the rule that lets several router processes agree on a prefix's home,
 *   and the queued-prefill work signal — this router's own, plus under a shared load view the
 *   engine's waiting uncached tokens (`engine`) or other routers' picks (`redis`).
 *
 * A request the index knows little of (less than half of it held anywhere, 2M < its blocks, or its
 * longest match a common start held by several targets) has candidates computed from the request
 * alone, the first of its ranking, and takes the first that is open and within c (strictly when
 * both hold the longest match) — or the second (else the third) when the first has
 * {@link QUEUE_RATIO}× the queued prefill that one would have with the request. Only a target
 * below 1/c of its share that lacks the common start (an instance just added) comes before them.
 * Every router process computes the same candidates, so processes agree on a prefix's home.
 *
 * `exclusive: true` (this router sees all of its fleet's traffic, so its view of the queues is
 * complete) moves on from the first candidate at {@link EXCLUSIVE_QUEUE_RATIO}× instead. Its
 * earlier rule — low-match requests by the walk below and the least-queued of the next two, no
 * candidates — won 0.6 points of hit rate on the sample trace with one process and lost 18.7
 * with four (54.3 → 35.6%): each process steered new documents by its own shares and queues.
 * In every mode the last resort is the least queued prefill per weight.
 *
 * Prediction (`../closed-loop.ts`): a pick predicts the blocks its target holds of the request
 * cached, in tokens at the target's learned characters per token. When a target's responses repeatedly report far fewer cached tokens than predicted (it
 * restarted, or evicted what the index says it holds), its index is cleared: its prefixes stop
 * looking warm there, and their traffic re-spreads as for a target just added.
 *
 * Decision cost: hashing O(input) + O(T log n) index probes + T rendezvous scores (+ T anchor
 * scores and O(T) scans for a low-match request); commit: O(n) LRU updates and O(T) share counts.
 */
import type { RoutingMode } from "../../routing/routing-input.js";
import { type LoadBound, ShareTracker } from "../bounded-load.js";
import { alignById } from "../shared/by-id.js";
import { type ClosedLoopEnv, TokenRatio } from "../../closed-loop/closed-loop.js";
import { leastLoaded, leastOutstandingPick } from "../shared/fallback.js";
import { type IndexOwner, QueuedPrefill, Slot } from "./queued-prefill.js";
import type { Commitment, PickContext, RoutingStrategy, StrategyPick, StrategyRanking, StrategyRequest, StrategyStats } from "../strategy.js";
import { type IndexSettings, TargetBlocks, ttlNow } from "./blocks.js";
import { type BlockChain, ChainHasher, type XXHashAPI } from "./chain.js";
import type { LongestPrefixConfig } from "./options.js";
import { ChainRanking, type MatchSource } from "./ranking.js";

type Ctx = PickContext<{ id: string }>;

/**
 * With several processes, a request the index knows little of moves from its first candidate to
 * its second (or third) only when the first has this many times the queued prefill that one
 * would have: each process sees only its share of the queues, so a small gap is noise.
 */
const QUEUE_RATIO = 4;
/** The same for a router that sees all of its fleet's traffic (`exclusive: true`): its gaps are real. */
const EXCLUSIVE_QUEUE_RATIO = 2;

/** A pick, with what committing it needs. */
interface LongestPrefixPick extends StrategyPick {
  readonly key: bigint;
  /** Blocks of the request the target does not hold: the prefill it queues there. */
  readonly work: number;
  /** The eligible, non-ejected weight of the decision (the fair-share denominator). */
  readonly weight: number;
}

/** What `longest-prefix` needs from its router. */
export interface LongestPrefixEnv extends ClosedLoopEnv {
  readonly xxhash: XXHashAPI;
  readonly seed: bigint;
  readonly mode: RoutingMode;
  readonly clock: { now(): number };
}

/** The `longest-prefix` strategy of one router. Synchronous and allocation-light; no module-level state. */
export class LongestPrefix implements RoutingStrategy<{ id: string }, BlockChain>, IndexOwner {
  readonly name: string = "longest-prefix";
  private readonly settings: IndexSettings;
  private readonly shares: ShareTracker;
  private readonly hasher: ChainHasher;
  private readonly ranking = new ChainRanking();
  private slots: Slot[] = [];
  /** What the ranking reads per target: its own index here; `precise-prefix` puts the engines' events first. */
  protected indexes: readonly MatchSource[] = [];
  private readonly byId = new Map<string, Slot>();

  constructor(
    private readonly loop: LongestPrefixEnv,
    readonly config: LongestPrefixConfig,
  ) {
    const { xxhash: api, seed, mode, clock } = loop;
    this.settings = { capacityBlocks: config.capacityBlocks, ttlMs: config.ttlMs, clock, originMs: clock.now() };
    this.shares = new ShareTracker(config.loadWindow);
    this.hasher = new ChainHasher(api, seed, mode, config);
  }

  /** Aligns the per-target state with a new target list; ids that left lose their index. */
  setTargets(targets: readonly { readonly id: string }[]): void {
    this.slots = alignById(this.byId, targets, (id) => new Slot(new TargetBlocks(id, this.settings), this.newRatio()));
    this.indexes = this.slots.map((s) => s.blocks);
    this.shares.setTargets(targets);
  }

  read(request: StrategyRequest): BlockChain | undefined {
    return request.body === undefined ? undefined : this.hasher.chain(request.body, request.tenant, request.model);
  }

  rank(ctx: Ctx, chain: BlockChain | undefined): StrategyRanking {
    if (chain === undefined) return { order: Array.from(ctx.candidates), key: undefined };
    const r = this.rankingOf(ctx, chain);
    return { order: r.positions().map((j) => ctx.candidates[j] as number), key: r.key };
  }

  pick(ctx: Ctx, chain: BlockChain | undefined): StrategyPick {
    if (chain === undefined) return leastOutstandingPick(ctx);
    const p = new Placement({ ctx, r: this.rankingOf(ctx, chain), bound: this.loadBound(ctx), slots: this.slots, evidence: this.underShareByEvidence }, chain, this.config);
    if (2 * p.r.M < p.blocks || p.common) {
      const j = p.agreed(this.config.exclusive ? EXCLUSIVE_QUEUE_RATIO : QUEUE_RATIO);
      if (j !== -1) return p.picked(j);
    }
    const j = p.walk();
    return j === -1 ? p.fallback() : p.picked(j);
  }

  /**
   * Records a pick: the chain's blocks go into the target's index, the recent-share counters
   * advance by one pick, and the request's uncached blocks join the target's queued prefill.
   */
  commit(ctx: Ctx, pick: StrategyPick, chain: BlockChain | undefined): Commitment | undefined {
    if (chain === undefined) return undefined;
    const { index, work, weight } = pick as LongestPrefixPick;
    const slot = this.slots[index] as Slot;
    slot.blocks.record(chain.keys, chain.n, ttlNow(this.settings));
    this.shares.count(ctx, index, weight);
    slot.pending += work;
    // work = the request's blocks (n full + the partial one) − those the target held.
    const from = chain.n + 1 - work;
    const units = chain.length / (this.hasher.blockBytes / this.config.blockSize);
    const whole = units < this.config.maxInputLength ? units : undefined;
    return new QueuedPrefill(slot, this, { work, keys: chain.keys, from, n: chain.n, predicted: pick.predictedCachedTokens, units: whole });
  }

  /** @internal The closed loop's settings (`undefined`: off). */
  get closedLoop(): ClosedLoopEnv["closedLoop"] {
    return this.loop.closedLoop;
  }

  /**
   * @internal The closed loop found the slot's index stale: it is cleared, except for the request
   * that was just prefilled there (`keys[0..n)`), the one prefix known to be cached.
   */
  forget(slot: Slot, keys: Int32Array, n: number): void {
    const entries = slot.blocks.size;
    slot.blocks.clear();
    slot.blocks.record(keys, n, ttlNow(this.settings));
    this.loop.forgot(slot.blocks.id, entries);
  }

  stats(): StrategyStats {
    let blocks = 0;
    let estimatedBytes = 0;
    const targets: { id: string; blocks: number; queuedBlocks: number }[] = [];
    for (const slot of this.slots) {
      blocks += slot.blocks.size;
      estimatedBytes += slot.blocks.estimatedBytes();
      targets.push({ id: slot.blocks.id, blocks: slot.blocks.size, queuedBlocks: slot.pending });
    }
    return { prefixIndex: { blocks, capacityBlocks: this.config.capacityBlocks, estimatedBytes, targets } };
  }

  /** @internal The block chain of `bytes[0..length)` from `seedKey`, for known-answer tests. */
  get chains(): ChainHasher {
    return this.hasher;
  }

  /** A target's tokens-per-unit ratio: learned characters per token here, exact tokens in `precise-prefix`. */
  protected newRatio(): TokenRatio {
    return new TokenRatio();
  }

  /** Held runs shorter than this many blocks rank as none (see `ranking.ts`); `precise-prefix` sets it. */
  protected negligibleBlocks(_chain: BlockChain): number {
    return 0;
  }

  /**
   * Whether an under-share target takes a common start first only when it is below its share by
   * more than chance ({@link Placement.agreed}); `precise-prefix` asks it.
   */
  protected get underShareByEvidence(): boolean {
    return false;
  }

  /** The bounded-load rule of one decision (`precise-prefix` exempts engines whose cache is private to a running request). */
  protected loadBound(ctx: Ctx, exempt?: (i: number) => boolean): LoadBound {
    return this.shares.bound(ctx, exempt);
  }

  protected rankingOf(ctx: Ctx, chain: BlockChain): ChainRanking {
    return this.ranking.reset(ctx, chain, this.indexes, ttlNow(this.settings), this.negligibleBlocks(chain));
  }
}

/** One decision's placement: the ranking walked under the load rules. Positions j index `ctx.candidates`. */
class Placement {
  /** The request's blocks as the index counts them: the full ones and the last (partial) one. */
  readonly blocks: number;
  /** The longest match is a common start held by several targets (a system prompt, a tool list). */
  readonly common: boolean;
  private readonly c: number;
  /** An under-share target takes a common start first only when it is below its share by more than chance. */
  private readonly evidence: boolean;
  /** Characters (or bytes) per block. */
  private readonly blockSize: number;

  private readonly ctx: Ctx;
  readonly r: ChainRanking;
  private readonly bound: LoadBound;
  private readonly slots: readonly Slot[];

  constructor(decision: Readonly<{ ctx: Ctx; r: ChainRanking; bound: LoadBound; slots: readonly Slot[]; evidence: boolean }>, chain: BlockChain, config: LongestPrefixConfig) {
    const { ctx, r, bound, slots, evidence } = decision;
    this.evidence = evidence;
    this.ctx = ctx;
    this.r = r;
    this.bound = bound;
    this.slots = slots;
    this.blocks = chain.n + 1;
    this.common = r.group > 1;
    this.c = config.loadFactor;
    this.blockSize = config.blockSize;
  }

  private target(j: number): number {
    return this.ctx.candidates[j] as number;
  }

  /**
   * Uncached blocks queued on target i: this router's requests that have not answered yet, and
   * under a shared load view the others' — the engine's own count in tokens where it exports one
   * (everyone's, converted to blocks), else other routers' picks (redis view).
   */
  private backlog(i: number): number {
    const tokens = this.ctx.othersQueuedTokens?.(i) ?? Number.NaN;
    const others = tokens >= 0 ? (tokens * (this.slots[i] as Slot).ratio.value) / this.blockSize : (this.ctx.othersQueuedWork?.(i) ?? 0);
    return (this.slots[i] as Slot).pending + others;
  }

  /** Prompt tokens of `work` uncached blocks, for a view that counts tokens. */
  private tokensOfWork(i: number, work: number): number {
    return (this.slots[i] as Slot).ratio.tokens(work * this.blockSize);
  }

  /**
   * The best-ranked position of a scope (0: holders of the longest match, 1: the others, 2: all)
   * that is open and within `factor` (`clearly`: below it by more than chance), or −1.
   */
  private bestIn(scope: number, factor: number, clearly = false): number {
    const { r, ctx } = this;
    if (scope !== 0) r.scoreAnchors();
    let best = -1;
    for (let j = 0; j < ctx.candidates.length; j++) {
      if ((scope === 0 && r.match[j] !== r.M) || (scope === 1 && r.match[j] === r.M)) continue;
      const i = this.target(j);
      if (!ctx.isOpen(i) || !(clearly ? this.bound.clearlyBelow(i, factor) : this.bound.within(i, factor))) continue;
      if (best === -1 || r.compare(j, best) < 0) best = j;
    }
    return best;
  }

  /** The pick of position j. A target holding the longest match loses nothing: preferred, even when load chose it among several holders. */
  picked(j: number): LongestPrefixPick {
    const { r } = this;
    const rank = r.rankOf(j);
    const kind = rank === 0 || (r.M > 0 && r.match[j] === r.M) ? "preferred" : "spillover";
    const match = r.held[j] as number;
    const index = this.target(j);
    const work = this.blocks - match;
    return {
      index,
      kind,
      rank,
      key: r.key,
      work,
      workTokens: this.tokensOfWork(index, work),
      weight: this.bound.weight,
      predictedCachedTokens: this.predicted(index, match),
      matchedBlocks: match,
      longestMatchBlocks: r.longest,
      blocks: this.blocks,
    };
  }

  /**
   * The position every router process agrees on for a request the index knows little of, or −1:
   * the first of its two candidates that is open and within c — strictly when both hold the
   * longest match (moving between them costs no cache, so no exemption for a target idle or
   * below its share of requests in flight, which would let a replicated hot prefix push one
   * holder past c); the next one when the first has `ratio`× the queued prefill that one
   * would have with this request (a burst of cold prompts, which every process sees in its own
   * share of the traffic). A common start not yet on every target first goes to a target below
   * 1/c of its share (an instance just added), so a scale-up still takes new prefixes.
   */
  agreed(ratio: number): number {
    const { r, c, common } = this;
    const T = this.ctx.candidates.length;
    const [first, second, third] = r.top3();
    if (common && r.group !== T) {
      const low = this.bestIn(1, 1 / c, this.evidence);
      if (low !== -1) return low;
    }
    const ok = (j: number): boolean => {
      if (j === -1) return false;
      const i = this.target(j);
      return this.ctx.isOpen(i) && (common ? this.bound.strictlyBelow(i, c) : this.bound.within(i, c));
    };
    const best = ok(first) ? first : ok(second) ? second : -1;
    if (best !== first) return best;
    const queued = this.backlog(this.target(first));
    for (const next of [second, third]) {
      if (ok(next) && queued >= ratio * (this.backlog(this.target(next)) + this.blocks - (r.held[next] as number))) return next;
    }
    return first;
  }

  /**
   * The load guard's walk: passes of [scope, factor], the first that finds a target wins. Among
   * holders of a common start the choice costs no cache, so it first goes to one at or below its
   * fair share; then a target below 1/c of its own (it pays the common start once, so no target
   * idles while the holders share everything within c); then anyone within c; then anyone open.
   */
  walk(): number {
    const { r, c } = this;
    const T = this.ctx.candidates.length;
    const fair = c === Number.POSITIVE_INFINITY ? c : Math.min(1, c);
    const passes: readonly (readonly [number, number])[] = this.common
      ? [[0, fair], [1, 1 / c], [2, c], [2, Number.POSITIVE_INFINITY]]
      : [[0, c], [2, c], [2, Number.POSITIVE_INFINITY]];
    for (const [scope, factor] of passes) {
      if (scope !== 0 && r.group === T) continue;
      const best = this.bestIn(scope, factor);
      if (best !== -1) return best;
    }
    return -1;
  }

  /** Everything is full, ejected or excluded: the least queued prefill per weight (queued blocks plus the request's uncached blocks there). */
  fallback(): LongestPrefixPick {
    const { r, ctx } = this;
    const positions = r.positions();
    const order = positions.map((j) => this.target(j));
    const uncached = (k: number) => this.blocks - (r.held[positions[k] as number] as number);
    // The least queued, also under a shared load view: the backlog moves with this router's own
    // picks at once, so routers do not herd on it, and two choices cost P90 (docs/load-view.md).
    const p = leastLoaded(ctx, order, (i, k) => (this.backlog(i) + uncached(k)) / (ctx.weights[i] as number));
    const work = uncached(p.rank);
    const matchedBlocks = this.blocks - work;
    return {
      ...p,
      key: r.key,
      work,
      workTokens: this.tokensOfWork(p.index, work),
      weight: this.bound.weight,
      predictedCachedTokens: this.predicted(p.index, matchedBlocks),
      matchedBlocks,
      longestMatchBlocks: r.longest,
      blocks: this.blocks,
    };
  }

  /** Tokens predicted cached on target i for `match` blocks held. */
  private predicted(i: number, match: number): number {
    return (this.slots[i] as Slot).ratio.tokens(match * this.blockSize);
  }
}
