/**
 * The shadow strategy (`RouterOptions.shadow`): a second strategy, with state of its own, that
 * picks for every request beside the live one and is never acted on — so an operator sees on live
 * traffic how often it would choose otherwise and what hit rate it predicts, before switching.
 *
 * Its state follows either its own picks (`"own"`, the default: as if it had routed — its index,
 * recent keys, shares and its own in-flight counts move with where it would have sent each
 * request, so its predictions are what a switch would yield) or the live placement (`"live"`:
 * what it would predict for the traffic as it is really placed; its queued-prefill figures use
 * its own pick's uncached blocks, an approximation).
 *
 * It never changes a pick: it runs after the live pick is made, on a view that draws from its own
 * seeded random source (a strategy that draws — two choices, ties — would otherwise shift the live
 * sequence), and it is committed only once the live lease is taken. It sees frozen copies of the
 * targets and copies of the view's arrays, never the live ones. Whatever it throws — its pick, its
 * commitment, a getter on either — is counted (`stats().shadow.errors`), never thrown.
 */
import { alignById } from "../strategies/shared/by-id.js";
import { type InputKind, needsRawPrefix, rawPrefixBody } from "../routing/raw-prefix.js";
import type { RoutingMode } from "../routing/routing-input.js";
import type { Commitment, PickContext, RoutingStrategy, StrategyPick, StrategyRequest } from "../strategies/strategy.js";
import type { LeaseOutcome, ReleaseInfo, TargetSpec } from "../types.js";

/**
 * What `stats().shadow` reports: another strategy's picks computed beside the live ones and
 * never acted on (docs/observability.md#shadow). Hit rates are over the responses that
 * reported token usage; a prediction counts at most the response's prompt tokens.
 */
export interface ShadowStats {
  /** The shadow strategy's name. */
  strategy: string;
  /** Whether the shadow's state follows its own picks or the live placement. */
  placement: "own" | "live";
  /** Requests the shadow picked for (first attempts routed by the strategy). */
  decisions: number;
  /** Of those, the ones where it picked the live target. */
  agreements: number;
  /** agreements / decisions; `null` before any. */
  agreementRate: number | null;
  /** Responses that reported token usage. */
  responses: number;
  promptTokens: number;
  /** Cached tokens the servers reported for those responses. */
  cachedTokens: number;
  livePredictedCachedTokens: number;
  shadowPredictedCachedTokens: number;
  /** cachedTokens / promptTokens: what the live strategy measured. */
  liveHitRate: number | null;
  /** livePredictedCachedTokens / promptTokens. */
  livePredictedHitRate: number | null;
  /** shadowPredictedCachedTokens / promptTokens: what switching would be expected to yield. */
  shadowPredictedHitRate: number | null;
  /** shadowPredictedHitRate − livePredictedHitRate. */
  predictedHitRateDifference: number | null;
  /** Exceptions the shadow strategy threw (counted, never thrown). */
  errors: number;
  lastError: string | null;
}

export type ShadowPlacement = ShadowStats["placement"];

/** The shadow's own count of requests in flight on one target (`"own"` placement). */
class OwnSlot {
  inflight = 0;
}

/** A pick the shadow made for one request, until the live lease ends. */
export interface ShadowTicket {
  readonly livePredicted: number;
  readonly shadowPredicted: number;
  /** `"own"` placement: the target the shadow would have used. */
  readonly slot: OwnSlot | undefined;
  readonly commitment: Commitment | undefined;
}

/** A request as the shadow reads it: the live request, or its raw-prefix stand-in. */
interface ShadowRequest extends StrategyRequest {
  readonly inputKind: InputKind;
}

/** The live view with the shadow's random source and, under `"own"` placement, its own in-flight counts. */
class ShadowView<T extends TargetSpec> implements PickContext<T> {
  targets!: readonly T[];
  weights!: Float64Array;
  candidates!: Int32Array;
  now = 0;
  concurrencyThreshold = 0;
  sharedLoad = false;
  live!: PickContext<T>;

  constructor(
    readonly random: () => number,
    private readonly own: () => readonly OwnSlot[] | undefined,
    private readonly frozen: (targets: readonly T[]) => readonly T[],
  ) {}

