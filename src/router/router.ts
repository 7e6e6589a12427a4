/**
 * The router: snapshot → strategy pick → lease.
 *
 * `setTargets` builds an immutable {@link Snapshot} (per-target rendezvous hashes, weights,
 * eligibility). `route` reads the request once, asks the strategy for a pick over the snapshot —
 * synchronous, no I/O, no state change — then commits it: the strategy records it, the target's
 * counters move, and a lease holds it in flight until released. Strategies are plug-ins
 * (`strategies/`): the router knows their interface, never their list.
 */
import { checkRouteOptions } from "./call-checks.js";
import { Background } from "../background/background.js";
import { parseJson } from "../routing/canonical-json.js";
import { RouterError } from "../errors.js";
import { hexKey } from "../internal/hex.js";
import { PrefixWriter } from "../routing/prefix-writer.js";
import { describe, quoteShort } from "../internal/validate.js";
import { type LeaseOwner, RouterLease } from "./lease.js";
import { type Config, type RouterOptions, validateOptions, validateTargets } from "../options.js";
import { type InputKind, needsRawPrefix, rawPrefixBody } from "../routing/raw-prefix.js";
import { RouterEvents } from "./router-events.js";
import type { SpillCauses } from "./spill-storm.js";
import { KeyHasher, loadHasher, validateTenant } from "../routing/routing-key.js";
import { type RoutingMode, bodyBytes, bytesPrefix, textRouting } from "../routing/routing-input.js";
import { DecisionView, Snapshot } from "./snapshot.js";
import { KIND_COUNTER, buildStats } from "./stats.js";
import { DEFAULT_CLOSED_LOOP, type PredictionVerdict, judgePrediction } from "./closed-loop.js";
import { type BuiltInEnv, createStrategy } from "../strategies/index.js";
import { PrefixAware, type PrefixKey } from "../strategies/prefix-aware.js";
import type { Commitment, RoutingStrategy, StrategyPick, StrategyRequest, StrategySpec } from "../strategies/strategy.js";
import { TargetState } from "./target-state.js";
import { explainPick } from "./reason.js";
import { Shadow, type ShadowTicket } from "./shadow.js";
import { TELEMETRY, loadTelemetry } from "../telemetry/load.js";
import type {
  DecisionReason,
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
} from "../types.js";

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
  const [api, telemetry] = await Promise.all([loadHasher(), loadTelemetry(config.telemetry, config.clock)]);
  const background = await Background.create(config.background, config.clock, {
    concurrencyThreshold: config.concurrencyThreshold,
    random: config.random,
    logger: config.logger,
    setFailing: (id, failing) => router?.setFailing(id, failing),
  });
  const hasher = new KeyHasher(api, config.seed);
  const { mode, prefixLength, keyScope } = config;
  // The strategy reports forgotten targets to the router, which exists once the strategy does.
  let router: PrefixRouter<T> | undefined;
  // The routing key's bytes-mode input is written into one buffer per router, reused per request.
  const writer = new PrefixWriter();
  const env: BuiltInEnv = {
    mode,
    prefixLength,
    concurrencyThreshold: config.concurrencyThreshold,
    seed: config.seed,
    clock: config.clock,
    random: config.random,
    xxhash: api,
    longestPrefix: config.longestPrefix,
    precisePrefix: config.precisePrefix, // precise-prefix registration (to move onto the strategy registry at merge)
    logger: config.logger, // precise-prefix registration (to move onto the strategy registry at merge)
    closedLoop: config.closedLoop,
    prefixAware: config.prefixAware,
    routingPrefix(request: StrategyRequest): PrefixKey | undefined {
      if (mode === "text") {
        const { prefix, units } = textRouting(request.body, prefixLength, keyScope);
        return prefix.length === 0 ? undefined : { key: hasher.key(mode, request.tenant, request.model, prefix), length: prefix.length, units };
      }
      const prefix = bytesPrefix(request.body, prefixLength, writer);
      const units = prefix.length < prefixLength ? prefix.length : bodyBytes(request.body);
      return prefix.length === 0 ? undefined : { key: hasher.key(mode, request.tenant, request.model, prefix), length: prefix.length, units };
    },
    routingKey: (request: StrategyRequest) => env.routingPrefix(request)?.key,
    forgot: (id: string, entries: number) => router?.forgot(id, entries),
    create: <U extends TargetSpec>(spec: StrategySpec<U>) => createStrategy(spec, env),
  };
  const strategy = createStrategy(config.strategy, env);
  // The shadow's own instance: its closed loop off (the responses come from the live targets) and
  // its forgetting never reported as the router's.
  const shadow =
    config.shadow === undefined
      ? undefined
      : new Shadow<T>(
          createStrategy<T>(config.shadow.strategy, { ...env, closedLoop: undefined, forgot: () => {} }),
          config.shadow.placement,
          config.seed,
          mode,
          Math.max(prefixLength, config.longestPrefix.maxInputLength),
        );
  const events = new RouterEvents(config.logger, telemetry, strategy.name, config.concurrencyThreshold);
  if (options.longestPrefix !== undefined && strategy.name !== "longest-prefix" && strategy.name !== "precise-prefix") { // precise-prefix registration (to move onto the strategy registry at merge)
    events.ignored(`\`longestPrefix\` is set but the strategy is ${JSON.stringify(strategy.name)}: the settings are ignored`);
  }
  if (options.prefixAware !== undefined && strategy.name !== "prefix-aware") {
    events.ignored(`\`prefixAware\` is set but the strategy is ${JSON.stringify(strategy.name)}: the settings are ignored`);
  }
  try {
    router = new PrefixRouter<T>(config, hasher, strategy, new PrefixAware(env), events, background, shadow);
    await background.start(router);
  } catch (error) {
    // Targets a background feature cannot use, or a failed first membership refresh: nothing
    // may stay open (a Redis connection, a timer).
    await background.close();
    throw error;
  }
  return router;
}

