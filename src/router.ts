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
import { checkFunction, checkInteger, checkNumber, checkOneOf, describe } from "./internal/validate.js";
import { RendezvousTable, splitKey } from "./rendezvous.js";
import { KeyHasher, loadHasher, validateTenant } from "./routing-key.js";
import {
  MAX_PREFIX_LENGTH,
  MIN_PREFIX_LENGTH,
  type RoutingMode,
  bytesPrefix,
  textPrefix,
} from "./routing-input.js";
import { type EjectionPolicy, type LatencySummary, TargetState, newHistogram, summarize } from "./target-state.js";
import {
  type BlockChain,
  type LongestPrefixConfig,
  type LongestPrefixOptions,
  LongestPrefixRouting,
  type QueuedPrefill,
  resolveLongestPrefixOptions,
} from "./longest-prefix.js";
import type { PrefixIndexStats } from "./prefix-index.js";

/** A place requests can go: a replica, an endpoint, an inference component. */
export interface TargetSpec {
  /** Unique, non-empty. It is the target's rendezvous identity: keep it stable across restarts. */
  readonly id: string;
  /**
   * Relative share of new prefixes. `0` drains the target: it is never picked for new requests,
   * but its open leases release normally.
   * @default 1
   */
  readonly weight?: number;
  /** Models / LoRA adapters this target serves. Absent: it serves every model. */
  readonly models?: readonly string[];
}

/** Routing strategies. `longest-prefix`: see `docs/longest-prefix.md`. */
export type Strategy = "prefix-aware" | "least-outstanding" | "random" | "longest-prefix";

/** All strategies, in the order the benchmark lists them. */
export const STRATEGIES: readonly Strategy[] = ["random", "least-outstanding", "prefix-aware", "longest-prefix"];

/** What a pick was: the key's first choice, a later choice, or a load-based pick. */
export type PickKind = "preferred" | "spillover" | "fallback" | "random" | "least-outstanding";

/** An injectable time source, in milliseconds. */
export interface Clock {
  now(): number;
}

/** Passive outlier ejection. */
export interface EjectionOptions {
  /**
   * Consecutive failures (connection errors or 5xx answers) that eject a target.
   * @default 5
   */
  consecutiveFailures?: number;
  /**
   * First ejection length; each further ejection without a success in between doubles it.
   * @default 30000
   */
  baseEjectionMs?: number;
  /**
   * Upper bound of the ejection length.
   * @default 300000
   */
  maxEjectionMs?: number;
}

/** Options of {@link createRouter}. */
export interface RouterOptions<T extends TargetSpec = TargetSpec> {
  /** The targets. Ids non-empty and unique. May be empty (filled later by `setTargets`): `route` then throws `ERR_NO_TARGETS`. */
  targets: readonly T[];
  /** @default "prefix-aware" */
  strategy?: Strategy;
  /**
   * `"text"` reads the prompt text of OpenAI-style bodies (counted in code points); `"bytes"`
   * reads the canonical JSON bytes (or raw bytes) of any body, as SageMaker's Invoke API does.
   * @default "text"
   */
  mode?: RoutingMode;
  /**
   * How much of the routing input the key covers: code points in text mode, bytes in bytes mode.
   * From 1,024 to 65,536. 4,096 characters is about 1,000 tokens: long enough to reach past a
   * typical system prompt into the document or history that follows, short enough to group
   * requests that share that context.
   * @default 4096
   */
  prefixLength?: number;
  /**
   * In-flight requests at which a target counts as full and a request goes to the key's next
   * choice. From 1 to 1,024. 32 is SGLang's gateway balance threshold; lower spreads a hot
   * prefix sooner, higher keeps affinity longer.
   * @default 32
   */
  concurrencyThreshold?: number;
  /**
   * Seed of the routing-key hash and of the targets' rendezvous hashes. Routers that must agree
   * (several processes, several machines) use the same seed. Integer from 0 to 2^64 − 1.
   * @default 0
   */
  seed?: number | bigint;
  /**
   * Random source in [0, 1) for the `random` strategy and least-outstanding tie-breaks.
   * @default Math.random
   */
  random?: () => number;
  /**
   * Time source in milliseconds, for latency metrics and ejection backoff.
   * @default performance
   */
  clock?: Clock;
  /** Called synchronously for every pick, before the pick is counted. An exception propagates to the caller of `route` and nothing is counted. */
  onDecision?: (decision: Decision<T>) => void;
  /**
   * Passive outlier ejection, or `false` to never eject.
   * @default { consecutiveFailures: 5, baseEjectionMs: 30000, maxEjectionMs: 300000 }
   */
  ejection?: EjectionOptions | false;
  /**
   * Settings of the `longest-prefix` strategy (ignored by the others, but validated).
   * @default DEFAULT_LONGEST_PREFIX — { maxInputLength: 65536, blockSize: 256, capacityBlocks: 16384, ttlMs: 0, loadFactor: 1.25, loadWindow: 4096 }
   */
  longestPrefix?: LongestPrefixOptions;
}

