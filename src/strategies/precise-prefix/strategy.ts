/**
 * The `precise-prefix` strategy: send each request to the engine that holds the longest run of
 * its blocks, as the engines' own KV events say (docs/precise.md).
 *
 *   m_t = leading blocks of the request's token chain that engine t holds or was just sent
 *         (the KV-event index, `../../kv-events/index.ts`)       when t's feed is in sync,
 *         that this router sent to t (the approximate index)     when it is not;
 *   predicted cached tokens on t = m_t × blockSize (exact: blocks are token blocks).
 *
 * Placement is `longest-prefix`'s, reused whole (this class extends it): the ranking (longest
 * match, then rendezvous on the divergence / anchor block), the bounded load, the candidates every
 * router process agrees on for a request the fleet knows little of, and the queued-prefill
 * fallback — only the match lengths and the unit (tokens, not characters) differ, and a held run
 * shorter than an eighth of the request ranks as none (`negligibleBlocks`).
 *
 * Requests whose tokens are not known — no tokenizer configured, one that failed the start-up
 * check against the engine, a cold prompt whose first segment is still being tokenized off the
 * event loop, a body the template cannot render — route on `longest-prefix` itself (characters),
 * a second instance inside this one. A conversation's later turns find their earlier turns
 * tokenized; a cold prompt's retry, or the next request with the same start, finds it too.
 *
 * Cost of a decision: the chat template's render and a cache lookup per segment (`read`), two
 * XXH32 lanes per known block, one index probe per block (+ pending probes where an engine's bit
 * is missing), then `longest-prefix`'s placement. `microbench/precise-decision.ts` measures it.
 */
import type { Logger } from "../../logger.js";
import type { Clock, LeaseOutcome, ReleaseInfo } from "../../types.js";
import { DEFAULT_CLOSED_LOOP, type TokenRatio, judgePrediction } from "../../closed-loop/closed-loop.js";
import { KvBlockIndex, type RunsQuery } from "../../kv-events/block-index.js";
import { type PromptTokenizer, type PromptTokens, isOwnTokenizer, ownTokenizer } from "../../kv-events/tokenizer.js";
import { loadAndCheck } from "./start.js";
import type { Commitment, PickContext, StrategyPick, StrategyRanking, StrategyRequest, StrategyStats } from "../strategy.js";
import type { BlockChain } from "../longest-prefix/chain.js";
import type { LongestPrefixConfig } from "../longest-prefix/options.js";
import type { LoadBound } from "../bounded-load.js";
import { alignById } from "../shared/by-id.js";
import { SharingEvidence } from "../shared/running-keys.js";
import { RunningChains } from "./running.js";
import type { MatchSource } from "../longest-prefix/ranking.js";
import { LongestPrefix, type LongestPrefixEnv } from "../longest-prefix/strategy.js";
import type { ChainRanking } from "../longest-prefix/ranking.js";
import { ExactTokens, type PreciseChain, TokenChains, isPrecise } from "./chain.js";
import type { KvFeedLike, PrecisePrefixConfig } from "./options.js";
import type { PrecisePrefixStats, PreciseState } from "./stats.js";

export type { PrecisePrefixStats, PreciseState } from "./stats.js";

export type { PreciseChain } from "./chain.js";

type Ctx = PickContext<{ id: string }>;

/** Held runs below 1/this of a request's blocks rank as none. */
const NEGLIGIBLE_RUN_FRACTION = 8;

/**
 * A pick's figures beyond `longest-prefix`'s: `matchedBy` reaches `Decision.reason` (with
 * `matchedBlocks`, `longestMatchBlocks` and `blocks`, in token blocks); the rest is for tests and
 * the benchmark.
 */
export interface PrecisePick extends StrategyPick {
  /** Where the chosen target's match came from: its KV events (and this router's pending decisions), or what this router sent it (its feed is not in sync). */
  readonly matchedBy: "events" | "approximate";
  /** Tokens of the prompt known at the decision, and whether that is the whole prompt. */
  readonly knownTokens: number;
  readonly complete: boolean;
  /** Candidates whose feed was in sync. */
  readonly inSync: number;
}