/** A request read once: what strategies see, and the strategy's routing input. */
class Prepared<T extends TargetSpec> implements PreparedRequest, StrategyRequest {
  constructor(
    private readonly router: PrefixRouter<T>,
    /** Replaced by its raw-prefix stand-in when its prefix cannot be canonicalized (raw-prefix.ts). */
    public body: unknown,
    readonly tenant: string | undefined,
    readonly model: string | undefined,
  ) {}
  /** How the routing input was read. */
  inputKind: InputKind = "canonical";
  /** The strategy's routing input, once read. */
  input: unknown;
  /** The default ranking's key (strategies without `rank`), once computed. */
  rankingKey: PrefixKey | undefined;

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
  /** Routing input a raw-prefix stand-in covers: as much as any strategy of this router reads. */
  private readonly rawUnits: number;

  constructor(
    private readonly config: Config<T>,
    private readonly hasher: KeyHasher,
    private readonly impl: RoutingStrategy<T>,
    /** The ranking `rank()` reports for strategies that define none: rendezvous over the routing key. */
    private readonly defaultRanking: Pick<PrefixAware, "read" | "rank">,
    private readonly events: RouterEvents,
    /** Load view, membership and health checks (background.ts). */
    private readonly background: Background<T>,
    /** The shadow strategy (`RouterOptions.shadow`), never acted on. */
    private readonly shadow: Shadow<T> | undefined = undefined,
  ) {
    this.strategy = impl.name;
    Object.defineProperty(this, TELEMETRY, { value: events.telemetry });
    this.mode = config.mode;
    this.prefixLength = config.prefixLength;
    this.concurrencyThreshold = config.concurrencyThreshold;
    this.rawUnits = Math.max(config.prefixLength, config.longestPrefix.maxInputLength);
    config.targetCheck?.(config.targets);
    background.validate(config.targets);
    this.install(config.targets);
  }

  targets(): readonly T[] {
    return this.snapshot.targets;
  }

  setTargets(targets: readonly T[]): void {
    validateTargets(targets);
    this.config.targetCheck?.(targets);
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
    this.shadow?.setTargets(list);
    this.events.targetsSet(list, this.impl.read !== undefined);
  }

  prepare(request: RouteRequest): PreparedRequest {
    return this.read(request);
  }

  route(request: RouteRequest | PreparedRequest, options?: RouteOptions): Lease<T> {
    const { exclude, attempt, explain } = checkRouteOptions(options);
    const snap = this.snapshot;
    const prepared = this.read(request);
    const now = this.config.clock.now();
    if (options?.target !== undefined) return this.routeTo(options.target, prepared, attempt, now, explain);
    const view = new DecisionView(snap, snap.eligible(prepared.model), exclude, now, this.concurrencyThreshold, this.config.random, this.background.reader?.current());
    const input = this.inputOf(prepared);
    const pick = this.impl.pick(view, input);
    // The shadow picks on the same view, after the live pick, and only for a first attempt.
    const shadow = this.shadow;
    const shadowPick = shadow === undefined || exclude !== undefined ? undefined : shadow.pick(view, prepared);
    const reason = explain || this.config.onDecision !== undefined ? explainPick(view, pick, () => this.firstChoice(view, prepared)) : undefined;
    const lease = this.take(snap, pick, prepared, attempt, now, () => this.impl.commit?.(view, pick, input), exclude !== undefined, reason);
    if (shadowPick !== undefined) lease.shadowTicket = shadow?.commit(view, shadowPick, pick);
    return lease;
  }

