/**
 * `random`: a weighted random target, P(t) = w_t / Σw over the targets that are neither excluded
 * nor ejected (ejected ones only when nothing else is left). SageMaker's default. O(T); reads no
 * request.
 */
import type { StrategyDefinition } from "../definition.js";
import type { PickContext, RoutingStrategy, StrategyPick } from "../strategy.js";

function weightedRandomPick(ctx: PickContext<{ id: string }>): StrategyPick {
  for (let pass = 0; pass < 2; pass++) {
    const usable = (i: number) => !ctx.isExcluded(i) && (pass === 1 || !ctx.isEjected(i));
    let total = 0;
    for (const i of ctx.candidates) if (usable(i)) total += ctx.weights[i] as number;
    if (total === 0) continue;
    let x = ctx.random() * total;
    let last = -1;
    for (const i of ctx.candidates) {
      if (!usable(i)) continue;
      last = i;
      x -= ctx.weights[i] as number;
      if (x < 0) return { index: i, kind: "random", rank: 0 };
    }
    return { index: last, kind: "random", rank: 0 };
  }
  return { index: ctx.candidates[0] as number, kind: "random", rank: 0 };
}

/** The `random` strategy. */
export function random(): RoutingStrategy {
  return { name: "random", pick: weightedRandomPick };
}

/** `random` in the registry: no settings, no figures of its own. */
export const RANDOM: StrategyDefinition = { name: "random", create: () => random() };
