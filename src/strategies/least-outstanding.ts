/**
 * `least-outstanding`: the target with the fewest requests in flight per weight, ties broken by
 * the random source (reservoir sampling over the tied targets: each equally likely). Ejected
 * targets only when nothing else is left. O(T) per decision; reads no request.
 */
import type { PickContext, RoutingStrategy, StrategyPick } from "./strategy.js";
import { inflightPerWeight } from "./helpers/fallback.js";

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

/** The `least-outstanding` strategy. */
export function leastOutstanding(): RoutingStrategy {
  return { name: "least-outstanding", pick: leastOutstandingPick };
}