  /** The key's first choice, ignoring load: for a reason's `preferred` (called only when a pick went elsewhere). */
  private firstChoice(view: DecisionView<T>, prepared: Prepared<T>): number | undefined {
    if (this.impl.rank !== undefined) return this.impl.rank(view, this.inputOf(prepared)).order[0];
    prepared.rankingKey ??= this.readInput(prepared, (p) => this.defaultRanking.read(p));
    return this.defaultRanking.rank(view, prepared.rankingKey).order[0];
  }

  /** Announces a pick (`onDecision`), commits it and opens its lease: the one way a target is taken. */
  private take(
    snap: Snapshot<T>,
    pick: StrategyPick,
    prepared: Prepared<T>,
    attempt: number,
    now: number,
    commit: () => Commitment | undefined,
    retry = false,
    reason: DecisionReason | undefined = undefined,
  ): RouterLease<T> {
    const target = snap.targets[pick.index] as T;
    const state = snap.states[pick.index] as TargetState;
    const { key, predictedCachedTokens } = pick;
    this.config.onDecision?.({
      key: hexKey(key),
      target,
      rank: pick.rank,
      kind: pick.kind,
      strategy: this.strategy,
      tenant: prepared.tenant,
      model: prepared.model,
      attempt,
      atMs: now,
      input: prepared.inputKind,
      predictedCachedTokens,
      reason: reason as DecisionReason,
    });
    const commitment = this.background.queued(state.id, pick.work, pick.workTokens, commit());
    state.inflight++;
    this.background.acquired(state.id);
    state.routed++;
    state[KIND_COUNTER[pick.kind]]++;
    this.events.picked(target.id, pick.kind, this.config.clock.now() - now, this.spillCauses, retry);
    return new RouterLease(this, target, state, pick.kind, pick.rank, prepared.model, key, attempt, now, predictedCachedTokens, commitment, prepared.inputKind, reason);
  }

  /** The pick the caller named: no strategy, no commitment; see {@link RouteOptions.target}. */
  private routeTo(id: string, prepared: Prepared<T>, attempt: number, now: number, explain: boolean): Lease<T> {
    if (typeof id !== "string") throw new TypeError(`Expected \`target\` to be a target id (a string), got ${describe(id)}`);
    const snap = this.snapshot;
    const index = snap.targets.findIndex((t) => t.id === id);
    const target = snap.targets[index];
    if (target === undefined || (prepared.model !== undefined && target.models !== undefined && !target.models.includes(prepared.model))) {
      throw new RouterError(
        "ERR_TARGET_GONE",
        target === undefined
          ? `Target ${JSON.stringify(id)} is no longer in the target set`
          : `Target ${JSON.stringify(id)} no longer serves model ${quoteShort(prepared.model, 128)}`,
      );
    }
    const reason: DecisionReason | undefined =
      explain || this.config.onDecision !== undefined
        ? { kind: "affinity", rank: 0, inflight: (snap.states[index] as TargetState).inflight, threshold: this.concurrencyThreshold }
        : undefined;
    return this.take(snap, { index, kind: "affinity", rank: 0 }, prepared, attempt, now, () => undefined, false, reason);
  }

  rank(request: RouteRequest | PreparedRequest): Ranking<T> {
    const snap = this.snapshot;
    const prepared = this.read(request);
    const view = new DecisionView(snap, snap.eligible(prepared.model), undefined, this.config.clock.now(), this.concurrencyThreshold, this.config.random, this.background.reader?.current());
    let ranking;
    if (this.impl.rank !== undefined) {
      ranking = this.impl.rank(view, this.inputOf(prepared));
    } else {
      prepared.rankingKey ??= this.readInput(prepared, (p) => this.defaultRanking.read(p));
      ranking = this.defaultRanking.rank(view, prepared.rankingKey);
    }
    return { key: hexKey(ranking.key), targets: ranking.order.map((i) => snap.targets[i] as T) };
  }

