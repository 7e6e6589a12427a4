/**
 * The router: picks a target for each request and tracks what is in flight on every target.
 *
 * Picking is synchronous and does no I/O. `setTargets` builds an immutable snapshot (per-target
 * rendezvous hashes, weights, eligibility); `route` computes the routing key once and walks the
 * key's rendezvous ranking, skipping targets that are at `concurrencyThreshold` or ejected.
 */
import { LRUCache } from "lru-cache";
import { parseJson } from "./canonical-json.js";
import { RouterError } from "./errors.js";
import { describe } from "./internal/validate.js";
import { RendezvousTable, splitKey } from "./rendezvous.js";
import { KeyHasher, loadHasher, validateTenant } from "./routing-key.js";
import { type RoutingMode, bytesPrefix, textPrefix } from "./routing-input.js";
import { type LatencySummary, TargetState, newHistogram, summarize } from "./target-state.js";
import { type BlockChain, LongestPrefixRouting, type QueuedPrefill } from "./longest-prefix.js";
import { type Config, type RouterOptions, validateOptions, validateTargets } from "./options.js";
import type {
  Decision,
  Lease,
  LeaseOutcome,
  PickKind,
  Ranking,
  ReleaseInfo,
  RouteOptions,
  RouteRequest,
  Router,
  RouterStats,
  Strategy,
  TargetSpec,
  TargetStats,
} from "./types.js";

/**
 * Creates a router. Async only because the WebAssembly hasher initialises once per process;
 * everything after it is synchronous.
 *
 * @example
 * const router = await createRouter({ targets: [{ id: "a" }, { id: "b" }] });
 * const lease = router.route({ body: { model: "m", messages } });
 * try { await send(lease.target); lease.release("success"); } catch { lease.release("connect-error"); }
 */
export async function createRouter<T extends TargetSpec>(options: RouterOptions<T>): Promise<Router<T>> {
  const config = validateOptions(options);
  const api = await loadHasher();
  const longest =
    config.strategy === "longest-prefix"
      ? new LongestPrefixRouting(api, config.seed, config.mode, config.longestPrefix, config.clock)
      : undefined;
  return new PrefixRouter<T>(config, new KeyHasher(api, config.seed), longest);
}

/** Immutable view of one target set. */
interface Snapshot<T extends TargetSpec> {
  targets: readonly T[];
  states: readonly TargetState[];
  weights: Float64Array;
  table: RendezvousTable;
  /** Indices of targets with weight > 0, for requests without a model. */
  all: Int32Array;
  /** model → indices of targets with weight > 0 serving it. Bounded: clients may send any model name. */
  byModel: LRUCache<string, Int32Array>;
}

const MODEL_CACHE_SIZE = 1024;
const EMPTY = new Int32Array(0);

class PrefixRouter<T extends TargetSpec> implements Router<T> {
  readonly strategy: Strategy;
  readonly mode: RoutingMode;
  readonly prefixLength: number;
  readonly concurrencyThreshold: number;
  private snapshot!: Snapshot<T>;
  /** Every state by id: current targets, and removed ones while they have open leases. */
  private readonly statesById = new Map<string, TargetState>();
  private scratchScores = new Float64Array(16);

  constructor(
    private readonly config: Config<T>,
    private readonly hasher: KeyHasher,
    private readonly longest?: LongestPrefixRouting,
  ) {
    this.strategy = config.strategy;
    this.mode = config.mode;
    this.prefixLength = config.prefixLength;
    this.concurrencyThreshold = config.concurrencyThreshold;
    this.install(config.targets);
  }

  targets(): readonly T[] {
    return this.snapshot.targets;
  }

  setTargets(targets: readonly T[]): void {
    validateTargets(targets);
    this.install(targets);
  }