export const DEFAULT_STRATEGY: Strategy = "prefix-aware";
export const DEFAULT_MODE: RoutingMode = "text";
export const DEFAULT_PREFIX_LENGTH = 4096;
export const DEFAULT_CONCURRENCY_THRESHOLD = 32;
export const DEFAULT_EJECTION: Readonly<Required<EjectionOptions>> = Object.freeze({
  consecutiveFailures: 5,
  baseEjectionMs: 30_000,
  maxEjectionMs: 300_000,
});

/** One request to route. */
export interface RouteRequest {
  /**
   * The request body: an object, JSON text or bytes. In text mode an OpenAI-style JSON body; in
   * bytes mode anything. Absent (or, in text mode, a body without prompt text): the request has
   * no prefix and goes by least-outstanding.
   */
  body?: unknown;
  /** Tenant id (SageMaker `PrefixAwareId`, OpenAI `prompt_cache_key`): 1–64 printable ASCII. */
  tenant?: string;
  /** The model or adapter; only targets serving it are eligible. Text mode falls back to `body.model`. */
  model?: string;
}

/** Per-call options of {@link Router.route}. */
export interface RouteOptions {
  /** Target ids not to pick (already tried by this request). They keep their place in the ranking. */
  exclude?: ReadonlySet<string> | readonly string[];
  /** 1-based attempt number, reported in decisions. @default 1 */
  attempt?: number;
}

/** How a lease ended. Connection errors and server errors count toward ejection. */
export type LeaseOutcome = "success" | "cancelled" | "client-error" | "server-error" | "connect-error";

/** Facts a finished request reports with its release. */
export interface ReleaseInfo {
  /** Prompt tokens the server counted. */
  promptTokens?: number;
  /** Prompt tokens the server served from its prefix cache. */
  cachedTokens?: number;
}

/** A routing decision, as passed to `onDecision`. */
export interface Decision<T extends TargetSpec = TargetSpec> {
  /** The routing key; `undefined` when the request has no prefix or the strategy reads none. */
  key: bigint | undefined;
  target: T;
  /** Position of the target in the key's ranking (0 = first choice); for load-based picks, 0. */
  rank: number;
  kind: PickKind;
  strategy: Strategy;
  tenant: string | undefined;
  model: string | undefined;
  attempt: number;
  /** Clock time of the decision, ms. */
  atMs: number;
}

/**
 * A pick, held until {@link Lease.release}. While held it counts as in flight on its target.
 */
export interface Lease<T extends TargetSpec = TargetSpec> {
  readonly target: T;
  readonly kind: PickKind;
  readonly rank: number;
  readonly key: bigint | undefined;
  readonly attempt: number;
  /** True once released. */
  readonly released: boolean;
  /**
   * Marks the first byte of the answer's body (TTFT for streams): the prompt was prefilled. Only
   * the first call counts. Not for the body of an error response (4xx, 5xx).
   */
  firstByte(): void;
  /**
   * Ends the lease. Runs once; later calls do nothing. With `longest-prefix`, a `connect-error`,
   * `client-error` or `server-error` before {@link Lease.firstByte} also takes the blocks this
   * pick added back out of the prefix index: the target never computed them.
   */
  release(outcome?: LeaseOutcome, info?: ReleaseInfo): void;
}

