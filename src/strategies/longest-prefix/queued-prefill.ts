/**
 * `longest-prefix`'s per-target state (a {@link Slot}: its block index, its queued prefill, its run
 * of prediction misses) and what a committed pick holds there until its first byte and release
 * ({@link QueuedPrefill}).
 */
import type { LeaseOutcome, ReleaseInfo } from "../../types.js";
import { type ClosedLoopEnv, type MissRun, TokenRatio, countVerdict, judgePrediction } from "../../closed-loop/closed-loop.js";
import type { Commitment } from "../strategy.js";
import type { TargetBlocks } from "./blocks.js";

/** What a pick's release asks of the strategy that holds the index. */
export interface IndexOwner {
  /** The closed loop's settings (`undefined`: off). */
  readonly closedLoop: ClosedLoopEnv["closedLoop"];
  /** The closed loop found the slot's index stale (see `LongestPrefix.forget`). */
  forget(slot: Slot, keys: Int32Array, n: number): void;
}

/** A target's index, the prefill queued on it and its run of prediction misses. */
export class Slot implements MissRun {
  misses = 0;
  /** The target's characters (or bytes) per token, learned from its responses. */
  readonly ratio: TokenRatio;
  /**
   * Uncached blocks of the requests routed here that have not yet produced their first byte: the
   * prefill work queued on the target, as far as this router knows (see {@link QueuedPrefill}).
   */
  pending = 0;
  constructor(
    readonly blocks: TargetBlocks,
    ratio: TokenRatio = new TokenRatio(),
  ) {
    this.ratio = ratio;
  }
}

/**
 * The prefill a pick put on its target's queue: the blocks of the request the target did not
 * hold. It counts in the target's backlog from the pick until the response's first byte or the
 * lease's release, whichever comes first. A request that fails before its first byte (refused, a
 * 4xx or 5xx answer) was never prefilled there: the blocks the pick added leave the target's
 * index again, so the next request with that prefix is not sent after a cache that does not
 * exist. Approximate like the index: blocks another request sent to the same target meanwhile go
 * too (that prefix is new again, and rendezvous hashing places it on the same first candidate).
 */
export class QueuedPrefill implements Commitment {
  private pendingWork: number;

  constructor(
    private readonly slot: Slot,
    private readonly owner: IndexOwner,
    private readonly q: QueuedWork,
  ) {
    this.pendingWork = q.work;
  }

  firstByte(): void {
    this.slot.pending -= this.pendingWork;
    this.pendingWork = 0;
  }

  release(outcome: LeaseOutcome, sawFirstByte: boolean, info?: ReleaseInfo): void {
    const failed = outcome === "connect-error" || outcome === "server-error" || outcome === "client-error";
    if (failed && !sawFirstByte && this.q.from < this.q.n) this.slot.blocks.forget(this.q.keys, this.q.from);
    this.firstByte();
    if (outcome === "success") this.slot.ratio.learn(this.q.units, info?.promptTokens);
    const loop = this.owner.closedLoop;
    if (loop !== undefined && countVerdict(this.slot, judgePrediction(this.q.predicted, outcome, info, loop.ratio), loop)) {
      this.owner.forget(this.slot, this.q.keys, this.q.n);
    }
  }
}

/** What a committed pick queued: its uncached blocks, and what its release needs (see {@link QueuedPrefill}). */
export interface QueuedWork {
  readonly work: number;
  /** The chain's full-block keys; the pick added `keys[from..n)` to the target's index. */
  readonly keys: Int32Array;
  readonly from: number;
  readonly n: number;
  readonly predicted: number | undefined;
  /** The whole request's routing input (characters or bytes), `undefined` when the chain stopped at its maximum. */
  readonly units: number | undefined;
}
