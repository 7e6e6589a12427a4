/**
 * `least-outstanding`: the target with the fewest requests in flight per weight, ties broken by
 * the random source (reservoir sampling over the tied targets: each equally likely). Ejected
 * targets only when nothing else is left. O(T) per decision; reads no request.
 * The pick itself is shared (`shared/fallback.ts`): it is also how the ranking strategies route a
 * request without routing input.
 */
import type { StrategyDefinition } from "../definition.js";
import { leastOutstandingPick } from "../shared/fallback.js";
import type { RoutingStrategy } from "../strategy.js";

/** The `least-outstanding` strategy. */
export function leastOutstanding(): RoutingStrategy {
  return { name: "least-outstanding", pick: leastOutstandingPick };
}

/** `least-outstanding` in the registry: no settings, no figures of its own. */
export const LEAST_OUTSTANDING: StrategyDefinition = { name: "least-outstanding", create: () => leastOutstanding() };