/** `router.stats().precise`. */

/** What the strategy needs from its router: `longest-prefix`'s environment and a logger. */
export interface PrecisePrefixEnv extends LongestPrefixEnv {
  readonly logger: Logger;
}

/** The `precise-prefix` strategy of one router. */
export class PrecisePrefix extends LongestPrefix {
  override readonly name: string = "precise-prefix";
  /** What the engines hold: the feed's sink. */
  readonly index: KvBlockIndex;
  readonly feed: KvFeedLike | undefined;
  /** Resolves when the tokenizer is loaded and checked (or failed: see {@link PrecisePrefix.state}). Never rejects. */
  readonly ready: Promise<void>;
  private tokenizer: PromptTokenizer | undefined;
  private stateNow: PreciseState = "starting";
  private readonly approx: LongestPrefix;
  private readonly precise: PrecisePrefixConfig;
  private readonly logger: Logger;
  private ids: string[] = [];
  private engineSlots = new Int32Array(0);
  /** runs[i]: target i's match from the events this decision, or −1 (approximate). */
  private runs = new Int32Array(0);
  /** What `settle` read of a request that did not wait, for its route (the adapters call one after the other). */
  private readonly settled = new WeakMap<StrategyRequest, PromptTokens>();
  /** busy[i]: this decision's prefix runs on target i, whose cache is private to a running request (`spreadRunningPrefixes`). */
  private busy = new Uint8Array(0);
  private candSlots = new Int32Array(16);
  private candRuns = new Int32Array(16);
  private readonly counts = { precise: 0, approximate: 0, tested: 0, within: 0, spread: 0 };
  /** Per target: the chains of the requests this router runs there, and whether its cache is private to a running request. */
  private running: RunningChains[] = [];
  private readonly runningById = new Map<string, RunningChains>();
  /** The fleet's verdicts, for an engine without enough of its own: fleets are mostly of one engine kind. */
  private readonly sharing = new SharingEvidence();
  private readonly exempt = (i: number): boolean => this.precise.spreadRunningPrefixes === true || this.running[i]?.privateCache === true;
  /** Requests' token chains, with the cache of earlier prompts'. */
  private readonly tokenChains: TokenChains;
  private held = new Int32Array(16);
  /** The index query of each decision, refilled in place. */
  private readonly query: RunsQuery = { engines: this.candSlots, now: 0, out: this.candRuns, held: undefined, eventRuns: undefined };

  /**
   * @param approximate `longest-prefix`'s settings: its placement rules are shared, and it routes
   *   what has no tokens (and engines whose feed is not in sync)
   */
  constructor(env: PrecisePrefixEnv, approximate: LongestPrefixConfig, p: PrecisePrefixConfig) {
    // The placement runs in token blocks: blockSize tokens, ratio 1.
    super(env, { ...approximate, blockSize: p.blockSize });
    this.precise = p;
    this.logger = env.logger;
    this.approx = new LongestPrefix(env, approximate);
    this.index = new KvBlockIndex({ blockSize: p.blockSize, capacityBlocks: p.capacityBlocks, model: p.model, pendingTtlMs: p.pendingTtlMs, pendingCapacity: p.pendingCapacity });
    this.tokenChains = new TokenChains(this.index.hasher, p.blockSize, p.model);
    this.feed = typeof p.feed === "function" ? p.feed(this.index) : p.feed;
    this.ready = this.start(env.clock);
  }

  /** Where the strategy stands with its tokenizer. */
  get state(): PreciseState {
    return this.stateNow;
  }

  /** The tokenizer, once loaded. */
  get tokens(): PromptTokenizer | undefined {
    return this.tokenizer;
  }