/** Per-target counters in {@link RouterStats}. */
export interface TargetStats {
  id: string;
  /** False for a target removed by `setTargets` that still has open leases. */
  active: boolean;
  inflight: number;
  routed: number;
  preferred: number;
  spillover: number;
  fallback: number;
  random: number;
  leastOutstanding: number;
  /** routed / all routed, fraction of 1. */
  share: number;
  /** (spillover + fallback) / routed, fraction of 1 (0 when nothing was routed). */
  spilloverRate: number;
  failures: number;
  ejected: boolean;
  /** Clock time the ejection ends, ms; `null` when not ejected. */
  ejectedUntilMs: number | null;
  /** Time to first byte of the body (TTFT for streams), ms; `null` before any sample. */
  ttftMs: LatencySummary | null;
  /** Lease duration, ms; `null` before any sample. */
  durationMs: LatencySummary | null;
  promptTokens: number;
  cachedTokens: number;
  /** cachedTokens / promptTokens; `null` when no server reported tokens. */
  cachedTokenRatio: number | null;
}

/** A plain snapshot of the router's counters. */
export interface RouterStats {
  targets: TargetStats[];
  /** The same counters summed over every target (rates over the fleet, TTFT from the merged histograms). */
  totals: Pick<
    TargetStats,
    | "inflight"
    | "routed"
    | "preferred"
    | "spillover"
    | "fallback"
    | "random"
    | "leastOutstanding"
    | "spilloverRate"
    | "failures"
    | "ttftMs"
    | "cachedTokenRatio"
  >;
  /** The `longest-prefix` strategy's block index; present only with that strategy. */
  prefixIndex?: PrefixIndexStats;
}

/** The key's ranking of eligible targets, as {@link Router.rank} returns it. */
export interface Ranking<T extends TargetSpec = TargetSpec> {
  key: bigint | undefined;
  /** Eligible targets, best first (for a request without prefix, in target order). */
  targets: T[];
}

/** A router. Create one with {@link createRouter}. */
export interface Router<T extends TargetSpec = TargetSpec> {
  readonly strategy: Strategy;
  readonly mode: RoutingMode;
  readonly prefixLength: number;
  readonly concurrencyThreshold: number;
  /** Picks a target and opens a lease on it. Synchronous; never returns nothing. */
  route(request: RouteRequest, options?: RouteOptions): Lease<T>;
  /** The key's ranking, without picking or counting anything. For tests and debugging. */
  rank(request: RouteRequest): Ranking<T>;
  /** Replaces the target set. Counters of ids that stay are kept; open leases still release. */
  setTargets(targets: readonly T[]): void;
  /** The current targets. */
  targets(): readonly T[];
  /** A snapshot of the counters. */
  stats(): RouterStats;
}

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

interface Config<T extends TargetSpec> {
  targets: readonly T[];
  strategy: Strategy;
  mode: RoutingMode;
  prefixLength: number;
  concurrencyThreshold: number;
  seed: bigint;
  random: () => number;
  clock: Clock;
  onDecision: ((decision: Decision<T>) => void) | undefined;
  ejection: EjectionPolicy | undefined;
  longestPrefix: LongestPrefixConfig;
}

