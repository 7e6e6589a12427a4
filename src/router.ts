/**
 * The router: snapshot → strategy pick → lease.
 *
 * `setTargets` builds an immutable {@link Snapshot} (per-target rendezvous hashes, weights,
 * eligibility). `route` reads the request once, asks the strategy for a pick over the snapshot —
 * synchronous, no I/O, no state change — then commits it: the strategy records it, the target's
 * counters move, and a lease holds it in flight until released. Strategies are plug-ins
 * (`strategies/`): the router knows their interface, never their list.
 */
import { Background } from "./background.js";
import { parseJson } from "./canonical-json.js";
import { describe } from "./internal/validate.js";
import { type LeaseOwner, RouterLease } from "./lease.js";
import { type Config, type RouterOptions, validateOptions, validateTargets } from "./options.js";
import { KeyHasher, loadHasher, validateTenant } from "./routing-key.js";
import { type RoutingMode, bytesPrefix, textPrefix } from "./routing-input.js";
import { DecisionView, Snapshot } from "./snapshot.js";
import { KIND_COUNTER, buildStats } from "./stats.js";
import { type BuiltInEnv, createStrategy } from "./strategies/index.js";
import { PrefixAware } from "./strategies/prefix-aware.js";
import type { RoutingStrategy, StrategyRequest, StrategySpec } from "./strategies/strategy.js";
import { TargetState } from "./target-state.js";
import type {
  Lease,
  LeaseOutcome,
  PreparedRequest,
  Ranking,
  ReleaseInfo,
  RouteOptions,
  RouteRequest,
  Router,
  RouterStats,
  StrategyName,
  TargetSpec,
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
  let router: PrefixRouter<T> | undefined;
  const background = await Background.create(config.background, config.clock, {
    concurrencyThreshold: config.concurrencyThreshold,
    random: config.random,
    setFailing: (id, failing) => router?.setFailing(id, failing),
  });
  const api = await loadHasher();
  const hasher = new KeyHasher(api, config.seed);
  const { mode, prefixLength } = config;
  const env: BuiltInEnv = {
    mode,
    prefixLength,
    concurrencyThreshold: config.concurrencyThreshold,
    seed: config.seed,
    clock: config.clock,
    random: config.random,
    xxhash: api,
    longestPrefix: config.longestPrefix,
    routingKey(request: StrategyRequest): bigint | undefined {
      const prefix = mode === "text" ? textPrefix(request.body, prefixLength) : bytesPrefix(request.body, prefixLength);
      return prefix.length === 0 ? undefined : hasher.key(mode, request.tenant, request.model, prefix);
    },
    create: <U extends TargetSpec>(spec: StrategySpec<U>) => createStrategy(spec, env),
  };
  router = new PrefixRouter<T>(config, hasher, createStrategy(config.strategy, env), new PrefixAware(env), background);
  await background.start(router);
  return router;
}

/** A request read once: what strategies see, and the strategy's routing input. */
class Prepared<T extends TargetSpec> implements PreparedRequest, StrategyRequest {
  constructor(
    private readonly router: PrefixRouter<T>,
    readonly body: unknown,
    readonly tenant: string | undefined,
    readonly model: string | undefined,
  ) {}
  /** The strategy's routing input, once read. */
  input: unknown;
  /** The default ranking's key (strategies without `rank`), once computed. */
  rankingKey: bigint | undefined;

  eligibleCount(): number {
    return this.router.eligibleCount(this.model);
  }
}

class PrefixRouter<T extends TargetSpec> implements Router<T>, LeaseOwner {
  readonly strategy: StrategyName;
  readonly mode: RoutingMode;
  readonly prefixLength: number;
  readonly concurrencyThreshold: number;
  private snapshot!: Snapshot<T>;
  /** Every state by id: current targets, and removed ones while they have open leases. */
  private readonly statesById = new Map<string, TargetState>();

  constructor(
    private readonly config: Config<T>,
    private readonly hasher: KeyHasher,
    private readonly impl: RoutingStrategy<T>,
    /** The ranking `rank()` reports for strategies that define none: rendezvous over the routing key. */
    private readonly rendezvous: PrefixAware,
    /** Load view, membership and health checks (background.ts). */
    private readonly background: Background<T>,
  ) {
    this.strategy = impl.name;
    this.mode = config.mode;
    this.prefixLength = config.prefixLength;
    this.concurrencyThreshold = config.concurrencyThreshold;
    background.validate(config.targets);
    this.install(config.targets);
  }

  targets(): readonly T[] {
    return this.snapshot.targets;
  }

