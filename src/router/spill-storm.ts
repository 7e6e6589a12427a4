/**
 * Spill storms: stretches where most picks miss their key's first choice because targets are at
 * `concurrencyThreshold` (a hot prefix, an undersized fleet, a threshold set below the replicas'
 * normal concurrency). Cache affinity is lost while it lasts, so the router logs when one starts
 * and when it ends.
 *
 * The spilled share is an exponentially weighted mean over about {@link STORM_WINDOW} picks; a
 * storm starts when it passes {@link STORM_START} (after a full window of picks) and ends when it
 * falls below {@link STORM_END} — the gap keeps a share hovering near one level from logging at
 * every pick. O(1) per pick.
 */

import type { LoadFigures } from "../load-view/view.js";
import type { TargetSpec } from "../types.js";
import type { Snapshot } from "./snapshot.js";
import type { TargetState } from "./target-state.js";

/** Picks the spilled share averages over (the weight of one pick is 1 / STORM_WINDOW). */
export const STORM_WINDOW = 64;
/** Spilled share at which a storm starts. */
export const STORM_START = 0.5;
/** Spilled share under which it ends. */
export const STORM_END = 0.25;

/**
 * @internal Why picks may miss their first choice right now, target by target (ids), read from the
 * router's state when a storm starts.
 */
export interface SpillCauses {
  /** In flight (this process's, or the shared load view's figure) at or above `concurrencyThreshold`. */
  readonly full: readonly string[];
  /** Below the threshold in the shared load view, but this process has opened its share of the headroom. */
  readonly quota: readonly string[];
  /** Ejected after failures in a row (passive ejection). */
  readonly ejected: readonly string[];
  /** Taken out by active health checks. */
  readonly failingHealthCheck: readonly string[];
}

/** @internal Watches one router's picks. */
export class SpillStormWatch {
  private share = 0;
  private retried = 0;
  private picks = 0;
  private raging = false;

  /** The current spilled share (fraction of 1). */
  get spilledShare(): number {
    return this.share;
  }

  /** The share of recent picks that spilled on a retry, which excluded the targets already tried (same window). */
  get retriedShare(): number {
    return this.retried;
  }

  /**
   * Counts one pick (`retry`: the request excluded targets it had tried); `"start"` or `"end"`
   * when this pick starts or ends a storm.
   */
  picked(spilled: boolean, retry = false): "start" | "end" | undefined {
    this.share += ((spilled ? 1 : 0) - this.share) / STORM_WINDOW;
    this.retried += ((spilled && retry ? 1 : 0) - this.retried) / STORM_WINDOW;
    if (this.picks < STORM_WINDOW) this.picks++;
    if (!this.raging && this.picks >= STORM_WINDOW && this.share > STORM_START) {
      this.raging = true;
      return "start";
    }
    if (this.raging && this.share < STORM_END) {
      this.raging = false;
      return "end";
    }
    return undefined;
  }
}

/**
 * @internal Why a pick may miss its first choice now, over the targets that take new requests
 * (weight > 0), as `DecisionView.isOpen` decides it; for the spill-storm log line: called rarely.
 */
export function spillCauses(snap: Snapshot<TargetSpec>, load: LoadFigures | undefined, now: number, threshold: number): SpillCauses {
  const full: string[] = [];
  const quota: string[] = [];
  const ejected: string[] = [];
  const failingHealthCheck: string[] = [];
  for (const i of snap.all) {
    const s = snap.states[i] as TargetState;
    if ((load === undefined ? s.inflight : load.inflight(i, s.inflight)) >= threshold) full.push(s.id);
    else if (load !== undefined && !load.open(i, s.inflight, threshold)) quota.push(s.id);
    if (s.isEjected(now)) ejected.push(s.id);
    if (s.failingHealthCheck) failingHealthCheck.push(s.id);
  }
  return { full, quota, ejected, failingHealthCheck };
}
