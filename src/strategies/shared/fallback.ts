/**
 * The last resort of every ranking strategy, written once: when no target of the ranking can take
 * the request (all full, ejected or excluded), the least loaded one takes it anyway — never a hang,
 * never a pile-up on the first choice.
 *
 * Two passes: first among targets that are neither excluded nor ejected, then among the ejected
 * ones too. Ties go to the better-ranked target. When every candidate is excluded (a retry that has
 * tried them all), the first of the ranking.
 */
import type { PickContext, StrategyPick } from "../strategy.js";

/**
 * The least loaded target of `order` (candidate indices, best first) by `load` (called with the
 * index and its position in `order`), as a `fallback` pick whose rank is its position in `order`.
 */
export function leastLoaded(
  ctx: PickContext<{ id: string }>,
  order: ArrayLike<number>,
  load: (i: number, position: number) => number,
): StrategyPick {
  for (let pass = 0; pass < 2; pass++) {
    let pick = -1;
    let pickRank = -1;
    let pickLoad = Number.POSITIVE_INFINITY;
    for (let r = 0; r < order.length; r++) {
      const i = order[r] as number;
      if (ctx.isExcluded(i) || (pass === 0 && ctx.isEjected(i))) continue;
      const l = load(i, r);
      if (pick === -1 || l < pickLoad) {
        pick = i;
        pickRank = r;
        pickLoad = l;
      }
    }
    if (pick !== -1) return { index: pick, kind: "fallback", rank: pickRank };
  }
  return { index: order[0] as number, kind: "fallback", rank: 0 };
}

/** In flight per weight: the load measure of request-counting strategies. */
export function inflightPerWeight(ctx: PickContext<{ id: string }>, i: number): number {
  return ctx.inflight(i) / (ctx.weights[i] as number);
}

/**
 * `least-outstanding`: the target with the fewest requests in flight per weight, ties broken by
 * the random source (reservoir sampling over the tied targets: each equally likely). Ejected
 * targets only when nothing else is left. O(T) per decision; also what the ranking strategies do
 * for a request without routing input.
 */
/** The least-outstanding pick among `ctx.candidates`, excluding tried targets. */
export function leastOutstandingPick(ctx: PickContext<{ id: string }>): StrategyPick {
  for (let pass = 0; pass < 2; pass++) {
    let pick = -1;
    let ties = 0;
    let bestLoad = Number.POSITIVE_INFINITY;
    for (const i of ctx.candidates) {
      if (ctx.isExcluded(i) || (pass === 0 && ctx.isEjected(i))) continue;
      const load = inflightPerWeight(ctx, i);
      if (load < bestLoad) {
        bestLoad = load;
        pick = i;
        ties = 1;
      } else if (load === bestLoad && ctx.random() * ++ties < 1) {
        pick = i;
      }
    }
    if (pick !== -1) return { index: pick, kind: "least-outstanding", rank: 0 };
  }
  return { index: ctx.candidates[0] as number, kind: "least-outstanding", rank: 0 };
}
