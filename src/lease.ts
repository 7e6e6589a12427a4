/**
 * A lease: a pick held until released. While held it counts as in flight on its target.
 * `release()` runs exactly once, whatever ends the request (success, error, abort, end of
 * stream), and does nothing when called again (grpc-js `onCallStarted`/`onCallEnded`).
 */
import { checkRelease } from "./call-checks.js";
import type { InputKind } from "./raw-prefix.js";
import type { Commitment } from "./strategies/strategy.js";
import type { TargetState } from "./target-state.js";
import type { Lease, LeaseOutcome, PickKind, ReleaseInfo, TargetSpec } from "./types.js";

/** What a lease reports back to its router. */
export interface LeaseOwner {
  now(): number;
  finish(lease: RouterLease<TargetSpec>, state: TargetState, outcome: LeaseOutcome, info: ReleaseInfo | undefined): void;
}

export class RouterLease<T extends TargetSpec> implements Lease<T> {
  private done = false;
  private sawFirstByte = false;

  constructor(
    private readonly owner: LeaseOwner,
    readonly target: T,
    private readonly state: TargetState,
    readonly kind: PickKind,
    readonly rank: number,
    readonly key: bigint | undefined,
    readonly attempt: number,
    readonly startMs: number,
    /** The strategy's hooks for this pick (`longest-prefix`: the prefill it queued). */
    private readonly commitment: Commitment | undefined,
    readonly input: InputKind = "canonical",
  ) {}

  get released(): boolean {
    return this.done;
  }

  firstByte(): void {
    if (this.sawFirstByte || this.done) return;
    this.sawFirstByte = true;
    this.commitment?.firstByte?.();
    this.state.recordTtft(this.owner.now() - this.startMs);
  }

  release(outcome: LeaseOutcome = "success", info?: ReleaseInfo): void {
    checkRelease(outcome, info);
    if (this.done) return;
    this.done = true;
    this.commitment?.release?.(outcome, this.sawFirstByte);
    this.owner.finish(this as RouterLease<TargetSpec>, this.state, outcome, info);
  }
}
