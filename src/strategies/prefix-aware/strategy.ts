/**
 * `prefix-aware`: SageMaker's PREFIX_AWARE routing, client-side. The routing key (the first
 * `prefixLength` of the routing input, hashed with the tenant and the model; `routing-key.ts`)
 * ranks the targets by weighted rendezvous hashing (`rendezvous.ts`); the request goes to the
 * first of that ranking that is open — below `concurrencyThreshold` in flight, not ejected, not
 * already tried — and, when none is, to the least loaded (`fallback.ts`). Under a shared load
 * view both go to the less loaded of two targets drawn among the ranking's next three
 * (`two-choices.ts`): figures one refresh old would send every router to the same one.
 *
 * Cost: T rendezvous scores per decision (T eligible targets) and, only when the first choice is
 * not open, one sort of T scores. A request without routing input goes by least-outstanding.
 *
 * With `prefixAware: { saturation: "tokens" }` a target is open only while its uncached prefill
 * tokens in flight, this request's included, stay within its calibrated bound τ; when no target
 * is, the least uncached tokens in flight (with this request's) per weight takes it
 * (saturation.ts).
 *
 * Prediction (closed-loop.ts): a pick predicts the key's whole prefix cached when this router sent
 * the key to that target recently — among the last {@link RECENT_KEYS_PER_TARGET} keys it sent
 * there (recorded at commit) — and nothing cached otherwise, in tokens at the target's learned
 * characters per token ({@link TokenRatio}). The prediction never changes a pick; after repeated
 * misses the target's recent keys are forgotten, so the predictions (and the predicted-vs-actual
 * metrics) start over with the target's empty cache.
 *
 * Running keys (`spreadRunningKeys`): ../shared/running-keys.ts.
 */
import { LRUCache } from "lru-cache";
import type { LeaseOutcome, ReleaseInfo } from "../../types.js";
import { alignById } from "../shared/by-id.js";
import { type ClosedLoopEnv, DEFAULT_CLOSED_LOOP, type MissRun, TokenRatio, countVerdict, judgePrediction } from "../../closed-loop/closed-loop.js";
import { measurePrompt } from "../../routing/prompt-length.js";
import type { PrefixKey } from "../../routing/prefix-key.js";
import { PrefillSaturation, PrefillTarget } from "./saturation.js";
import { RunningKeys, spreads } from "../shared/running-keys.js";
import { DEFAULT_PREFIX_AWARE, type PrefixAwareConfig } from "./options.js";
import type { RoutingMode } from "../../routing/routing-input.js";
import type { Clock } from "../../types.js";
import { inflightPerWeight, leastLoaded, leastOutstandingPick } from "../shared/fallback.js";
import type { Commitment, PickContext, RoutingStrategy, StrategyPick, StrategyRanking, StrategyRequest, StrategyStats } from "../strategy.js";
import { twoChoiceFallback, twoChoiceSpill } from "../shared/two-choices.js";
import { splitKey } from "../../routing/rendezvous.js";

type Ctx = PickContext<{ id: string }>;

/** Keys remembered per target for predictions: about what a replica's prefix cache holds of 1,000-token prefixes. */
export const RECENT_KEYS_PER_TARGET = 4096;

/** What `prefix-aware` needs from its router. */
export interface PrefixAwareEnv extends ClosedLoopEnv {
  /** The request's key and prefix length, or `undefined` without routing input. */
  routingPrefix(request: StrategyRequest): PrefixKey | undefined;
  readonly mode: RoutingMode;
  readonly clock: Clock;
}

/** A target's recent keys, its run of prediction misses, its characters per token and the keys it runs. */
class Recent implements MissRun {
  misses = 0;
  readonly keys = new LRUCache<bigint, true>({ max: RECENT_KEYS_PER_TARGET });
  readonly ratio = new TokenRatio();
  /** Requests in flight from this router on the target, by key. */
  readonly running = new RunningKeys();
  /** Uncached prefill tokens in flight (`saturation: "tokens"`). */
  readonly prefill: PrefillTarget;
  constructor(readonly id: string) {
    this.prefill = new PrefillTarget(id);
  }
}

