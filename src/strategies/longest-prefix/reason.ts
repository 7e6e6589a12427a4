/** What `longest-prefix` adds to a decision's reason (`Decision.reason`) and to its picks. */
export interface LongestPrefixReason {
  /** `longest-prefix`: leading blocks of the request the chosen target holds. */
  matchedBlocks?: number;
  /** `longest-prefix`: the most leading blocks any eligible target holds. */
  longestMatchBlocks?: number;
  /** `longest-prefix`: the request's blocks (the last one partial). */
  blocks?: number;
}

/** The reason fields, in the order the header encodes them. */
export const LONGEST_PREFIX_REASON = ["matchedBlocks", "longestMatchBlocks", "blocks"] as const satisfies readonly (keyof LongestPrefixReason)[];