  private install(targets: readonly T[]): void {
    const list = Object.freeze([...targets]);
    const ids = new Set(list.map((t) => t.id));
    for (const [id, state] of this.statesById) {
      if (!ids.has(id)) {
        state.active = false;
        if (state.inflight === 0) this.statesById.delete(id);
      }
    }
    const states = list.map((t) => {
      let state = this.statesById.get(t.id);
      if (state === undefined) {
        state = new TargetState(t.id);
        this.statesById.set(t.id, state);
      }
      state.active = true;
      return state;
    });
    const weights = Float64Array.from(list, (t) => t.weight ?? 1);
    const all: number[] = [];
    for (let i = 0; i < list.length; i++) if ((weights[i] as number) > 0) all.push(i);
    this.snapshot = {
      targets: list,
      states,
      weights,
      table: new RendezvousTable(
        list.map((t) => this.hasher.targetHash(t.id)),
        Array.from(weights),
      ),
      all: Int32Array.from(all),
      byModel: new LRUCache({ max: MODEL_CACHE_SIZE }),
    };
    if (this.scratchScores.length < list.length) this.scratchScores = new Float64Array(list.length);
    this.longest?.setTargets(list);
  }

  route(request: RouteRequest, options?: RouteOptions): Lease<T> {
    const snap = this.snapshot;
    const { tenant, model, body } = this.readRequest(request);
    const candidates = this.eligible(snap, model);
    const exclude = toSet(options?.exclude);
    const attempt = options?.attempt ?? 1;
    const now = this.config.clock.now();

    let pick: { index: number; kind: PickKind; rank: number };
    let key: bigint | undefined;
    let chain: BlockChain | undefined;
    if (this.strategy === "prefix-aware" && body !== undefined) {
      key = this.keyOf(body, tenant, model);
      pick = key === undefined ? this.leastOutstanding(snap, candidates, exclude, now) : this.prefixAware(snap, candidates, key, exclude, now);
    } else if (this.longest !== undefined && body !== undefined) {
      chain = this.longest.chain(body, tenant, model);
      if (chain === undefined) {
        pick = this.leastOutstanding(snap, candidates, exclude, now);
      } else {
        const p = this.longest.choose(snap, candidates, chain, exclude, now, this.concurrencyThreshold);
        key = p.key;
        pick = p;
      }
    } else if (this.strategy === "random") {
      pick = this.weightedRandom(snap, candidates, exclude, now);
    } else {
      pick = this.leastOutstanding(snap, candidates, exclude, now);
    }

    const target = snap.targets[pick.index] as T;
    const state = snap.states[pick.index] as TargetState;
    this.config.onDecision?.({
      key,
      target,
      rank: pick.rank,
      kind: pick.kind,
      strategy: this.strategy,
      tenant,
      model,
      attempt,
      atMs: now,
    });
    const prefill = chain === undefined ? undefined : this.longest?.commit(snap, pick.index, chain);
    state.inflight++;
    state.routed++;
    state[KIND_COUNTER[pick.kind]]++;
    return new RouterLease(this, target, state, pick.kind, pick.rank, key, attempt, now, prefill);
  }

  rank(request: RouteRequest): Ranking<T> {
    const snap = this.snapshot;
    const { tenant, model, body } = this.readRequest(request);
    const candidates = this.eligible(snap, model);
    if (this.longest !== undefined) {
      const chain = body === undefined ? undefined : this.longest.chain(body, tenant, model);
      if (chain === undefined) return { key: undefined, targets: Array.from(candidates, (i) => snap.targets[i] as T) };
      const r = this.longest.ranking(snap, candidates, chain);
      return { key: r.key, targets: r.order.map((i) => snap.targets[i] as T) };
    }
    const key = body === undefined ? undefined : this.keyOf(body, tenant, model);
    const order = key === undefined ? Array.from(candidates) : this.ranked(snap, candidates, key);
    return { key, targets: order.map((i) => snap.targets[i] as T) };
  }