/** Candidates sorted by descending score; equal scores (probability ~2^-53) by position. */
export function sortByScore(candidates: Int32Array, scores: Float64Array): number[] {
  const positions = Array.from({ length: candidates.length }, (_, j) => j);
  positions.sort((a, b) => (scores[b] as number) - (scores[a] as number) || a - b);
  return positions.map((j) => candidates[j] as number);
}

/** The `prefix-aware` strategy (also the default ranking of strategies that define none). */
export class PrefixAware implements RoutingStrategy<{ id: string }, PrefixKey> {
  readonly name: string = "prefix-aware";
  private scores = new Float64Array(16);
  private recent: Recent[] = [];
  private readonly byId = new Map<string, Recent>();
  /** Token accounting; `undefined` with `saturation: "requests"`. */
  private readonly saturation: PrefillSaturation | undefined;
  private readonly spread: boolean | "auto";

  constructor(
    private readonly env: PrefixAwareEnv,
    o: PrefixAwareConfig = DEFAULT_PREFIX_AWARE,
  ) {
    this.saturation = o.saturation === "tokens" ? new PrefillSaturation(o.ttftPenaltyMs, env.clock) : undefined;
    this.spread = o.spreadRunningKeys;
  }

  setTargets(targets: readonly { readonly id: string }[]): void {
    this.recent = alignById(this.byId, targets, (id) => new Recent(id));
  }

  read(request: StrategyRequest): PrefixKey | undefined {
    if (request.body === undefined) return undefined;
    const prefix = this.env.routingPrefix(request);
    if (prefix === undefined || this.saturation === undefined || prefix.units !== undefined) return prefix;
    return { ...prefix, units: measurePrompt(this.env.mode, request.body, { length: prefix.length, limit: prefix.length }, "estimate") };
  }

  /** `stats().prefill` with `saturation: "tokens"`. */
  stats(): StrategyStats {
    return this.saturation === undefined ? {} : { prefill: this.saturation.stats(this.recent.map((r) => r.prefill)) };
  }

  pick(ctx: Ctx, input: PrefixKey | undefined): StrategyPick {
    if (input === undefined) return leastOutstandingPick(ctx);
    const pick = this.choose(ctx, input);
    const recent = this.recent[pick.index];
    const predictedCachedTokens = recent !== undefined && recent.keys.has(input.key) ? recent.ratio.tokens(input.length) : 0;
    return { ...pick, key: input.key, predictedCachedTokens };
  }

  /**
   * Remembers the key as sent to the target (and as running there); the lease's release teaches
   * the target's characters per token and tests the prediction.
   */
  commit(ctx: Ctx, pick: StrategyPick, input: PrefixKey | undefined): Commitment | undefined {
    const recent = this.recent[pick.index];
    if (input === undefined || recent === undefined) return undefined;
    const hold = this.holdPrefill(ctx, recent, input);
    recent.keys.set(input.key, true);
    const key = input.key;
    const concurrent = recent.running.start(key);
    const { closedLoop } = this.env;
    const predicted = pick.predictedCachedTokens;
    return {
      ...(hold && { firstByte: () => hold.firstByte() }),
      release: (outcome: LeaseOutcome, sawFirstByte: boolean, info?: ReleaseInfo) => {
        hold?.release(outcome, sawFirstByte, info);
        recent.running.end(key);
        if (outcome === "success") recent.ratio.learn(input.units, info?.promptTokens);
        const verdict = judgePrediction(predicted, outcome, info, (closedLoop ?? DEFAULT_CLOSED_LOOP).ratio);
        if (concurrent) recent.running.judge(verdict);
        if (closedLoop === undefined) return;
        if (!countVerdict(recent, verdict, closedLoop)) return;
        const entries = recent.keys.size;
        recent.keys.clear();
        // This request was just prefilled there: the one key known to be cached.
        recent.keys.set(input.key, true);
        this.env.forgot(recent.id, entries);
      },
    };
  }

