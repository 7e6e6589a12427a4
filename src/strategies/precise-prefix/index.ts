/**
 * `precise-prefix` as the registry knows it: its settings under `RouterOptions.precisePrefix`
 * (and `longestPrefix`'s, whose placement rules it shares and which routes what it has no tokens
 * for), `stats().precise` (per process: `mergeStats` leaves it out) and `matchedBy` in its reasons.
 */
import type { StrategyDefinition } from "../definition.js";
import type { LongestPrefixConfig } from "../longest-prefix/options.js";
import { DEFAULT_PRECISE_PREFIX, type PrecisePrefixConfig, type PrecisePrefixOptions, resolvePrecisePrefixOptions } from "./options.js";
import { PRECISE_PREFIX_REASON } from "./reason.js";
import { PrecisePrefix } from "./strategy.js";

/** `RouterOptions.precisePrefix`. */
export interface PrecisePrefixRouterOptions {
  /**
   * Settings of the `precise-prefix` strategy (ignored by the others, but validated): where its
   * tokens come from, the engines' block size, its KV-event feed (docs/precise.md). Its
   * approximate fallback and placement rules read `longestPrefix`.
   * @default DEFAULT_PRECISE_PREFIX, no tokenizer and no feed (every request routes as `longest-prefix`)
   */
  precisePrefix?: PrecisePrefixOptions;
}

/** `precise-prefix` in the registry. */
export const PRECISE_PREFIX: StrategyDefinition<PrecisePrefixConfig, "precisePrefix"> = {
  name: "precise-prefix",
  options: { key: "precisePrefix", defaults: resolvePrecisePrefixOptions(undefined), resolve: resolvePrecisePrefixOptions },
  uses: ["longest-prefix"],
  stats: { precise: {} },
  reasonFields: PRECISE_PREFIX_REASON,
  create: (env, config) => new PrecisePrefix(env, env.settings.get("longest-prefix") as LongestPrefixConfig, config),
};

export { DEFAULT_PRECISE_PREFIX };
