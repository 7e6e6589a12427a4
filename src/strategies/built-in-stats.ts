/**
 * What the built-in strategies report under `router.stats()`, as types only: each folder's stats,
 * composed for the strategy interface (`StrategyStats`) and `RouterStats`.
 */
import type { LongestPrefixStats } from "./longest-prefix/stats.js";
import type { PrefixAwareStats } from "./prefix-aware/stats.js";
import type { PrecisePrefixStatsHolder } from "./precise-prefix/stats.js";

/** What the built-in strategies report under `router.stats()`. */
export interface BuiltInStrategyStats extends PrefixAwareStats, LongestPrefixStats, PrecisePrefixStatsHolder {}
