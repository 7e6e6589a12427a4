/** The built-in strategies' names, as the tools list and compare them. */
import type { STRATEGIES } from "prefix-router";

/** One of `STRATEGIES`. */
export type Strategy = (typeof STRATEGIES)[number];