  private readRequest(request: RouteRequest): { tenant: string | undefined; model: string | undefined; body: unknown } {
    if (request === null || typeof request !== "object") {
      throw new TypeError(`Expected the request to be an object like { body, tenant?, model? }, got ${describe(request)}`);
    }
    const tenant = request.tenant === undefined ? undefined : validateTenant(request.tenant);
    let model = request.model;
    if (model !== undefined && typeof model !== "string") {
      throw new TypeError(`Expected the request's \`model\` to be a string, got ${describe(model)}`);
    }
    let body = request.body;
    // Text mode reads JSON text and bytes as the object they encode; parse once here so that
    // `body.model` selects targets and enters the key whatever form the body comes in.
    if (this.mode === "text" && (typeof body === "string" || body instanceof Uint8Array)) {
      try {
        const parsed = parseJson(body);
        if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) body = parsed;
      } catch {
        // Left as is: prefix-aware reports ERR_INVALID_JSON when it reads the body.
      }
    }
    if (model === undefined && this.mode === "text" && body !== null && typeof body === "object" && !ArrayBuffer.isView(body)) {
      const m = (body as { model?: unknown }).model;
      if (typeof m === "string") model = m;
    }
    return { tenant, model, body };
  }

  /** The routing key, or undefined when the body has no prompt text. */
  private keyOf(body: unknown, tenant: string | undefined, model: string | undefined): bigint | undefined {
    const prefix = this.mode === "text" ? textPrefix(body, this.prefixLength) : bytesPrefix(body, this.prefixLength);
    if (prefix.length === 0) return undefined;
    return this.hasher.key(this.mode, tenant, model, prefix);
  }

  private eligible(snap: Snapshot<T>, model: string | undefined): Int32Array {
    if (snap.targets.length === 0) {
      throw new RouterError("ERR_NO_TARGETS", "The router has no targets: call setTargets() with at least one target");
    }
    let list: Int32Array;
    if (model === undefined) {
      list = snap.all;
    } else {
      let cached = snap.byModel.get(model);
      if (cached === undefined) {
        const found: number[] = [];
        for (const i of snap.all) {
          const models = snap.targets[i]?.models;
          if (models === undefined || models.includes(model)) found.push(i);
        }
        cached = found.length === 0 ? EMPTY : Int32Array.from(found);
        snap.byModel.set(model, cached);
      }
      list = cached;
    }
    if (list.length === 0) {
      throw new RouterError(
        "ERR_NO_ELIGIBLE_TARGET",
        model === undefined
          ? "Every target is draining (weight 0)"
          : `No target with weight > 0 serves model ${JSON.stringify(model)}`,
      );
    }
    return list;
  }

  private usable(snap: Snapshot<T>, i: number, now: number): boolean {
    const s = snap.states[i] as TargetState;
    return s.inflight < this.concurrencyThreshold && !s.isEjected(now);
  }

  /** Rendezvous ranking, walked until a target has room. */
  private prefixAware(
    snap: Snapshot<T>,
    candidates: Int32Array,
    key: bigint,
    exclude: ReadonlySet<string> | undefined,
    now: number,
  ): { index: number; kind: PickKind; rank: number } {
    const [hi, lo] = splitKey(key);
    const scores = this.scratchScores;
    snap.table.scores(candidates, hi, lo, scores);
    // Fast path: the first choice usually has room; no sort needed.
    let best = 0;
    for (let j = 1; j < candidates.length; j++) if ((scores[j] as number) > (scores[best] as number)) best = j;
    const first = candidates[best] as number;
    if (this.usable(snap, first, now) && !excluded(snap, first, exclude)) return { index: first, kind: "preferred", rank: 0 };

    const order = sortByScore(candidates, scores);
    for (let r = 0; r < order.length; r++) {
      const i = order[r] as number;
      if (this.usable(snap, i, now) && !excluded(snap, i, exclude)) return { index: i, kind: r === 0 ? "preferred" : "spillover", rank: r };
    }
    // Everything is full or ejected: the least loaded per weight, ties by rank. Ejected targets
    // only when nothing else is left.
    let pick = -1;
    let pickRank = -1;
    for (const pass of [false, true]) {
      for (let r = 0; r < order.length; r++) {
        const i = order[r] as number;
        if (excluded(snap, i, exclude)) continue;
        if (!pass && (snap.states[i] as TargetState).isEjected(now)) continue;
        if (pick === -1 || loadOf(snap, i) < loadOf(snap, pick)) {
          pick = i;
          pickRank = r;
        }
      }
      if (pick !== -1) break;
    }
    if (pick === -1) {
      // Every eligible target is excluded: a retry that has run out of new targets goes back to the best one.
      pick = order[0] as number;
      pickRank = 0;
    }
    return { index: pick, kind: "fallback", rank: pickRank };
  }

  private ranked(snap: Snapshot<T>, candidates: Int32Array, key: bigint): number[] {
    const [hi, lo] = splitKey(key);
    snap.table.scores(candidates, hi, lo, this.scratchScores);
    return sortByScore(candidates, this.scratchScores);
  }

  /** Fewest in flight per weight; ties broken by the random source. */
  private leastOutstanding(
    snap: Snapshot<T>,
    candidates: Int32Array,
    exclude: ReadonlySet<string> | undefined,
    now: number,
  ): { index: number; kind: PickKind; rank: number } {
    const random = this.config.random;
    for (const allowEjected of [false, true]) {
      let pick = -1;
      let ties = 0;
      let bestLoad = Number.POSITIVE_INFINITY;
      for (const i of candidates) {
        if (excluded(snap, i, exclude)) continue;
        if (!allowEjected && (snap.states[i] as TargetState).isEjected(now)) continue;
        const load = loadOf(snap, i);
        if (load < bestLoad) {
          bestLoad = load;
          pick = i;
          ties = 1;
        } else if (load === bestLoad && random() * ++ties < 1) {
          pick = i;
        }
      }
      if (pick !== -1) return { index: pick, kind: "least-outstanding", rank: 0 };
    }
    return { index: candidates[0] as number, kind: "least-outstanding", rank: 0 };
  }

  /** Weighted random among non-excluded, non-ejected targets (ejected ones only if nothing else). */
  private weightedRandom(
    snap: Snapshot<T>,
    candidates: Int32Array,
    exclude: ReadonlySet<string> | undefined,
    now: number,
  ): { index: number; kind: PickKind; rank: number } {
    for (const allowEjected of [false, true]) {
      let total = 0;
      for (const i of candidates) {
        if (excluded(snap, i, exclude) || (!allowEjected && (snap.states[i] as TargetState).isEjected(now))) continue;
        total += snap.weights[i] as number;
      }
      if (total === 0) continue;
      let x = this.config.random() * total;
      let last = -1;
      for (const i of candidates) {
        if (excluded(snap, i, exclude) || (!allowEjected && (snap.states[i] as TargetState).isEjected(now))) continue;
        last = i;
        x -= snap.weights[i] as number;
        if (x < 0) return { index: i, kind: "random", rank: 0 };
      }
      return { index: last, kind: "random", rank: 0 };
    }
    return { index: candidates[0] as number, kind: "random", rank: 0 };
  }

  /** @internal Called by a lease exactly once. */
  finish(lease: RouterLease<T>, state: TargetState, outcome: LeaseOutcome, info: ReleaseInfo | undefined): void {
    state.inflight--;
    const now = this.config.clock.now();
    state.recordDuration(now - lease.startMs);
    if (outcome === "connect-error" || outcome === "server-error") {
      state.fail(now, this.config.ejection);
    } else if (outcome === "success" || outcome === "client-error") {
      state.succeed();
    }
    if (info !== undefined) {
      if (typeof info.promptTokens === "number" && info.promptTokens >= 0) state.promptTokens += info.promptTokens;
      if (typeof info.cachedTokens === "number" && info.cachedTokens >= 0) state.cachedTokens += info.cachedTokens;
    }
    if (!state.active && state.inflight === 0 && this.statesById.get(state.id) === state) this.statesById.delete(state.id);
  }

  /** @internal */
  now(): number {
    return this.config.clock.now();
  }

  stats(): RouterStats {
    const now = this.config.clock.now();
    const states = [...this.statesById.values()];
    const totals = {
      inflight: 0,
      routed: 0,
      preferred: 0,
      spillover: 0,
      fallback: 0,
      random: 0,
      leastOutstanding: 0,
      spilloverRate: 0,
      failures: 0,
      ttftMs: null as LatencySummary | null,
      cachedTokenRatio: null as number | null,
    };
    let promptTokens = 0;
    let cachedTokens = 0;
    const merged: { ttft?: ReturnType<typeof newHistogram> } = {};
    for (const s of states) {
      totals.inflight += s.inflight;
      totals.routed += s.routed;
      totals.preferred += s.preferred;
      totals.spillover += s.spillover;
      totals.fallback += s.fallback;
      totals.random += s.random;
      totals.leastOutstanding += s.leastOutstanding;
      totals.failures += s.failures;
      promptTokens += s.promptTokens;
      cachedTokens += s.cachedTokens;
      s.mergeInto(merged);
    }
    totals.spilloverRate = totals.routed === 0 ? 0 : (totals.spillover + totals.fallback) / totals.routed;
    totals.ttftMs = summarize(merged.ttft);
    totals.cachedTokenRatio = promptTokens === 0 ? null : cachedTokens / promptTokens;
    const targets = states.map(
      (s): TargetStats => ({
        id: s.id,
        active: s.active,
        inflight: s.inflight,
        routed: s.routed,
        preferred: s.preferred,
        spillover: s.spillover,
        fallback: s.fallback,
        random: s.random,
        leastOutstanding: s.leastOutstanding,
        share: totals.routed === 0 ? 0 : s.routed / totals.routed,
        spilloverRate: s.routed === 0 ? 0 : (s.spillover + s.fallback) / s.routed,
        failures: s.failures,
        ejected: s.isEjected(now),
        ejectedUntilMs: s.isEjected(now) ? s.ejectedUntilMs : null,
        ttftMs: s.ttftSummary(),
        durationMs: s.durationSummary(),
        promptTokens: s.promptTokens,
        cachedTokens: s.cachedTokens,
        cachedTokenRatio: s.promptTokens === 0 ? null : s.cachedTokens / s.promptTokens,
      }),
    );
    return this.longest === undefined ? { targets, totals } : { targets, totals, prefixIndex: this.longest.stats() };
  }
}

