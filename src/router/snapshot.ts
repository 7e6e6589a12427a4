/**
 * The router's immutable view of one target set, built when the set changes (grpc-js `Picker`,
 * Envoy's rendezvous table): targets, their weights and precomputed rendezvous hashes, their
 * counters, and eligibility by model. {@link DecisionView} is what a strategy sees of it at one
 * decision.
 */
import { LRUCache } from "lru-cache";
import { RouterError } from "../errors.js";
import { quoteShort } from "../internal/validate.js";
import { RendezvousTable } from "../routing/rendezvous.js";
import type { PickContext } from "../strategies/strategy.js";
import type { LoadFigures } from "../load-view/view.js";
import { TargetState } from "./target-state.js";
import type { TargetSpec } from "../types.js";

/** Model names remembered per snapshot: clients may send any model name. */
const MODEL_CACHE_SIZE = 1024;
/**
 * Characters of model names the cache holds at most, all entries together (at most 512 KiB of
 * strings): a client sending huge distinct names cannot make the cache keep more.
 */
export const MODEL_CACHE_MAX_CHARS = 256 * 1024;
/** A model name longer than this is looked up on every request and never remembered. */
export const MODEL_CACHE_MAX_NAME_CHARS = 1024;
const EMPTY = new Int32Array(0);

export class Snapshot<T extends TargetSpec> {
  readonly weights: Float64Array;
  readonly table: RendezvousTable;
  /** Indices of targets with weight > 0, for requests without a model. */
  readonly all: Int32Array;
  /** model → indices of targets with weight > 0 serving it; bounded in entries and in characters. */
  private readonly byModel = new LRUCache<string, Int32Array>({
    max: MODEL_CACHE_SIZE,
    maxSize: MODEL_CACHE_MAX_CHARS,
    maxEntrySize: MODEL_CACHE_MAX_NAME_CHARS,
    sizeCalculation: (_value, model) => Math.max(1, model.length),
  });

  constructor(
    readonly targets: readonly T[],
    readonly states: readonly TargetState[],
    targetHash: (id: string) => bigint,
  ) {
    this.weights = Float64Array.from(targets, (t) => t.weight ?? 1);
    this.table = new RendezvousTable(
      targets.map((t) => targetHash(t.id)),
      Array.from(this.weights),
    );
    const all: number[] = [];
    for (let i = 0; i < targets.length; i++) if ((this.weights[i] as number) > 0) all.push(i);
    this.all = Int32Array.from(all);
  }

  /** Indices of the targets eligible for `model`. Throws when there are none. */
  eligible(model: string | undefined): Int32Array {
    if (this.targets.length === 0) {
      throw new RouterError("ERR_NO_TARGETS", "The router has no targets: call setTargets() with at least one target");
    }
    let list: Int32Array;
    if (model === undefined) {
      list = this.all;
    } else {
      let cached = this.byModel.get(model);
      if (cached === undefined) {
        const found: number[] = [];
        for (const i of this.all) {
          const models = this.targets[i]?.models;
          if (models === undefined || models.includes(model)) found.push(i);
        }
        cached = found.length === 0 ? EMPTY : Int32Array.from(found);
        this.byModel.set(model, cached);
      }
      list = cached;
    }
    if (list.length === 0) {
      throw new RouterError(
        "ERR_NO_ELIGIBLE_TARGET",
        model === undefined ? "Every target is draining (weight 0)" : `No target with weight > 0 serves model ${quoteShort(model, 128)}`,
      );
    }
    return list;
  }
}

/** What every decision view of one router shares. */
export interface ViewSettings {
  readonly concurrencyThreshold: number;
  readonly random: () => number;
  /** A shared load view's figures now (`load-view/`); `undefined`: the local view. */
  load(): LoadFigures | undefined;
}

/** A snapshot at one decision: the request's candidates, the targets it already tried, the time. */
export class DecisionView<T extends TargetSpec> implements PickContext<T> {
  readonly targets: readonly T[];
  readonly weights: Float64Array;
  private readonly states: readonly TargetState[];

  declare readonly concurrencyThreshold: number;
  declare readonly random: () => number;
  /** A shared load view's figures (`load-view/`); absent: the local view. */
  declare private readonly load: LoadFigures | undefined;

  constructor(
    private readonly snap: Snapshot<T>,
    readonly candidates: Int32Array,
    private readonly exclude: ReadonlySet<string> | undefined,
    readonly now: number,
    settings: ViewSettings,
  ) {
    this.targets = snap.targets;
    this.weights = snap.weights;
    this.states = snap.states;
    this.concurrencyThreshold = settings.concurrencyThreshold;
    this.random = settings.random;
    this.load = settings.load();
    this.sharedLoad = this.load !== undefined;
  }

  readonly sharedLoad: boolean;

  inflight(i: number): number {
    const own = (this.states[i] as TargetState).inflight;
    return this.load === undefined ? own : this.load.inflight(i, own);
  }

  othersQueuedWork(i: number): number {
    return this.load === undefined ? 0 : (this.load.work[i] as number);
  }

  othersQueuedTokens(i: number): number {
    return this.load === undefined ? Number.NaN : (this.load.workTokens[i] as number);
  }

  isEjected(i: number): boolean {
    const s = this.states[i] as TargetState;
    return s.isEjected(this.now) || s.failingHealthCheck;
  }

  isExcluded(i: number): boolean {
    return this.exclude !== undefined && this.exclude.has((this.targets[i] as T).id);
  }

  isOpen(i: number): boolean {
    const own = (this.states[i] as TargetState).inflight;
    const room = this.load === undefined ? own < this.concurrencyThreshold : this.load.open(i, own, this.concurrencyThreshold);
    return room && !this.isEjected(i) && !this.isExcluded(i);
  }

  score(i: number, keyHi: number, keyLo: number): number {
    return this.snap.table.score(i, keyHi, keyLo);
  }
}
