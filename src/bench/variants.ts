import type { Strategy } from "../types.js";
import type { RouterOptions } from "../options.js";

/**
 * Named configurations of a strategy that the benchmark and the demo run as rows of their own:
 * `longest-prefix:exclusive` is `longest-prefix` with `exclusive: true`, the setting for a router
 * that sees all of its fleet's traffic.
 */
export const STRATEGY_VARIANTS = {
  "longest-prefix:exclusive": { strategy: "longest-prefix", longestPrefix: { exclusive: true } },
} as const satisfies Record<string, Pick<RouterOptions, "strategy" | "longestPrefix"> & { strategy: Strategy }>;

/** A variant's name. */
export type StrategyVariant = keyof typeof STRATEGY_VARIANTS;

/** Variant names, in order. */
export const VARIANT_NAMES = Object.keys(STRATEGY_VARIANTS) as StrategyVariant[];

/** The router options a strategy or variant name stands for. */
export function strategyOptions(name: Strategy | StrategyVariant): Pick<RouterOptions, "strategy" | "longestPrefix"> {
  return name in STRATEGY_VARIANTS ? STRATEGY_VARIANTS[name as StrategyVariant] : { strategy: name as Strategy };
}
