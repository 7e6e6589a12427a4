/**
 * Shared load views in virtual time, for `prefix-router bench --load-view local,engine,redis`:
 * the same arithmetic as the library's views (load-view/view.ts — other routers' load is the
 * shared figure minus this router's part of it, plus this router's own leases since), fed by
 * a model of their source instead of the network.
 *
 * - `engine`: every `enginePollMs`, at a phase of its own, each router process reads every
 *   instance's running + waiting requests and its waiting uncached prompt tokens (the engine's
 *   true figures, as `/metrics` serves them: SGLang's `num_waiting_uncached_tokens`, vLLM's
 *   proposed `vllm:approximate_uncached_tokens_waiting`).
 * - `engine-requests`: the same, for engines that export request counts only (vLLM without the
 *   proposed gauges): no token figure.
 * - `redis`: one Redis holding every process's lease counts and queued work (`longest-prefix`'s
 *   uncached blocks until the first byte). A process sends its pending deltas and reads the
 *   total in one call, one call at a time (the library's flush): the deltas
 *   reach Redis `redisRttMs / 2` after they are sent, the total read then reaches the process
 *   another `redisRttMs / 2` later; between writes it reads every `redisRefreshMs` while it has
 *   leases open, every `redisIdleRefreshMs` while it has none.
 *
 * The bench steps the fleet and these events in one time order (simulate.ts), so the figures
 * a decision sees are exactly as old as the model says.
 */
import type { VirtualFleet } from "../fleet/index.js";
import { EventHeap } from "../sim/event-heap.js";
import { Rng } from "../sim/random.js";
import { type LoadView, DEFAULTS } from "prefix-router";
type LoadViewStats = ReturnType<LoadView["stats"]>;

/** A load view the benchmark can model. */
export type LoadViewName = "local" | "engine" | "engine-requests" | "redis";

/** A modelled shared view (every name but `local`). */
export type SharedViewName = Exclude<LoadViewName, "local">;

/** The views, in the order the benchmark lists them. */
export const LOAD_VIEW_NAMES: readonly LoadViewName[] = Object.freeze(["local", "engine", "engine-requests", "redis"] as LoadViewName[]);

/** Parameters of the modelled sources. */
export interface LoadViewModelParams {
  /** Time between two `/metrics` polls of a router process, ms. */
  readonly enginePollMs: number;
  /** Round trip between a router process and Redis, ms. */
  readonly redisRttMs: number;
  /** Reads of the total between writes by a process with leases open, ms. */
  readonly redisRefreshMs: number;
  /** Reads of the total by a process with no lease open, ms. */
  readonly redisIdleRefreshMs: number;
}

/** Defaults: the library's intervals; a 0.5 ms round trip (Redis in the same zone). */
export const DEFAULT_LOAD_VIEW_MODEL: LoadViewModelParams = Object.freeze({
  enginePollMs: DEFAULTS.loadView.engineIntervalMs,
  redisRttMs: 0.5,
  redisRefreshMs: DEFAULTS.loadView.redisRefreshIntervalMs,
  redisIdleRefreshMs: DEFAULTS.loadView.redisIdleRefreshIntervalMs,
});

/**
 * A router process's view, fed by the model. Counts are kept by field, as in Redis: `n:<target>`
 * for leases, `w:<target>` for queued work (redis), `t:<target>` for queued uncached tokens
 * (engine: the engine's gauge, less this process's `workTokens` at the poll).
 */
class VirtualView implements LoadView {
  version = 0;
  private readonly own = new Map<string, number>();
  private othersById = new Map<string, number>();
  private workById = new Map<string, number>();
  private tokensById: Map<string, number> | undefined;
  private included: ReadonlyMap<string, number> = new Map();
  private fresh = false;
  /** Redis: the deltas not yet sent, and whether a call is out. */
  readonly pending = new Map<string, number>();
  busy = false;

  constructor(
    readonly source: "engine" | "redis",
    /** Whether the source has a queued-tokens figure (`engine`, not `engine-requests`). */
    private readonly tokens: boolean,
    private readonly onChange: (view: VirtualView) => void,
    /** Router processes sharing the figures: known to Redis (its set of live processes), not to the engines. */
    private readonly processes: number,
    /** This process's position among them. */
    private readonly index: number,
  ) {}