  /**
   * Aims the view at one decision's live view. The shadow gets frozen copies of the targets and
   * fresh copies of the arrays, never the live ones: a shadow that writes into them changes
   * nothing live, and nothing the next decision sees.
   */
  reset(live: PickContext<T>): this {
    this.live = live;
    this.targets = this.frozen(live.targets);
    this.weights = live.weights.slice();
    this.candidates = live.candidates.slice();
    this.now = live.now;
    this.concurrencyThreshold = live.concurrencyThreshold;
    this.sharedLoad = this.own() === undefined && live.sharedLoad === true;
    return this;
  }

  inflight(i: number): number {
    const own = this.own();
    return own === undefined ? this.live.inflight(i) : (own[i] as OwnSlot).inflight;
  }

  othersQueuedWork(i: number): number {
    return this.own() === undefined ? (this.live.othersQueuedWork?.(i) ?? 0) : 0;
  }

  isEjected(i: number): boolean {
    return this.live.isEjected(i);
  }

  isExcluded(i: number): boolean {
    return this.live.isExcluded(i);
  }

  isOpen(i: number): boolean {
    const own = this.own();
    if (own === undefined) return this.live.isOpen(i);
    return (own[i] as OwnSlot).inflight < this.concurrencyThreshold && !this.isEjected(i) && !this.isExcluded(i);
  }

  score(i: number, keyHi: number, keyLo: number): number {
    return this.live.score(i, keyHi, keyLo);
  }
}

/** A seeded random source in [0, 1) (splitmix32), so that the shadow never draws from the live one. */
function seededRandom(seed: bigint): () => number {
  let state = Number(BigInt.asUintN(32, seed ^ (seed >> 32n) ^ 0x5ad0_3a17n)) | 0;
  return () => {
    state = (state + 0x9e3779b9) | 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return ((z ^ (z >>> 16)) >>> 0) / 4294967296;
  };
}

/** @internal One router's shadow strategy and its counters. */
export class Shadow<T extends TargetSpec> {
  private decisions = 0;
  private agreements = 0;
  private responses = 0;
  private promptTokens = 0;
  private cachedTokens = 0;
  private livePredicted = 0;
  private shadowPredicted = 0;
  private errors = 0;
  private lastError: string | null = null;
  private slots: OwnSlot[] = [];
  private readonly byId = new Map<string, OwnSlot>();
  private readonly view: ShadowView<T>;
  private frozenOf: readonly T[] | undefined;
  private frozenCopy: readonly T[] = [];

  constructor(
    private readonly impl: RoutingStrategy<T>,
    readonly placement: ShadowPlacement,
    seed: bigint,
    private readonly mode: RoutingMode,
    /** Routing input a raw-prefix stand-in covers. */
    private readonly rawUnits: number,
  ) {
    const own = placement === "own" ? () => this.slots : () => undefined;
    this.view = new ShadowView<T>(seededRandom(seed), own, (targets) => this.frozen(targets));
  }

  setTargets(targets: readonly T[]): void {
    this.slots = alignById(this.byId, targets, () => new OwnSlot());
    this.guard(() => this.impl.setTargets?.(this.frozen(targets)));
  }

  /** Frozen shallow copies of the live target list and its targets, made once per list. */
  private frozen(targets: readonly T[]): readonly T[] {
    if (targets !== this.frozenOf) {
      this.frozenOf = targets;
      this.frozenCopy = Object.freeze(targets.map((t) => Object.freeze({ ...t })));
    }
    return this.frozenCopy;
  }

  /**
   * The shadow's pick for `request` in the live decision's `view` (pure: nothing is recorded), or
   * `undefined` when the shadow failed.
   */
  pick(view: PickContext<T>, request: ShadowRequest): { pick: StrategyPick; input: unknown } | undefined {
    return this.guard(() => {
      const input = this.read(request);
      return { pick: this.impl.pick(this.view.reset(view), input), input };
    });
  }

  /** Counts the shadow's pick beside the live one, now taken, and records it as its placement says. */
  commit(view: PickContext<T>, shadow: { pick: StrategyPick; input: unknown }, live: StrategyPick): ShadowTicket | undefined {
    return this.guard(() => {
      const { pick, input } = shadow;
      const own = this.placement === "own";
      const placed = own ? pick : { ...pick, index: live.index, kind: live.kind, rank: live.rank };
      const commitment = this.impl.commit?.(this.view.reset(view), placed, input);
      this.decisions++;
      if (pick.index === live.index) this.agreements++;
      const slot = own ? this.slots[pick.index] : undefined;
      if (slot !== undefined) slot.inflight++;
      return { livePredicted: live.predictedCachedTokens ?? 0, shadowPredicted: pick.predictedCachedTokens ?? 0, slot, commitment };
    });
  }

