/**
 * Load views: where a router's in-flight figure per target comes from. `local` (the default)
 * counts this router's own leases; a shared view adds what other routers have in flight there,
 * from a fleet-wide source refreshed in the background (`engine`: the engines' `/metrics`;
 * `redis`: every router's leases counted in Redis). A decision never waits on that source: it
 * reads the last figures.
 *
 *   inflight(t) = own(t) + others(t),   others(t) = max(0, shared(t) − ownIncluded(t))
 *
 * where shared(t) is the source's figure at its last refresh and ownIncluded(t) the part of it
 * that was this router's own (its leases at the scrape, or the counts it had sent to Redis when
 * it read the total): this router's requests since the refresh count at once, other routers'
 * from the next refresh on. When the source is down or stale, others(t) = 0: the local view.
 *
 * Every router reads the same figure, so near the threshold they would all fill the same
 * headroom at once (each sees room for h more and sends h). A view that knows how many router
 * processes share it ({@link LoadView.peers}, P) splits the headroom: until the next refresh a
 * router opens at most q new leases on a target, q = ⌊h/P⌋, plus one for h mod P of the P
 * routers (by their position {@link LoadView.peerIndex}, rotated per target), so the P routers
 * add h between them, not P·h. Without a position, the extra one goes with probability
 * h/P − ⌊h/P⌋ (the router's random source): h in expectation.
 *
 * The router reads the figures for every target only when {@link LoadView.version} has moved
 * (once per refresh), into arrays aligned with its snapshot: a decision costs no more than with
 * the local view.
 */
import type { Logger } from "../logger.js";
import type { Clock, TargetSpec } from "../types.js";

/** What `stats().loadView` reports. */
export interface LoadViewStats {
  /** `"local"`, `"engine"`, `"redis"` or a custom view's name. */
  source: string;
  /**
   * True while the shared figures are fresh (every target's, for `engine`). When false, the
   * router counts only its own requests for the targets without a fresh figure.
   */
  healthy: boolean;
  /** Router clock time of the last successful refresh, ms; `null` before the first. */
  lastRefreshAtMs: number | null;
  /** Failed refreshes (and, for `redis`, failed writes) since the router started. */
  errors: number;
  /** Successful refreshes since the router started. */
  refreshes: number;
  /** The last error's message, `null` when there was none. */
  lastError: string | null;
  /** Per target: other routers' requests in flight as last seen (`null`: unknown). */
  others: Record<string, number | null>;
}


/** What a built-in view gets from its router. */
export interface LoadViewHost {
  readonly clock: Clock;
  readonly logger: Logger;
}

/**
 * A source of other routers' load, as the router consumes it. The built-in views implement it;
 * pass your own object as `loadView` to feed figures from elsewhere (the benchmark's virtual
 * views do). Every method is synchronous and must not throw.
 */
export interface LoadView<T extends TargetSpec = TargetSpec> {
  /** Reported as `stats().loadView.source`. */
  readonly source: string;
  /** Changes whenever {@link LoadView.others} or {@link LoadView.shared} may answer differently. */
  readonly version: number;
  /** Whether the figures are in use: some are fresh. False: the router uses its local view. */
  shared(): boolean;
  /** Requests in flight on target `id` from other routers, as last seen; `NaN` when unknown. */
  others(id: string): number;
  /** This router's leases on `id` counted in that figure (its own part of the shared total). Default 0. */
  ownAtRefresh?(id: string): number;
  /** Queued work (`StrategyPick.work`) of other routers' picks on `id` not yet at their first byte. Default 0. */
  othersWork?(id: string): number;
  /** This router's queued work on `id` changed by `delta` (a pick queued it; its first byte or release ended it). */
  addWork?(id: string, delta: number): void;
  /**
   * Uncached prefill tokens queued on `id` that are not this router's, as last seen (the `engine`
   * view: the engine's waiting-uncached-tokens gauge minus this router's
   * `StrategyPick.workTokens` then); `NaN` when unknown. Default: unknown.
   */
  othersWorkTokens?(id: string): number;
  /** This router's queued tokens on `id` changed by `delta` (`StrategyPick.workTokens`, from the pick to its first byte or release). */
  addWorkTokens?(id: string, delta: number): void;
  /** Router processes sharing the figures, this one included, ≥ 1 (they split a target's headroom). Default 1. */
  peers?(): number;
  /** This router's position among them, 0 to peers() − 1. Default: none (the remainder goes at random). */
  peerIndex?(): number;
  /**
   * Resolves once the view has its first figures, or has failed to get them (it never rejects,
   * and resolves within its own timeout): `createRouter` waits for it, so that the first
   * decisions already see other routers' load. Default: no wait.
   */
  ready?(): Promise<void>;
  /** The router's target set changed (also called once at start). */
  setTargets(targets: readonly T[]): void;
  /** This router opened a lease on `id`. */
  acquire(id: string): void;
  /** This router released a lease on `id` (also for a target no longer in the set). */
  release(id: string): void;
  stats(): LoadViewStats;
  /** Stops the background refresh and releases its connections. Idempotent. */
  close(): Promise<void>;
}

