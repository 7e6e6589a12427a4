/**
 * Bounded loads, after Mirrokni, Thorup & Zadimoghaddam, "Consistent Hashing with Bounded Loads"
 * (SODA 2018): a target may take a request only while its recent picks are below c = `loadFactor`
 * times its weighted fair share,
 *
 *   g_t < c · (f_t + w_t / W),   g_t, f_t decayed by (1 − 1/loadWindow) per pick,
 *
 * where g_t counts picks of t and f_t the share t was due (w_t / W for each request it was
 * eligible for, W the eligible, non-ejected weight). Measured in picks rather than in-flight
 * requests: an in-flight cap ⌈c · mean⌉ forbids any second concurrent request at light load (when
 * it costs nothing) yet lets a target reach ⌈c · mean⌉ / mean ≫ c of the traffic at moderate load;
 * the pick bound keeps every busy target's share at most c times its weighted share over any
 * horizon. A target that is idle, or less busy than its share of the requests in flight, is not
 * bound: at light load a prefix stays where it is cached.
 *
 * {@link ShareTracker} keeps the counters (O(T) per committed pick); {@link boundedLoad} wraps any
 * strategy with the rule, and `longest-prefix` applies it in its own passes.
 */
import type { TargetSpec } from "../types.js";
import type { Commitment, PickContext, StrategyEnv, StrategyFactory, StrategyPick, StrategySpec } from "./strategy.js";
import { checkInteger, checkKnownKeys, checkNumber, describe, keysOf, orDefault } from "../internal/validate.js";
import { alignById } from "./shared/by-id.js";

/** Options of {@link boundedLoad}. */
export interface BoundedLoadOptions {
  /**
   * c = 1 + ε: a busy target takes a request only while its recent share of picks is below c times
   * its weighted fair share. From 1 to 100.
   * @default 1.25
   */
  loadFactor?: number;
  /**
   * Horizon of the recent share, in picks: counts decay by 1 − 1/`loadWindow` per pick. From 1
   * to 1,000,000.
   * @default 4096
   */
  loadWindow?: number;
}

/** Defaults of {@link BoundedLoadOptions}. */
export const DEFAULT_BOUNDED_LOAD: Readonly<Required<BoundedLoadOptions>> = Object.freeze({ loadFactor: 1.25, loadWindow: 4096 });

/** Per-target decayed pick counts and fair shares, kept by target id across target-set changes. */
export class ShareTracker {
  private readonly decay: number;
  private readonly byId = new Map<string, { recent: number; fair: number }>();
  private slots: { recent: number; fair: number }[] = [];

  constructor(loadWindow: number) {
    this.decay = 1 - 1 / loadWindow;
  }

  setTargets(targets: readonly { readonly id: string }[]): void {
    this.slots = alignById(this.byId, targets, () => ({ recent: 0, fair: 0 }));
  }

  /** Whether target i's recent picks are below `factor` × (its fair share owed + `share`). */
  below(i: number, factor: number, share: number): boolean {
    const slot = this.slots[i] as { recent: number; fair: number };
    return slot.recent < factor * (slot.fair + share);
  }

  /**
   * Whether target i's recent picks are below `factor` × what it is owed (its fair share + `share`)
   * by more than chance: the shortfall exceeds two standard deviations of a count of that size
   * (2√owed), so that a process's own few picks of an engine — one of many processes — do not make it
   * look starved.
   */
  clearlyBelow(i: number, factor: number, share: number): boolean {
    const slot = this.slots[i] as { recent: number; fair: number };
    const owed = slot.fair + share;
    return this.below(i, factor, share) && owed - slot.recent > 2 * Math.sqrt(owed);
  }

  /**
   * The bound for one decision: `within(i, factor)` is true for a target that may take the
   * request under factor c (always for c = ∞, or for c > 1 when the target is idle or less busy
   * than its weighted share of the requests in flight).
   */
  bound(ctx: PickContext<{ id: string }>, exempt?: (i: number) => boolean): LoadBound {
    let weight = 0;
    let inflight = 0;
    for (const i of ctx.candidates) {
      if (ctx.isEjected(i)) continue;
      weight += ctx.weights[i] as number;
      inflight += ctx.inflight(i);
    }
    return new LoadBound(this, ctx, { weight, inflight, exempt });
  }

  /** Advances the counters by one pick of `index`: every count decays, eligible targets are owed their share. */
  count(ctx: PickContext<{ id: string }>, index: number, weight: number): void {
    const decay = this.decay;
    for (const slot of this.slots) {
      slot.recent *= decay;
      slot.fair *= decay;
    }
    if (weight > 0) {
      for (const i of ctx.candidates) {
        if (!ctx.isEjected(i)) (this.slots[i] as { fair: number }).fair += (ctx.weights[i] as number) / weight;
      }
    }
    (this.slots[index] as { recent: number }).recent += 1;
  }
}

/** The bounded-load rule at one decision (see the file header). */
export class LoadBound {
  /** Eligible, non-ejected weight W: the fair-share denominator. */
  readonly weight: number;
  /** Requests in flight on the eligible, non-ejected targets. */
  readonly inflight: number;
  /**
   * Targets the bound (a factor ≥ 1) does not bind (`precise-prefix`: engines whose cache is
   * private to a running request). A factor below 1 asks whether a target is under its share (an
   * instance just added): that still counts their shares.
   */
  private readonly exempt: ((i: number) => boolean) | undefined;

  constructor(
    private readonly shares: ShareTracker,
    private readonly ctx: PickContext<{ id: string }>,
    d: { readonly weight: number; readonly inflight: number; readonly exempt: ((i: number) => boolean) | undefined },
  ) {
    this.weight = d.weight;
    this.inflight = d.inflight;
    this.exempt = d.exempt;
  }

