/**
 * The built-in strategies' names and the fields their picks add to a decision's reason, as types
 * only: the vocabulary `types.ts` and the strategy interface compose without importing a strategy.
 */
import type { LongestPrefixReason } from "./longest-prefix/reason.js";
import type { PrecisePrefixReason } from "./precise-prefix/reason.js";

/** Routing strategies. `longest-prefix`: see `docs/longest-prefix.md`; `precise-prefix`: `docs/precise.md`. */
export type Strategy = "prefix-aware" | "least-outstanding" | "random" | "longest-prefix" | "precise-prefix";

/** The fields the built-in strategies' picks add to a decision's reason (`DecisionReason`, `StrategyPick`). */
export interface BuiltInReasonFields extends LongestPrefixReason, PrecisePrefixReason {}