  /**
   * Why a pick may miss its first choice now, over the targets that take new requests (weight > 0),
   * as {@link DecisionView.isOpen} decides it; for the spill-storm log line: made once, called rarely.
   */
  private readonly spillCauses = (): SpillCauses => {
    const snap = this.snapshot;
    const load = this.background.reader?.current();
    const now = this.config.clock.now();
    const full: string[] = [];
    const quota: string[] = [];
    const ejected: string[] = [];
    const failingHealthCheck: string[] = [];
    for (const i of snap.all) {
      const s = snap.states[i] as TargetState;
      if ((load === undefined ? s.inflight : load.inflight(i, s.inflight)) >= this.concurrencyThreshold) full.push(s.id);
      else if (load !== undefined && !load.open(i, s.inflight, this.concurrencyThreshold)) quota.push(s.id);
      if (s.isEjected(now)) ejected.push(s.id);
      if (s.failingHealthCheck) failingHealthCheck.push(s.id);
    }
    return { full, quota, ejected, failingHealthCheck };
  };

  /** @internal The strategy forgot what it believed target `id` caches (closed loop). */
  forgot(id: string, entries: number): void {
    const state = this.statesById.get(id);
    if (state !== undefined) state.indexResets++;
    this.events.forgot(id, entries, this.config.closedLoop?.misses ?? 0);
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
    const impl = this.impl;
    if (prepared.input === undefined && impl.read !== undefined) prepared.input = this.readInput(prepared, (p) => impl.read?.(p));
    return prepared.input;
  }

  /**
   * `read(prepared)`; when the body's prefix cannot be canonicalized, the body is swapped for its
   * raw-prefix stand-in, once, and read again: routing never fails a valid body (raw-prefix.ts).
   */
  private readInput<I>(prepared: Prepared<T>, read: (p: Prepared<T>) => I): I {
    try {
      return read(prepared);
    } catch (error) {
      if (prepared.inputKind === "raw" || !needsRawPrefix(error)) throw error;
      prepared.body = rawPrefixBody(this.mode, prepared.body, this.rawUnits);
      prepared.inputKind = "raw";
      return read(prepared);
    }
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
    const durationMs = now - lease.startMs;
    state.recordDuration(durationMs);
    // A client error is decided by the request, not by the target's health: it neither ejects a
    // target nor keeps a failing one in rotation (docs/security.md#failure-accounting).
    if (outcome === "connect-error" || outcome === "server-error") {
      const failures = state.consecutiveFailures + 1;
      const ejectedFor = state.fail(now, this.config.ejection);
      if (ejectedFor > 0) this.events.ejected(state.id, ejectedFor, failures);
    } else if (outcome === "success") {
      state.succeed();
    }
    const predicted = lease.predictedCachedTokens;
    let verdict: PredictionVerdict;
    if (typeof info?.promptTokens === "number" && info.promptTokens >= 0) state.promptTokens += info.promptTokens;
    if (info !== undefined && typeof info.cachedTokens === "number" && info.cachedTokens >= 0) {
      state.cachedTokens += info.cachedTokens;
      if (predicted !== undefined) state.predictedCachedTokens += predicted;
      verdict = judgePrediction(predicted, outcome, info, this.config.closedLoop?.ratio ?? DEFAULT_RATIO);
      if (verdict !== undefined) state.predictions++;
      if (verdict === "miss") state.predictionMisses++;
    }
    const { kind, model, ttftMs } = lease;
    this.events.released({ targetId: state.id, strategy: this.strategy, kind, outcome, model, durationMs, ttftMs, info, predictedCachedTokens: predicted, verdict });
    if (lease.shadowTicket !== undefined) this.shadow?.released(lease.shadowTicket, outcome, lease.sawFirstByte, info);
    if (!state.active && state.inflight === 0 && this.statesById.get(state.id) === state) this.statesById.delete(state.id);
  }

  /** @internal */
  shadowFirstByte(ticket: ShadowTicket): void {
    this.shadow?.firstByte(ticket);
  }

  /** @internal */
  now(): number {
    return this.config.clock.now();
  }

  stats(): RouterStats {
    const stats: RouterStats = { ...buildStats([...this.statesById.values()], this.config.clock.now(), this.impl.stats?.()), ...this.background.stats() };
    if (this.shadow !== undefined) stats.shadow = this.shadow.stats();
    return stats;
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

/** The miss ratio stats use with the closed loop off. */
const DEFAULT_RATIO = DEFAULT_CLOSED_LOOP.ratio;