  /** Whether target i is within `factor` of its share (busy targets only, for factor > 1). */
  within(i: number, factor: number): boolean {
    if (this.weight === 0 || factor === Number.POSITIVE_INFINITY || (factor >= 1 && this.exempt?.(i) === true)) return true;
    const w = this.ctx.weights[i] as number;
    const busy = this.ctx.inflight(i);
    if (factor > 1 && (busy === 0 || busy * this.weight < this.inflight * w)) return true;
    return this.shares.below(i, factor, w / this.weight);
  }

  /** Whether target i is below `factor` × its share by more than chance (see {@link ShareTracker.clearlyBelow}). */
  clearlyBelow(i: number, factor: number): boolean {
    if (this.weight === 0) return false;
    return this.shares.clearlyBelow(i, factor, (this.ctx.weights[i] as number) / this.weight);
  }

  /** Whether target i is strictly below `factor` × its share, busy or not. */
  strictlyBelow(i: number, factor: number): boolean {
    if (this.weight === 0 || factor === Number.POSITIVE_INFINITY || (factor >= 1 && this.exempt?.(i) === true)) return true;
    return this.shares.below(i, factor, (this.ctx.weights[i] as number) / this.weight);
  }
}

/** @internal Every key of {@link BoundedLoadOptions}. */
export const BOUNDED_LOAD_OPTION_KEYS = keysOf<BoundedLoadOptions>()(["loadFactor", "loadWindow"]);

/** @internal Validates {@link BoundedLoadOptions} under the option name `name`. */
export function resolveBoundedLoad(name: string, options: unknown): Readonly<Required<BoundedLoadOptions>> {
  if (options === undefined) return DEFAULT_BOUNDED_LOAD;
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new TypeError(`Expected \`${name}\` to be an object, got ${describe(options)}`);
  }
  const o = options as BoundedLoadOptions;
  const loadFactor = orDefault(o.loadFactor, DEFAULT_BOUNDED_LOAD.loadFactor);
  return {
    loadFactor: loadFactor === Number.POSITIVE_INFINITY ? loadFactor : checkNumber(`${name}.loadFactor`, loadFactor, 1, 100),
    loadWindow: checkInteger(`${name}.loadWindow`, orDefault(o.loadWindow, DEFAULT_BOUNDED_LOAD.loadWindow), 1, 1_000_000),
  };
}

/** A context whose `isOpen` also applies the bound. */
class BoundedContext<T extends TargetSpec> implements PickContext<T> {
  constructor(
    private readonly inner: PickContext<T>,
    private readonly bound: LoadBound,
    private readonly factor: number,
  ) {}
  get targets() { return this.inner.targets; }
  get weights() { return this.inner.weights; }
  get candidates() { return this.inner.candidates; }
  get now() { return this.inner.now; }
  get concurrencyThreshold() { return this.inner.concurrencyThreshold; }
  get random() { return this.inner.random; }
  get sharedLoad() { return this.inner.sharedLoad; }
  inflight(i: number) { return this.inner.inflight(i); }
  othersQueuedWork(i: number) { return this.inner.othersQueuedWork?.(i) ?? 0; }
  othersQueuedTokens(i: number) { return this.inner.othersQueuedTokens?.(i) ?? Number.NaN; }
  isEjected(i: number) { return this.inner.isEjected(i); }
  isExcluded(i: number) { return this.inner.isExcluded(i); }
  isOpen(i: number) { return this.inner.isOpen(i) && this.bound.within(i, this.factor); }
  score(i: number, hi: number, lo: number) { return this.inner.score(i, hi, lo); }
}

/**
 * Wraps a strategy with the bounded-load rule: the wrapped strategy picks among targets that are
 * open and within `loadFactor` of their share; when it finds none (its pick is a `fallback`), it
 * picks again without the bound. Every committed pick advances the shares.
 *
 * @example
 * const router = await createRouter({ targets, strategy: boundedLoad("prefix-aware", { loadFactor: 1.25 }) });
 */
export function boundedLoad<T extends TargetSpec = TargetSpec>(
  strategy: StrategySpec<T>,
  options?: BoundedLoadOptions,
): StrategyFactory<T> {
  if (options !== null && typeof options === "object") checkKnownKeys("boundedLoad options", options, BOUNDED_LOAD_OPTION_KEYS);
  const config = resolveBoundedLoad("boundedLoad options", options);
  return (env: StrategyEnv) => {
    const inner = env.create(strategy);
    const shares = new ShareTracker(config.loadWindow);
    return {
      name: inner.name,
      read: inner.read === undefined ? undefined : (request) => inner.read?.(request),
      pick(ctx: PickContext<T>, input: unknown): StrategyPick {
        const bounded = inner.pick(new BoundedContext(ctx, shares.bound(ctx), config.loadFactor), input);
        return bounded.kind === "fallback" ? inner.pick(ctx, input) : bounded;
      },
      rank: inner.rank === undefined ? undefined : (ctx, input) => inner.rank!(ctx, input),
      commit(ctx: PickContext<T>, pick: StrategyPick, input: unknown): Commitment | undefined {
        shares.count(ctx, pick.index, shares.bound(ctx).weight);
        return inner.commit?.(ctx, pick, input);
      },
      setTargets(targets: readonly T[]): void {
        shares.setTargets(targets);
        inner.setTargets?.(targets);
      },
      stats: inner.stats === undefined ? undefined : () => inner.stats!(),
    };
  };
}
