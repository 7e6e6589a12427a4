/** What `prefix-aware` reports under `router.stats()`. */
import type { PrefillStats } from "./saturation.js";

/** `RouterStats.prefill`. */
export interface PrefixAwareStats {
  /**
   * `prefix-aware` with `saturation: "tokens"`: per target, this router's uncached prefill tokens
   * in flight, its calibrated prefill throughput and bound. Per process: `mergeStats` leaves it out.
   */
  prefill?: PrefillStats;
}