  /** Even reading the commitment's hooks runs guarded: a getter that throws is the shadow's error, never the caller's. */
  firstByte(ticket: ShadowTicket): void {
    if (ticket.commitment !== undefined) this.guard(() => ticket.commitment?.firstByte?.());
  }

  /** The live lease ended: the shadow's request ends too, and the response's usage scores both predictions. */
  released(ticket: ShadowTicket, outcome: LeaseOutcome, sawFirstByte: boolean, info: ReleaseInfo | undefined): void {
    if (ticket.slot !== undefined) ticket.slot.inflight--;
    // The shadow's hooks get the prompt's size only (the fleet's tokenizer: characters per token),
    // not its cached tokens: those came from the live target.
    const own = typeof info?.promptTokens === "number" ? { promptTokens: info.promptTokens } : undefined;
    if (ticket.commitment !== undefined) this.guard(() => ticket.commitment?.release?.(outcome, sawFirstByte, own));
    const prompt = info?.promptTokens;
    const cached = info?.cachedTokens;
    if (typeof prompt !== "number" || typeof cached !== "number") return;
    this.responses++;
    this.promptTokens += prompt;
    this.cachedTokens += cached;
    this.livePredicted += Math.min(ticket.livePredicted, prompt);
    this.shadowPredicted += Math.min(ticket.shadowPredicted, prompt);
  }

  stats(): ShadowStats {
    return deriveShadow({
      strategy: this.impl.name,
      placement: this.placement,
      decisions: this.decisions,
      agreements: this.agreements,
      agreementRate: null,
      responses: this.responses,
      promptTokens: this.promptTokens,
      cachedTokens: this.cachedTokens,
      livePredictedCachedTokens: this.livePredicted,
      shadowPredictedCachedTokens: this.shadowPredicted,
      liveHitRate: null,
      livePredictedHitRate: null,
      shadowPredictedHitRate: null,
      predictedHitRateDifference: null,
      errors: this.errors,
      lastError: this.lastError,
    });
  }

  /** The shadow's routing input: the request's, or its raw prefix's when the body cannot be canonicalized that far. */
  private read(request: ShadowRequest): unknown {
    const read = this.impl.read;
    if (read === undefined) return undefined;
    try {
      return read.call(this.impl, request);
    } catch (error) {
      if (request.inputKind === "raw" || !needsRawPrefix(error)) throw error;
      return read.call(this.impl, { body: rawPrefixBody(this.mode, request.body, this.rawUnits), tenant: request.tenant, model: request.model });
    }
  }

  private guard<R>(run: () => R): R | undefined {
    try {
      return run();
    } catch (error) {
      this.errors++;
      this.lastError = error instanceof Error ? error.message : String(error);
      return undefined;
    }
  }
}

/** Fills the rates of shadow counters. */
function deriveShadow(s: ShadowStats): ShadowStats {
  const p = s.promptTokens;
  s.agreementRate = s.decisions === 0 ? null : s.agreements / s.decisions;
  s.liveHitRate = p === 0 ? null : s.cachedTokens / p;
  s.livePredictedHitRate = p === 0 ? null : s.livePredictedCachedTokens / p;
  s.shadowPredictedHitRate = p === 0 ? null : s.shadowPredictedCachedTokens / p;
  s.predictedHitRateDifference = p === 0 ? null : (s.shadowPredictedCachedTokens - s.livePredictedCachedTokens) / p;
  return s;
}

/** Counters that add up over processes. */
const SHADOW_SUMMED = [
  "decisions",
  "agreements",
  "responses",
  "promptTokens",
  "cachedTokens",
  "livePredictedCachedTokens",
  "shadowPredictedCachedTokens",
  "errors",
] as const satisfies readonly (keyof ShadowStats)[];

/** @internal Several processes' shadow figures as one router's (`mergeStats`); `undefined` when none has them. */
export function mergeShadow(parts: readonly (ShadowStats | undefined)[]): ShadowStats | undefined {
  const list = parts.filter((p): p is ShadowStats => p !== undefined && p !== null && typeof p === "object");
  const first = list[0];
  if (first === undefined) return undefined;
  const out: ShadowStats = { ...first, lastError: list.reduce<string | null>((e, p) => p.lastError ?? e, null) };
  for (const k of SHADOW_SUMMED) out[k] = list.reduce((sum, p) => sum + (p[k] ?? 0), 0);
  return deriveShadow(out);
}
