/**
 * `longest-prefix` as the registry knows it: its settings under `RouterOptions.longestPrefix`, its
 * block index under `stats().prefixIndex` (stats.ts; sizes add up over processes in `mergeStats`)
 * and the block figures of its reasons (reason.ts).
 */
import type { StrategyDefinition } from "../definition.js";
import type { PrefixIndexStats } from "./blocks.js";
import { mergePrefixIndexes } from "./stats.js";
import { DEFAULT_LONGEST_PREFIX, type LongestPrefixConfig, type LongestPrefixOptions, resolveLongestPrefixOptions } from "./options.js";
import { LONGEST_PREFIX_REASON } from "./reason.js";
import { LongestPrefix } from "./strategy.js";

/** `RouterOptions.longestPrefix`. */
export interface LongestPrefixRouterOptions {
  /**
   * Settings of the `longest-prefix` strategy (ignored by the others, but validated).
   * @default DEFAULT_LONGEST_PREFIX — { maxInputLength: 65536, blockSize: 256, capacityBlocks: 16384, ttlMs: 0, loadFactor: 1.25, loadWindow: 4096 }
   */
  longestPrefix?: LongestPrefixOptions;
}

/** `longest-prefix` in the registry. */
export const LONGEST_PREFIX: StrategyDefinition<LongestPrefixConfig, "longestPrefix"> = {
  name: "longest-prefix",
  options: {
    key: "longestPrefix",
    defaults: DEFAULT_LONGEST_PREFIX,
    resolve: resolveLongestPrefixOptions,
    inputLength: (config) => config.maxInputLength,
  },
  stats: { prefixIndex: { merge: (parts) => mergePrefixIndexes(parts as PrefixIndexStats[]) } },
  reasonFields: LONGEST_PREFIX_REASON,
  create: (env, config) => new LongestPrefix(env, config),
};
