import { type RouterOptions } from "prefix-router";
import type { Strategy } from "../common/strategy.js";

/**
 * Named configurations of a strategy that the benchmark and the demo run as rows of their own:
 * `longest-prefix:exclusive` is `longest-prefix` with `exclusive: true`, the setting for a router
 * that sees all of its fleet's traffic.
 */
export const STRATEGY_VARIANTS = {
  "longest-prefix:exclusive": { strategy: "longest-prefix", longestPrefix: { exclusive: true } },
} as const satisfies Record<string, VariantOptions>;

/**
 * Variants run only when named (`--strategies longest-prefix:open-loop`), for the comparisons they
 * exist for: `longest-prefix:open-loop` is `longest-prefix` with `closedLoop: false` (it keeps
 * sending a restarted replica's prefixes there as if warm; docs/bench-restart.md);
 * `prefix-aware:tokens` is `prefix-aware` with `prefixAware: { saturation: "tokens" }`, beside the
 * request-count default (docs/prefix-aware.md, "Saturation in tokens");
 * `prefix-aware:spread` and `prefix-aware:no-spread` set `prefixAware.spreadRunningKeys` to true
 * and false (the default is "auto") and
 * `prefix-aware:prefix-scope` sets `keyScope: "prefix"` (the key before key scopes).
 */
export const NAMED_ONLY_VARIANTS = {
  "longest-prefix:open-loop": { strategy: "longest-prefix", closedLoop: false },
  "prefix-aware:tokens": { strategy: "prefix-aware", prefixAware: { saturation: "tokens" } },
  "prefix-aware:spread": { strategy: "prefix-aware", prefixAware: { spreadRunningKeys: true } },
  "prefix-aware:no-spread": { strategy: "prefix-aware", prefixAware: { spreadRunningKeys: false } },
  "prefix-aware:prefix-scope": { strategy: "prefix-aware", keyScope: "prefix" },
} as const satisfies Record<string, VariantOptions>;

/** What a variant sets. */
type VariantOptions = Pick<RouterOptions, "strategy" | "longestPrefix" | "closedLoop" | "prefixAware" | "keyScope"> & { strategy: Strategy };

/** A variant's name. */
export type StrategyVariant = keyof typeof STRATEGY_VARIANTS | keyof typeof NAMED_ONLY_VARIANTS;

/** Names of the variants every benchmark runs, in order. */
export const VARIANT_NAMES = Object.keys(STRATEGY_VARIANTS) as StrategyVariant[];

/** Whether `name` is a variant, run by default or only when named. */
export function isVariant(name: string): name is StrategyVariant {
  return name in STRATEGY_VARIANTS || name in NAMED_ONLY_VARIANTS;
}

/** The router options a strategy or variant name stands for. */
export function strategyOptions(name: Strategy | StrategyVariant): Pick<RouterOptions, "strategy" | "longestPrefix" | "closedLoop" | "prefixAware" | "keyScope"> {
  const variants: Record<string, VariantOptions> = { ...STRATEGY_VARIANTS, ...NAMED_ONLY_VARIANTS };
  return variants[name] ?? { strategy: name as Strategy };
}