  rank(ctx: Ctx, input: PrefixKey | undefined): StrategyRanking {
    if (input === undefined) return { order: Array.from(ctx.candidates), key: undefined };
    return { order: sortByScore(ctx.candidates, this.scoresOf(ctx, input.key)), key: input.key };
  }

  /** With `saturation: "tokens"`, the pick's uncached tokens held on its target until its first byte. */
  private holdPrefill(ctx: Ctx, recent: Recent, input: PrefixKey): Required<Commitment> | undefined {
    const sat = this.saturation;
    if (sat === undefined || input.units === undefined) return undefined;
    const held = recent.keys.has(input.key);
    const hold = sat.hold(recent.prefill, { uncached: this.uncachedOn(recent, input), startMs: ctx.now, key: input.key, units: input.units, held });
    return { firstByte: () => hold.firstByte(), release: (outcome, _sawFirstByte, info) => hold.release(outcome, info) };
  }

  /** Estimated uncached prompt tokens of `input` on the target of `recent`. */
  private uncachedOn(recent: Recent, input: PrefixKey): number {
    const sat = this.saturation as PrefillSaturation;
    return sat.uncached(input.key, input.length, sat.promptTokens(input.units ?? input.length), recent.keys.has(input.key));
  }

  /** The key's first open choice, else its next, else the least loaded. */
  private choose(ctx: Ctx, input: PrefixKey): StrategyPick {
    const candidates = ctx.candidates;
    const scores = this.scoresOf(ctx, input.key);
    const sat = this.saturation;
    const isOpen =
      sat === undefined || input.units === undefined
        ? (i: number) => ctx.isOpen(i)
        : (i: number) => ctx.isOpen(i) && sat.admits((this.recent[i] as Recent).prefill, this.uncachedOn(this.recent[i] as Recent, input));
    // Fast path: the first choice usually has room; no sort needed.
    let best = 0;
    for (let j = 1; j < candidates.length; j++) if ((scores[j] as number) > (scores[best] as number)) best = j;
    const first = candidates[best] as number;
    if (isOpen(first)) {
      if (!spreads(this.spread, this.recent[first]?.running, input.key)) return { index: first, kind: "preferred", rank: 0 };
      const order = sortByScore(candidates, scores);
      for (let r = 1; r < order.length; r++) {
        const i = order[r] as number;
        if (isOpen(i) && this.recent[i]?.running.has(input.key) !== true) return { index: i, kind: "spillover", rank: r };
      }
      return { index: first, kind: "preferred", rank: 0 };
    }
    const order = sortByScore(candidates, scores);
    if (ctx.sharedLoad === true) {
      const r = twoChoiceSpill(ctx, order, 1, isOpen);
      if (r !== -1) return { index: order[r] as number, kind: "spillover", rank: r };
    }
    for (let r = 1; r < order.length; r++) {
      const i = order[r] as number;
      if (isOpen(i)) return { index: i, kind: "spillover", rank: r };
    }
    if (sat !== undefined && input.units !== undefined) {
      // llm-d's score: uncached tokens in flight plus this request's own there.
      return leastLoaded(ctx, order, (i) => {
        const recent = this.recent[i] as Recent;
        return (recent.prefill.inflight + this.uncachedOn(recent, input)) / (ctx.weights[i] as number);
      });
    }
    return (ctx.sharedLoad === true ? twoChoiceFallback(ctx, order) : undefined) ?? leastLoaded(ctx, order, (i) => inflightPerWeight(ctx, i));
  }

  /** Rendezvous scores of the candidates for `key`, in a scratch array reused across decisions. */
  private scoresOf(ctx: Ctx, key: bigint): Float64Array {
    const [hi, lo] = splitKey(key);
    const candidates = ctx.candidates;
    if (this.scores.length < candidates.length) this.scores = new Float64Array(Math.max(candidates.length, 2 * this.scores.length));
    const scores = this.scores;
    for (let j = 0; j < candidates.length; j++) scores[j] = ctx.score(candidates[j] as number, hi, lo);
    return scores;
  }
}
