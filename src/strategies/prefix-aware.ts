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
 */
import { leastLoaded, inflightPerWeight } from "./fallback.js";
import { leastOutstandingPick } from "./least-outstanding.js";
import { twoChoiceFallback, twoChoiceSpill } from "./two-choices.js";
import type { PickContext, RoutingStrategy, StrategyEnv, StrategyPick, StrategyRanking, StrategyRequest } from "./strategy.js";
import { splitKey } from "../rendezvous.js";

type Ctx = PickContext<{ id: string }>;

/** Candidates sorted by descending score; equal scores (probability ~2^-53) by position. */
export function sortByScore(candidates: Int32Array, scores: Float64Array): number[] {
  const positions = Array.from({ length: candidates.length }, (_, j) => j);
  positions.sort((a, b) => (scores[b] as number) - (scores[a] as number) || a - b);
  return positions.map((j) => candidates[j] as number);
}

/** The `prefix-aware` strategy (also the default ranking of strategies that define none). */
export class PrefixAware implements RoutingStrategy<{ id: string }, bigint> {
  readonly name: string = "prefix-aware";
  private scores = new Float64Array(16);

  constructor(private readonly env: Pick<StrategyEnv, "routingKey">) {}

  read(request: StrategyRequest): bigint | undefined {
    return request.body === undefined ? undefined : this.env.routingKey(request);
  }

  pick(ctx: Ctx, key: bigint | undefined): StrategyPick {
    if (key === undefined) return leastOutstandingPick(ctx);
    const candidates = ctx.candidates;
    const scores = this.scoresOf(ctx, key);
    // Fast path: the first choice usually has room; no sort needed.
    let best = 0;
    for (let j = 1; j < candidates.length; j++) if ((scores[j] as number) > (scores[best] as number)) best = j;
    const first = candidates[best] as number;
    if (ctx.isOpen(first)) return { index: first, kind: "preferred", rank: 0, key };
    const order = sortByScore(candidates, scores);
    if (ctx.sharedLoad === true) {
      const r = twoChoiceSpill(ctx, order, 1);
      if (r !== -1) return { index: order[r] as number, kind: "spillover", rank: r, key };
    }
    for (let r = 1; r < order.length; r++) {
      const i = order[r] as number;
      if (ctx.isOpen(i)) return { index: i, kind: "spillover", rank: r, key };
    }
    const pick = (ctx.sharedLoad === true ? twoChoiceFallback(ctx, order) : undefined) ?? leastLoaded(ctx, order, (i) => inflightPerWeight(ctx, i));
    return { ...pick, key };
  }

  rank(ctx: Ctx, key: bigint | undefined): StrategyRanking {
    if (key === undefined) return { order: Array.from(ctx.candidates), key };
    return { order: sortByScore(ctx.candidates, this.scoresOf(ctx, key)), key };
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
