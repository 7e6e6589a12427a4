/** What `precise-prefix` adds to a decision's reason (`Decision.reason`) beside `longest-prefix`'s block figures. */
export interface PrecisePrefixReason {
  /** `precise-prefix`: where the chosen target's match came from — its KV events, or what this router sent it (its feed not in sync). Blocks are token blocks then. */
  matchedBy?: "events" | "approximate";
}

/** The reason fields, in the order the header encodes them. */
export const PRECISE_PREFIX_REASON = ["matchedBy"] as const satisfies readonly (keyof PrecisePrefixReason)[];