const KIND_COUNTER = {
  preferred: "preferred",
  spillover: "spillover",
  fallback: "fallback",
  random: "random",
  "least-outstanding": "leastOutstanding",
} as const satisfies Record<PickKind, keyof TargetState>;

class RouterLease<T extends TargetSpec> implements Lease<T> {
  private done = false;
  private sawFirstByte = false;

  constructor(
    private readonly router: PrefixRouter<T>,
    readonly target: T,
    private readonly state: TargetState,
    readonly kind: PickKind,
    readonly rank: number,
    readonly key: bigint | undefined,
    readonly attempt: number,
    readonly startMs: number,
    /** `longest-prefix`: the prefill this request queued, until its first byte or its end. */
    private prefill: QueuedPrefill | undefined,
  ) {}

  get released(): boolean {
    return this.done;
  }

  firstByte(): void {
    if (this.sawFirstByte || this.done) return;
    this.sawFirstByte = true;
    this.prefilled();
    this.state.recordTtft(this.router.now() - this.startMs);
  }

  release(outcome: LeaseOutcome = "success", info?: ReleaseInfo): void {
    if (this.done) return;
    this.done = true;
    // Failed before any byte of an answer: the target never prefilled the prompt, so
    // `longest-prefix` forgets the blocks this pick taught its index. A cancelled request may
    // have been prefilled (engines keep computed blocks): it keeps them.
    if (outcome === "connect-error" || outcome === "server-error" || outcome === "client-error") this.prefill?.forget();
    this.prefilled();
    this.router.finish(this, this.state, outcome, info);
  }

  private prefilled(): void {
    this.prefill?.done();
    this.prefill = undefined;
  }
}

function loadOf<T extends TargetSpec>(snap: Snapshot<T>, i: number): number {
  return (snap.states[i] as TargetState).inflight / (snap.weights[i] as number);
}

function excluded<T extends TargetSpec>(snap: Snapshot<T>, i: number, exclude: ReadonlySet<string> | undefined): boolean {
  return exclude !== undefined && exclude.has((snap.targets[i] as T).id);
}

function toSet(exclude: ReadonlySet<string> | readonly string[] | undefined): ReadonlySet<string> | undefined {
  if (exclude === undefined) return undefined;
  if (Array.isArray(exclude)) return exclude.length === 0 ? undefined : new Set(exclude);
  return (exclude as ReadonlySet<string>).size === 0 ? undefined : (exclude as ReadonlySet<string>);
}

/** Candidate indices sorted by descending score; equal scores (probability ~2^-53) by index. */
function sortByScore(candidates: Int32Array, scores: Float64Array): number[] {
  const positions = Array.from({ length: candidates.length }, (_, j) => j);
  positions.sort((a, b) => (scores[b] as number) - (scores[a] as number) || a - b);
  return positions.map((j) => candidates[j] as number);
}
