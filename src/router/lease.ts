/**
 * A lease: a pick held until released. While held it counts as in flight on its target.
 * `release()` runs exactly once, whatever ends the request (success, error, abort, end of
 * stream), and does nothing when called again (grpc-js `onCallStarted`/`onCallEnded`).
 */
import { checkRelease } from "./call-checks.js";
import { hexKey } from "../internal/hex.js";
import type { Commitment } from "../strategies/strategy.js";
import type { TargetState } from "./target-state.js";
import type { ShadowTicket } from "./shadow.js";
import type { DecisionReason, InputKind, Lease, LeaseOutcome, LeaseRecord, PickKind, ReleaseInfo, TargetSpec } from "../types.js";

/** What a lease reports back to its router. */
export interface LeaseOwner {
  now(): number;
  finish(lease: RouterLease<TargetSpec>, state: TargetState, outcome: LeaseOutcome, info: ReleaseInfo | undefined): void;
  /** The shadow strategy's pick for the same request reached its first byte too. */
  shadowFirstByte(ticket: ShadowTicket): void;
}

/** What a lease is opened with: the pick as taken (its public fields, and the strategy's hooks). */
export type LeaseTaken<T extends TargetSpec> = Pick<
  RouterLease<T>,
  "target" | "kind" | "rank" | "model" | "rawKey" | "attempt" | "startMs" | "predictedCachedTokens" | "input" | "reason"
> & { readonly commitment: Commitment | undefined };

export class RouterLease<T extends TargetSpec> implements Lease<T> {
  private done = false;
  private firstByteSeen = false;
  /** Time to the first byte, ms; `null` before it. */
  ttftMs: number | null = null;
  /** The shadow strategy's pick for the same request (`RouterOptions.shadow`). */
  shadowTicket: ShadowTicket | undefined = undefined;

  // Declared, not defined: the constructor assigns each once (no define-then-assign per lease).
  declare readonly target: T;
  declare readonly kind: PickKind;
  declare readonly rank: number;
  /** The request's model, for telemetry. */
  declare readonly model: string | undefined;
  /** The routing key as the strategy gave it. */
  declare readonly rawKey: bigint | undefined;
  declare readonly attempt: number;
  declare readonly startMs: number;
  declare readonly predictedCachedTokens: number | undefined;
  /** The strategy's hooks for this pick (the prefill it queued, say). */
  declare private readonly commitment: Commitment | undefined;
  declare readonly input: InputKind;
  declare readonly reason: DecisionReason | undefined;

  constructor(
    private readonly owner: LeaseOwner,
    private readonly state: TargetState,
    taken: LeaseTaken<T>,
  ) {
    this.target = taken.target;
    this.kind = taken.kind;
    this.rank = taken.rank;
    this.model = taken.model;
    this.rawKey = taken.rawKey;
    this.attempt = taken.attempt;
    this.startMs = taken.startMs;
    this.predictedCachedTokens = taken.predictedCachedTokens;
    this.commitment = taken.commitment;
    this.input = taken.input;
    this.reason = taken.reason;
  }

  /** Whether the answer's first byte arrived. */
  get sawFirstByte(): boolean {
    return this.firstByteSeen;
  }

  /** Formatted when read: most leases are never asked for their key. */
  get key(): string | undefined {
    return hexKey(this.rawKey);
  }

  get released(): boolean {
    return this.done;
  }

  toJSON(): LeaseRecord<T> {
    const { target, kind, rank, key, attempt, predictedCachedTokens, input, released } = this;
    return { target, kind, rank, key, attempt, predictedCachedTokens, input, released };
  }

  firstByte(): void {
    if (this.firstByteSeen || this.done) return;
    this.firstByteSeen = true;
    this.commitment?.firstByte?.();
    if (this.shadowTicket !== undefined) this.owner.shadowFirstByte(this.shadowTicket);
    this.ttftMs = this.owner.now() - this.startMs;
    this.state.recordTtft(this.ttftMs);
  }

  release(outcome: LeaseOutcome = "success", info?: ReleaseInfo): void {
    checkRelease(outcome, info);
    if (this.done) return;
    this.done = true;
    this.commitment?.release?.(outcome, this.firstByteSeen, info);
    this.owner.finish(this as RouterLease<TargetSpec>, this.state, outcome, info);
  }
}