  private async start(clock: Clock): Promise<void> {
    const p = this.precise;
    if (p.tokenizer === undefined) {
      this.stateNow = "off";
      this.logger.warn("precise-prefix: no `precisePrefix.tokenizer` configured; every request routes on the approximate strategy (longest-prefix)");
      return;
    }
    // The user's own functions, unchecked: ready now, so a read that never yields routes precisely.
    if (isOwnTokenizer(p.tokenizer) && p.checkUrl === undefined) return void ((this.tokenizer = ownTokenizer(p.tokenizer, { ...p, clock, logger: this.logger }).tokenizer), (this.stateNow = "ready"));
    this.stateNow = await loadAndCheck(p.tokenizer, p, clock, this.logger, (t) => (this.tokenizer = t));
  }

  /** Stops the tokenizer's worker. */
  async close(): Promise<void> {
    await this.tokenizer?.close();
  }

  protected override newRatio(): TokenRatio {
    return new ExactTokens();
  }

  override setTargets(targets: readonly { readonly id: string }[]): void {
    super.setTargets(targets);
    this.approx.setTargets(targets);
    this.ids = targets.map((t) => t.id);
    this.running = alignById(this.runningById, targets, () => new RunningChains(this.sharing));
    this.engineSlots = Int32Array.from(targets, (t) => this.index.engine(t.id));
    this.runs = new Int32Array(targets.length).fill(-1);
    this.busy = new Uint8Array(targets.length);
    const approx = this.indexes;
    const runs = (): Int32Array => this.runs;
    this.indexes = approx.map(
      (own, i): MatchSource => ({
        matchLength(keys: Int32Array, n: number, now: number): number {
          const r = runs()[i] as number;
          return r >= 0 ? r : own.matchLength(keys, n, now);
        },
      }),
    );
  }