  setTargets(targets: readonly T[]): void {
    validateTargets(targets);
    this.background.validate(targets);
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
      state.failingHealthCheck = this.background.failing(t.id);
      return state;
    });
    this.snapshot = new Snapshot(list, states, (id) => this.hasher.targetHash(id));
    this.background.install(list);
    this.impl.setTargets?.(list);
  }

  prepare(request: RouteRequest): PreparedRequest {
    return this.read(request);
  }

  route(request: RouteRequest | PreparedRequest, options?: RouteOptions): Lease<T> {
    const snap = this.snapshot;
    const prepared = this.read(request);
    const attempt = options?.attempt ?? 1;
    const now = this.config.clock.now();
    const view = new DecisionView(snap, snap.eligible(prepared.model), toSet(options?.exclude), now, this.concurrencyThreshold, this.config.random, this.background.reader?.current());
    const input = this.inputOf(prepared);
    const pick = this.impl.pick(view, input);
    const target = snap.targets[pick.index] as T;
    const state = snap.states[pick.index] as TargetState;
    const key = pick.key;
    this.config.onDecision?.({
      key,
      target,
      rank: pick.rank,
      kind: pick.kind,
      strategy: this.strategy,
      tenant: prepared.tenant,
      model: prepared.model,
      attempt,
      atMs: now,
    });
    const commitment = this.background.queued(state.id, pick.work, this.impl.commit?.(view, pick, input));
    state.inflight++;
    this.background.acquired(state.id);
    state.routed++;
    state[KIND_COUNTER[pick.kind]]++;
    return new RouterLease(this, target, state, pick.kind, pick.rank, key, attempt, now, commitment);
  }

  rank(request: RouteRequest | PreparedRequest): Ranking<T> {
    const snap = this.snapshot;
    const prepared = this.read(request);
    const view = new DecisionView(snap, snap.eligible(prepared.model), undefined, this.config.clock.now(), this.concurrencyThreshold, this.config.random, this.background.reader?.current());
    let ranking;
    if (this.impl.rank !== undefined) {
      ranking = this.impl.rank(view, this.inputOf(prepared));
    } else {
      prepared.rankingKey ??= this.rendezvous.read(prepared);
      ranking = this.rendezvous.rank(view, prepared.rankingKey);
    }
    return { key: ranking.key, targets: ranking.order.map((i) => snap.targets[i] as T) };
  }

  /** @internal Eligible targets for `model` now (0 when none). */
  eligibleCount(model: string | undefined): number {
    try {
      return this.snapshot.eligible(model).length;
    } catch {
      return 0;
    }
  }

  /** The strategy's routing input, read at most once per prepared request. */
  private inputOf(prepared: Prepared<T>): unknown {
    if (prepared.input === undefined && this.impl.read !== undefined) prepared.input = this.impl.read(prepared);
    return prepared.input;
  }

  /** Validates a request and parses its body, once: a prepared request passes through. */
  private read(request: RouteRequest | PreparedRequest): Prepared<T> {
    if (request instanceof Prepared) {
      if (request["router"] === this) return request as Prepared<T>;
      throw new TypeError("Expected a request prepared by this router, got one prepared by another router");
    }
    if (request === null || typeof request !== "object") {
      throw new TypeError(`Expected the request to be an object like { body, tenant?, model? }, got ${describe(request)}`);
    }
    const r = request as RouteRequest;
    const tenant = r.tenant === undefined ? undefined : validateTenant(r.tenant);
    let model = r.model;
    if (model !== undefined && typeof model !== "string") {
      throw new TypeError(`Expected the request's \`model\` to be a string, got ${describe(model)}`);
    }
    let body = r.body;
    // Text mode reads JSON text and bytes as the object they encode; parse once here so that
    // `body.model` selects targets and enters the key whatever form the body comes in.
    if (this.mode === "text" && (typeof body === "string" || body instanceof Uint8Array)) {
      try {
        const parsed = parseJson(body);
        if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) body = parsed;
      } catch {
        // Left as is: reading the routing input reports ERR_INVALID_JSON.
      }
    }
    if (model === undefined && this.mode === "text" && body !== null && typeof body === "object" && !ArrayBuffer.isView(body)) {
      const m = (body as { model?: unknown }).model;
      if (typeof m === "string") model = m;
    }
    return new Prepared(this, body, tenant, model);
  }

  /** @internal Called by a lease exactly once. */
  finish(lease: RouterLease<TargetSpec>, state: TargetState, outcome: LeaseOutcome, info: ReleaseInfo | undefined): void {
    state.inflight--;
    this.background.released(state.id);
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
    return { ...buildStats([...this.statesById.values()], this.config.clock.now(), this.impl.stats?.()), ...this.background.stats() };
  }

  /** @internal Active health checks take target `id` out, or bring it back. */
  setFailing(id: string, failing: boolean): void {
    const state = this.statesById.get(id);
    if (state !== undefined) state.failingHealthCheck = failing;
  }

  close(): Promise<void> {
    return this.background.close();
  }
}

function toSet(exclude: ReadonlySet<string> | readonly string[] | undefined): ReadonlySet<string> | undefined {
  if (exclude === undefined) return undefined;
  if (Array.isArray(exclude)) return exclude.length === 0 ? undefined : new Set(exclude);
  return (exclude as ReadonlySet<string>).size === 0 ? undefined : (exclude as ReadonlySet<string>);
}