  shared(): boolean {
    return this.fresh;
  }
  others(id: string): number {
    return this.othersById.get(id) ?? 0;
  }
  ownAtRefresh(id: string): number {
    return this.included.get(`n:${id}`) ?? 0;
  }
  othersWork(id: string): number {
    return this.workById.get(id) ?? 0;
  }
  addWork(id: string, delta: number): void {
    if (this.source === "redis") this.count(`w:${id}`, delta);
  }
  othersWorkTokens(id: string): number {
    return this.tokensById === undefined ? Number.NaN : (this.tokensById.get(id) ?? 0);
  }
  addWorkTokens(id: string, delta: number): void {
    if (this.tokens) this.count(`t:${id}`, delta);
  }
  peers(): number {
    return this.processes;
  }
  peerIndex(): number {
    return this.index;
  }
  setTargets(): void {}
  acquire(id: string): void {
    this.count(`n:${id}`, 1);
  }
  release(id: string): void {
    this.count(`n:${id}`, -1);
  }
  /** Whether this process has leases open. */
  hasLeases(): boolean {
    for (const [field, n] of this.own) if (n > 0 && field.startsWith("n:")) return true;
    return false;
  }
  ownCounts(): Map<string, number> {
    return new Map(this.own);
  }
  /** A refresh: `shared` per field, of which `included` was this process's. */
  update(shared: ReadonlyMap<string, number>, included: ReadonlyMap<string, number>): void {
    const others = new Map<string, number>();
    const work = new Map<string, number>();
    const tokens = new Map<string, number>();
    for (const [field, n] of shared) {
      const o = n - (included.get(field) ?? 0);
      if (o > 0) (field.startsWith("w:") ? work : field.startsWith("t:") ? tokens : others).set(field.slice(2), o);
    }
    this.othersById = others;
    this.workById = work;
    this.tokensById = this.tokens ? tokens : undefined;
    this.included = included;
    this.fresh = true;
    this.version++;
  }
  stats(): LoadViewStats {
    return { source: this.source, healthy: this.fresh, lastRefreshAtMs: null, errors: 0, refreshes: this.version, lastError: null, others: Object.fromEntries(this.othersById) };
  }
  async close(): Promise<void> {}

  private count(field: string, delta: number): void {
    this.own.set(field, (this.own.get(field) ?? 0) + delta);
    if (this.source === "redis") {
      this.pending.set(field, (this.pending.get(field) ?? 0) + delta);
      this.onChange(this);
    }
  }
}

type ModelEvent =
  | { kind: "poll"; view: VirtualView }
  | { kind: "apply"; view: VirtualView; deltas: Map<string, number>; included: Map<string, number> }
  | { kind: "reply"; view: VirtualView; total: Map<string, number>; included: Map<string, number> };

/**
 * The views of one simulated run's router processes and the events of their source. The
 * simulation runs {@link LoadViewModel.runNext} whenever {@link LoadViewModel.nextEventMs} comes
 * before the fleet's next event.
 */
export class LoadViewModel {
  readonly views: LoadView[];
  /** The source modelled: the engines' `/metrics`, or Redis. */
  readonly kind: "engine" | "redis";
  private readonly heap = new EventHeap<ModelEvent>();
  private order = 0;
  private readonly total = new Map<string, number>();

  constructor(
    readonly name: SharedViewName,
    routers: number,
    private readonly params: LoadViewModelParams,
    private readonly fleet: VirtualFleet,
    seed: number,
  ) {
    // Each process polls (or reads when idle) at a phase of its own.
    this.kind = name === "redis" ? "redis" : "engine";
    const kind = this.kind;
    const phases = new Rng(seed);
    const period = kind === "engine" ? params.enginePollMs : params.redisRefreshMs;
    const views: VirtualView[] = [];
    for (let k = 0; k < routers; k++) {
      // As the library's engine view: the token figure counts only when polled often enough.
      const tokens = name === "engine" && params.enginePollMs <= DEFAULTS.loadView.engineTokensMaxIntervalMs;
      const view = new VirtualView(kind, tokens, (v) => this.send(v), kind === "redis" ? routers : 1, k);
      views.push(view);
      this.push(phases.next() * period, { kind: "poll", view });
    }
    this.views = views;
  }

  /** Time of the next modelled event, or `Infinity`. */
  nextEventMs(): number {
    return this.heap.peekTime();
  }

  /** Runs the next event; the fleet has been advanced to its time. */
  runNext(): void {
    const t = this.heap.peekTime();
    const e = this.heap.pop()!;
    switch (e.kind) {
      case "poll":
        this.push(t + this.period(e.view), e);
        if (this.kind === "engine") this.poll(e.view);
        else if (!e.view.busy) this.send(e.view);
        return;
      case "apply":
        for (const [id, d] of e.deltas) {
          const n = (this.total.get(id) ?? 0) + d;
          if (n === 0) this.total.delete(id);
          else this.total.set(id, n);
        }
        this.push(t + this.params.redisRttMs / 2, { kind: "reply", view: e.view, total: new Map(this.total), included: e.included });
        return;
      case "reply":
        e.view.busy = false;
        e.view.update(e.total, e.included);
        if (e.view.pending.size > 0) this.send(e.view);
    }
  }

  /** Time to a view's next poll (engine) or read (redis). */
  private period(view: VirtualView): number {
    if (this.kind === "engine") return this.params.enginePollMs;
    return view.hasLeases() ? this.params.redisRefreshMs : this.params.redisIdleRefreshMs;
  }

  private poll(view: VirtualView): void {
    const shared = new Map<string, number>();
    for (const [id, s] of Object.entries(this.fleet.instanceStats())) {
      shared.set(`n:${id}`, s.running + s.waiting);
      shared.set(`t:${id}`, s.waitingUncachedTokens);
    }
    view.update(shared, view.ownCounts());
  }

  /** A process sends its pending deltas (and reads the total), unless a call is already out. */
  private send(view: VirtualView): void {
    if (view.busy) return;
    view.busy = true;
    const deltas = new Map(view.pending);
    view.pending.clear();
    this.push(this.fleet.now + this.params.redisRttMs / 2, { kind: "apply", view, deltas, included: view.ownCounts() });
  }

  private push(t: number, e: ModelEvent): void {
    this.heap.push(t, this.order++, e);
  }
}