  /**
   * A prompt mostly not tokenized yet (a system prompt or document this process has not seen:
   * this read queues its tokenization) is waited for, at most `tokenizeWaitMs`: routed now, it
   * would go on what is known of it — often nothing — and cost a whole prefill on the wrong
   * engine. A conversation's next turn, whose earlier turns are known, does not wait for its new
   * message: what places it is known.
   */
  settle(request: StrategyRequest): Promise<void> | undefined {
    const wait = this.precise.tokenizeWaitMs;
    const tokenizer = this.tokenizer;
    if (wait === 0 || this.stateNow !== "ready" || tokenizer === undefined || request.body === undefined) return undefined;
    let known: PromptTokens | undefined;
    try {
      known = tokenizer.read(request.body);
    } catch {
      return undefined; // The route reads it again and reports what is wrong with it.
    }
    if (known === undefined || known.complete || 2 * known.knownChars >= known.chars) {
      // The route reads the same request next: it takes these tokens rather than reading again.
      if (known !== undefined) this.settled.set(request, known);
      return undefined;
    }
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, wait);
      timer.unref?.();
      void tokenizer.settled().then(() => {
        clearTimeout(timer);
        resolve();
      }, resolve);
    });
  }

  /** The request's token chain when its tokens are known, else `longest-prefix`'s character chain. */
  override read(request: StrategyRequest): BlockChain | undefined {
    if (this.stateNow === "ready" && this.tokenizer !== undefined && request.body !== undefined) {
      const t = this.settled.get(request) ?? this.tokenizer.read(request.body);
      this.settled.delete(request);
      if (t !== undefined && t.tokens.length >= this.precise.blockSize) return this.chainOf(t, request);
    }
    return this.approx.read(request);
  }

  /**
   * @internal The chain of known tokens (tests, benchmarks). Block hashes of a prefix this router
   * hashed before (the earlier turns of a conversation) are taken from a small cache keyed by the
   * prompt's segments, so a follow-up turn hashes only its new blocks (`chain.ts`).
   */
  chainOf(t: PromptTokens, request: StrategyRequest): PreciseChain {
    return this.tokenChains.of(t, request);
  }

  protected override rankingOf(ctx: Ctx, chain: BlockChain): ChainRanking {
    if (isPrecise(chain)) this.eventRuns(ctx, chain);
    return super.rankingOf(ctx, chain);
  }

  /** Fills {@link runs} for the candidates whose feed is in sync (one index walk for all of them). */
  private eventRuns(ctx: Ctx, chain: PreciseChain): number {
    const cands = ctx.candidates;
    const T = cands.length;
    if (this.candSlots.length < T) {
      this.candSlots = new Int32Array(2 * T);
      this.candRuns = new Int32Array(2 * T);
    }
    let inSync = 0;
    for (let j = 0; j < T; j++) {
      const i = cands[j] as number;
      const sync = this.feed?.inSync(this.ids[i] as string) === true;
      this.candSlots[j] = sync ? (this.engineSlots[i] as number) : -1;
      if (sync) inSync++;
    }
    this.runs.fill(-1);
    this.busy.fill(0);
    if (inSync === 0) return 0;
    if (this.held.length < 2 * T) this.held = new Int32Array(4 * T);
    const held = this.held.subarray(0, T);
    const eventRuns = this.held.subarray(T, 2 * T);
    const hint = chain.hint;
    for (let j = 0; j < T; j++) {
      const e = this.candSlots[j] as number;
      const known = hint !== undefined && e >= 0 && e < hint.memo.runs.length && hint.memo.gens[e] === this.index.generation(e);
      held[j] = known ? Math.min(hint.memo.runs[e] as number, hint.blocks) : 0;
    }
    const q = this.query;
    q.engines = this.candSlots.subarray(0, T);
    q.now = ctx.now;
    q.out = this.candRuns;
    q.held = held;
    q.eventRuns = eventRuns;
    this.index.runs(chain, q);
    const memo = chain.memo;
    if (memo.runs.length < this.engineSlots.length || memo.runs.length <= Math.max(...this.engineSlots)) {
      const size = Math.max(...this.engineSlots) + 1;
      memo.runs = new Int32Array(size);
      memo.gens = new Int32Array(size).fill(-1);
    }
    const spread = this.precise.spreadRunningPrefixes;
    for (let j = 0; j < T; j++) {
      const e = this.candSlots[j] as number;
      if (e < 0) continue;
      const i = cands[j] as number;
      const m = this.candRuns[j] as number;
      this.runs[i] = m;
      memo.runs[e] = eventRuns[j] as number;
      memo.gens[e] = this.index.generation(e);
      // The engine holds the prefix, but in a request this router runs there: on a private cache
      // (llama.cpp's slots) this request would start cold beside it, so the engine is not open to it.
      if (m > 0 && spread !== false && (spread === true || this.running[i]?.privateCache === true) && this.running[i]?.runs(m, chain.keys[m - 1] as number) === true) this.busy[i] = 1;
    }
    return inSync;
  }

  /**
   * A run shorter than an eighth of the request ranks as none (`ranking.ts`): the engines hold
   * what they hold exactly, so a document's first words held by chance elsewhere would decide
   * where its whole prompt goes — and decide it differently after any change in the engines'
   * contents (a replica restarted), moving prefixes off their engines.
   */
  protected override negligibleBlocks(chain: BlockChain): number {
    return isPrecise(chain) ? Math.ceil((chain.n + 1) / NEGLIGIBLE_RUN_FRACTION) : 0;
  }

  /** An under-share engine takes a common start first only when it is below its share by more than chance (`Placement.agreed`). */
  protected override get underShareByEvidence(): boolean {
    return true;
  }

  /** Engines whose cache is private to a running request are not bound by the shares: a running prefix already sends the next request elsewhere. */
  protected override loadBound(ctx: Ctx): LoadBound {
    return super.loadBound(ctx, this.precise.spreadRunningPrefixes === false ? undefined : this.exempt);
  }

  override rank(ctx: Ctx, chain: BlockChain | undefined): StrategyRanking {
    return isPrecise(chain) ? super.rank(ctx, chain) : this.approx.rank(ctx, chain);
  }

  override pick(ctx: Ctx, chain: BlockChain | undefined): StrategyPick {
    if (!isPrecise(chain)) return this.approx.pick(ctx, chain);
    // Engines running this prefix on a private cache are closed to it: the placement's walk takes
    // the next of the ranking (another holder, or the prefix's spill target), as for a full one.
    const busy = this.busy;
    const open = Object.create(ctx) as Ctx;
    Object.defineProperty(open, "isOpen", { value: (i: number) => busy[i] !== 1 && ctx.isOpen(i) });
    const pick = super.pick(open, chain);
    if (busy[pick.index] !== 1 && busy.includes(1)) this.counts.spread++;
    const inSync = this.candSlots.subarray(0, ctx.candidates.length).reduce((n, s) => n + (s >= 0 ? 1 : 0), 0);
    const precise: PrecisePick = {
      ...pick,
      matchedBy: (this.runs[pick.index] as number) >= 0 ? "events" : "approximate",
      knownTokens: chain.known,
      complete: chain.complete,
      inSync,
    };
    return precise;
  }

  override commit(ctx: Ctx, pick: StrategyPick, chain: BlockChain | undefined): Commitment | undefined {
    if (!isPrecise(chain)) {
      this.counts.approximate++;
      return this.approx.commit(ctx, pick, chain);
    }
    this.counts.precise++;
    // What this router sent counts only for an engine out of sync (its events say the rest): for
    // one in sync the approximate index is not written (n = 0), and learns again if it falls out.
    const synced = (this.runs[pick.index] as number) >= 0;
    const inner = super.commit(ctx, pick, synced ? { ...chain, n: 0 } : chain);
    const e = this.engineSlots[pick.index] as number;
    const from = Math.min(pick.matchedBlocks ?? 0, chain.n);
    if (from < chain.n) this.index.addPending(e, chain, from, chain.n, ctx.now);
    const predicted = pick.predictedCachedTokens;
    const counts = this.counts;
    const index = this.index;
    // Its blocks run on the target until it ends; a request sent while its matched prefix ran
    // there teaches whether the target's cache is shared (a hit) or private (a miss).
    const running = this.running[pick.index] as RunningChains;
    const { keys, n } = chain;
    const m = synced ? Math.min(pick.matchedBlocks ?? 0, n) : 0;
    const concurrent = m > 0 && running.runs(m, keys[m - 1] as number);
    running.start(keys);
    const ratio = (this.closedLoop ?? DEFAULT_CLOSED_LOOP).ratio;
    return {
      firstByte: () => inner?.firstByte?.(),
      release(outcome: LeaseOutcome, sawFirstByte: boolean, info?: ReleaseInfo): void {
        running.end(keys);
        if (concurrent) running.judge(judgePrediction(predicted, outcome, info, ratio));
        const failed = outcome === "connect-error" || outcome === "server-error" || outcome === "client-error";
        if (failed && !sawFirstByte && from < chain.n) index.forgetPending(e, chain, from, chain.n);
        const cached = info?.cachedTokens;
        if (outcome === "success" && predicted !== undefined && typeof cached === "number" && cached >= 0) {
          counts.tested++;
          if (Math.abs(cached - predicted) <= 0.1 * Math.max(cached, predicted)) counts.within++;
        }
        inner?.release?.(outcome, sawFirstByte, info);
      },
    };
  }

  override stats(): StrategyStats {
    const own = super.stats();
    const precise: PrecisePrefixStats = {
      state: this.stateNow,
      routed: { precise: this.counts.precise, approximate: this.counts.approximate },
      spreadRunning: this.counts.spread,
      predictions: { tested: this.counts.tested, within10Percent: this.counts.within },
      index: this.index.stats(),
      tokenizer: this.tokenizer?.stats(),
      feed: this.feed?.stats?.(),
    };
    return { ...own, precise };
  }
}