/** This router's own leases per target id. */
export class OwnCounts {
  private readonly counts = new Map<string, number>();

  get(id: string): number {
    return this.counts.get(id) ?? 0;
  }

  add(id: string, delta: number): number {
    const n = (this.counts.get(id) ?? 0) + delta;
    if (n === 0) this.counts.delete(id);
    else this.counts.set(id, n);
    return n;
  }

  /** This router's open leases over every target (fields `n:<target>` when the counts are namespaced). */
  leases(): number {
    let n = 0;
    for (const [id, c] of this.counts) if (!id.startsWith("w:")) n += c;
    return n;
  }

  /** A copy, for "what this router had when the figure was taken". */
  copy(): Map<string, number> {
    return new Map(this.counts);
  }

  entries(): IterableIterator<[string, number]> {
    return this.counts.entries();
  }
}

/**
 * @internal The router's side of a view: its figures aligned with the snapshot's targets,
 * reread only when the view's version moves.
 */
export class LoadReader {
  private ids: readonly string[] = [];
  private version = Number.NaN;
  private figures = new LoadFigures(0);
  private inUse = false;

  constructor(
    readonly view: LoadView<never>,
    private readonly threshold: number,
    private readonly random: () => number,
  ) {}

  /** The snapshot changed: figures are reread at the next decision. */
  align(ids: readonly string[]): void {
    this.ids = ids;
    this.figures = new LoadFigures(ids.length);
    this.version = Number.NaN;
  }

  /** The figures per snapshot index, or `undefined` when the local view applies. */
  current(): LoadFigures | undefined {
    const view = this.view;
    if (view.version !== this.version) {
      this.version = view.version;
      this.inUse = view.shared();
      if (this.inUse) {
        const f = this.figures;
        const peers = Math.max(1, view.peers?.() ?? 1);
        const index = view.peerIndex?.();
        for (let i = 0; i < this.ids.length; i++) {
          const id = this.ids[i] as string;
          const n = view.others(id);
          const known = n >= 0;
          f.others[i] = known && n > 0 ? n : 0;
          const w = known ? (view.othersWork?.(id) ?? 0) : 0;
          f.work[i] = w > 0 ? w : 0;
          const tokens = known ? (view.othersWorkTokens?.(id) ?? Number.NaN) : Number.NaN;
          f.workTokens[i] = tokens >= 0 && tokens < Number.POSITIVE_INFINITY ? tokens : Number.NaN;
          f.ownAtRefresh[i] = known ? (view.ownAtRefresh?.(id) ?? 0) : 0;
          if (!known || peers === 1) f.quota[i] = Number.POSITIVE_INFINITY;
          else {
            const headroom = Math.max(0, this.threshold - (f.others[i] as number) - (f.ownAtRefresh[i] as number));
            const extra = index === undefined ? this.random() * peers < headroom % peers : (index + spread(id)) % peers < headroom % peers;
            f.quota[i] = Math.floor(headroom / peers) + (extra ? 1 : 0);
          }
        }
      }
    }
    return this.inUse ? this.figures : undefined;
  }
}

/** A small deterministic number from a target id, so each target's remainder starts at another router. */
function spread(id: string): number {
  let h = 0;
  for (let k = 0; k < id.length; k++) h = (Math.imul(h, 31) + id.charCodeAt(k)) >>> 0;
  return h % 65_521;
}

/** @internal A view's figures aligned with a snapshot: what a decision reads. */
export class LoadFigures {
  /** Other routers' in-flight per snapshot index (0 where unknown). */
  readonly others: Float64Array;
  /** This router's leases counted in the shared figure. */
  readonly ownAtRefresh: Float64Array;
  /** New leases this router may open per target until the next refresh (its share of the headroom). */
  readonly quota: Float64Array;
  /** Other routers' queued work per target. */
  readonly work: Float64Array;
  /** Queued uncached prefill tokens not this router's, per target (NaN where the view has no such figure). */
  readonly workTokens: Float64Array;

  constructor(n: number) {
    this.others = new Float64Array(n);
    this.work = new Float64Array(n);
    this.workTokens = new Float64Array(n).fill(Number.NaN);
    this.ownAtRefresh = new Float64Array(n);
    this.quota = new Float64Array(n).fill(Number.POSITIVE_INFINITY);
  }

  /** In flight on target i: `own` (this router's, now) plus the others' as last seen. */
  inflight(i: number, own: number): number {
    return own + (this.others[i] as number);
  }

  /** Below the threshold, and this router's new leases since the refresh within its quota. */
  open(i: number, own: number, threshold: number): boolean {
    return own + (this.others[i] as number) < threshold && own - (this.ownAtRefresh[i] as number) < (this.quota[i] as number);
  }
}
