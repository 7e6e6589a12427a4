/** What `precise-prefix` reports under `router.stats()`. */
import type { KvIndexStats } from "../../kv-events/block-index.js";
import type { TokenizerStats } from "../../kv-events/tokenizer.js";

/** Where the strategy stands with its tokenizer. */
export type PreciseState =
  /** Loading the tokenizer or checking it against the engine: requests route on `longest-prefix`. */
  | "starting"
  /** Tokens known: requests route on the index. */
  | "ready"
  /** No tokenizer configured: every request routes on `longest-prefix`. */
  | "off"
  /** The tokenizer could not be loaded, or disagrees with the engine's `/tokenize`: every request routes on `longest-prefix` (a warning said why). */
  | "failed"
  | "mismatch";

/** `router.stats().precise`: tokenizer, KV-event index, feed, prediction accuracy. */
export interface PrecisePrefixStats {
  state: PreciseState;
  /** Decisions taken on tokens, and on `longest-prefix` (no tokens). */
  routed: { precise: number; approximate: number };
  /** Decisions that passed over an engine running the request's prefix on a private cache (`spreadRunningPrefixes`). */
  spreadRunning: number;
  /**
   * The closed loop's measure: responses that reported cached tokens, and those whose report was
   * within 10% of the prediction (`|cached − predicted| ≤ 0.1 × max(cached, predicted)`).
   */
  predictions: { tested: number; within10Percent: number };
  index: KvIndexStats;
  tokenizer: TokenizerStats | undefined;
  /** The feed's own statistics (events/s, lag, gaps, replays), as it reports them. */
  feed: unknown;
}

/** `RouterStats.precise`. */
export interface PrecisePrefixStatsHolder {
  /** The `precise-prefix` strategy: tokenizer, KV-event index, feed, prediction accuracy; present only with that strategy. */
  precise?: PrecisePrefixStats;
}