function validateOptions<T extends TargetSpec>(options: RouterOptions<T>): Config<T> {
  if (options === null || typeof options !== "object") {
    throw new TypeError(`Expected router options to be an object, got ${describe(options)}`);
  }
  const o = options;
  validateTargets(o.targets);
  const seed = o.seed ?? 0;
  let seedBig: bigint;
  if (typeof seed === "bigint") {
    if (seed < 0n || seed > 0xffff_ffff_ffff_ffffn) {
      throw new RangeError(`Expected \`seed\` to be an integer from 0 to 2^64 - 1, got ${seed}n`);
    }
    seedBig = seed;
  } else {
    seedBig = BigInt(checkInteger("seed", seed, 0, Number.MAX_SAFE_INTEGER));
  }
  let ejection: EjectionPolicy | undefined;
  if (o.ejection !== false) {
    const e = o.ejection ?? {};
    if (e === null || typeof e !== "object") {
      throw new TypeError(`Expected \`ejection\` to be an object or false, got ${describe(e)}`);
    }
    ejection = {
      consecutiveFailures: checkInteger(
        "ejection.consecutiveFailures",
        e.consecutiveFailures ?? DEFAULT_EJECTION.consecutiveFailures,
        1,
        1_000_000,
      ),
      baseEjectionMs: checkNumber("ejection.baseEjectionMs", e.baseEjectionMs ?? DEFAULT_EJECTION.baseEjectionMs, 0, 86_400_000),
      maxEjectionMs: 0,
    };
    // The cap defaults to at least the base, so raising only the base stays valid.
    ejection.maxEjectionMs = checkNumber(
      "ejection.maxEjectionMs",
      e.maxEjectionMs ?? Math.max(DEFAULT_EJECTION.maxEjectionMs, ejection.baseEjectionMs),
      ejection.baseEjectionMs,
      86_400_000,
    );
  }
  const clock = o.clock ?? performance;
  if (clock === null || typeof clock !== "object" || typeof clock.now !== "function") {
    throw new TypeError(`Expected \`clock\` to be an object with a now() method, got ${describe(clock)}`);
  }
  return {
    targets: o.targets,
    strategy: checkOneOf("strategy", o.strategy ?? DEFAULT_STRATEGY, STRATEGIES),
    mode: checkOneOf("mode", o.mode ?? DEFAULT_MODE, ["text", "bytes"] as const),
    prefixLength: checkInteger("prefixLength", o.prefixLength ?? DEFAULT_PREFIX_LENGTH, MIN_PREFIX_LENGTH, MAX_PREFIX_LENGTH),
    concurrencyThreshold: checkInteger("concurrencyThreshold", o.concurrencyThreshold ?? DEFAULT_CONCURRENCY_THRESHOLD, 1, 1024),
    seed: seedBig,
    random: o.random === undefined ? Math.random : checkFunction<() => number>("random", o.random),
    clock,
    onDecision: o.onDecision === undefined ? undefined : checkFunction("onDecision", o.onDecision),
    ejection,
    longestPrefix: resolveLongestPrefixOptions(o.longestPrefix),
  };
}

/** @internal Validates a target list; throws TypeError/RangeError naming the offending entry. */
export function validateTargets(targets: unknown): void {
  if (!Array.isArray(targets)) {
    throw new TypeError(`Expected \`targets\` to be an array, got ${describe(targets)}`);
  }
  const seen = new Set<string>();
  targets.forEach((t: unknown, i: number) => {
    if (t === null || typeof t !== "object") {
      throw new TypeError(`Expected \`targets[${i}]\` to be an object, got ${describe(t)}`);
    }
    const { id, weight, models } = t as TargetSpec;
    if (typeof id !== "string" || id.length === 0) {
      throw new TypeError(`Expected \`targets[${i}].id\` to be a non-empty string, got ${describe(id)}`);
    }
    if (seen.has(id)) throw new RangeError(`Expected target ids to be unique, got ${JSON.stringify(id)} twice`);
    seen.add(id);
    if (weight !== undefined && (typeof weight !== "number" || !Number.isFinite(weight) || weight < 0)) {
      throw new RangeError(`Expected \`targets[${i}].weight\` to be a finite number >= 0, got ${describe(weight)}`);
    }
    if (models !== undefined && (!Array.isArray(models) || !models.every((m) => typeof m === "string"))) {
      throw new TypeError(`Expected \`targets[${i}].models\` to be an array of strings, got ${describe(models)}`);
    }
  });
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
