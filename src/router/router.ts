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
import { RouterError } from "../errors.js";
import { hexKey } from "../internal/hex.js";
import { describe, quoteShort } from "../internal/validate.js";
import { type LeaseOwner, RouterLease } from "./lease.js";
import { type Config, type RouterInternals, type RouterOptions, validateOptions, validateTargets } from "../options.js";
import { type Prepared, prepare } from "./prepared.js";
import { RouterEvents } from "./router-events.js";
import { spillCauses } from "./spill-storm.js";
import { PrefixKeyReader } from "../routing/prefix-key.js";
import { registryEnv } from "./strategy-env.js";
import { KeyHasher, loadHasher } from "../routing/routing-key.js";
import type { RoutingMode } from "../routing/routing-input.js";
import { DecisionView, Snapshot, type ViewSettings } from "./snapshot.js";
import { KIND_COUNTER, buildStats } from "./stats.js";
import { DEFAULT_CLOSED_LOOP } from "../closed-loop/closed-loop.js";
import { createStrategy, defaultRanking, ignoredSettings, rawInputLength } from "../strategies/index.js";
import type { Commitment, RoutingStrategy, StrategyPick } from "../strategies/strategy.js";
import { type TargetState, TargetStates } from "./target-state.js";
import { explainPick } from "./reason.js";
import { Shadow, type ShadowTicket } from "./shadow.js";
import { TELEMETRY, loadTelemetry } from "../telemetry/load.js";
import type { DecisionReason, Lease, LeaseOutcome, ReleaseInfo, RouteOptions, RouteRequest, StrategyName, TargetSpec } from "../types.js";
import type { PreparedRequest, Ranking, Router, RouterStats } from "./types.js";

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
  return createRouterWith(options, {});
}

/** @internal {@link createRouter} with what an adapter adds beside the user's options ({@link RouterInternals}). */
export async function createRouterWith<T extends TargetSpec>(options: RouterOptions<T>, internals: RouterInternals): Promise<Router<T>> {
  const config = validateOptions(options, internals);
  const [api, telemetry] = await Promise.all([loadHasher(), loadTelemetry(config.telemetry, config.clock)]);
  const background = await Background.create(config.background, config.clock, {
    concurrencyThreshold: config.concurrencyThreshold,
    random: config.random,
    logger: config.logger,
    setFailing: (id, failing) => router?.setFailing(id, failing),
  });
  const hasher = new KeyHasher(api, config.seed);
  const { mode, prefixLength } = config;
  // The strategy reports forgotten targets to the router, which exists once the strategy does.
  let router: PrefixRouter<T> | undefined;
  const env = registryEnv(config, { xxhash: api, keys: new PrefixKeyReader(hasher, config), forgot: (id, entries) => router?.forgot(id, entries) });
  const strategy = createStrategy(config.strategy, env);
  // Routing input a raw-prefix stand-in covers: as much as any strategy of this router reads.
  const rawUnits = rawInputLength(prefixLength, config.strategies);
  // The shadow's own instance: its closed loop off (the responses come from the live targets) and
  // its forgetting never reported as the router's.
  const shadow =
    config.shadow === undefined
      ? undefined
      : new Shadow<T>(createStrategy<T>(config.shadow.strategy, { ...env, closedLoop: undefined, forgot: () => {} }), config.shadow.placement, config.seed, mode, rawUnits);
  const events = new RouterEvents(config.logger, telemetry, strategy.name, config.concurrencyThreshold);
  for (const key of ignoredSettings(options, strategy.name)) {
    events.ignored(`\`${key}\` is set but the strategy is ${JSON.stringify(strategy.name)}: the settings are ignored`);
  }
  try {
    router = new PrefixRouter<T>(config, { hasher, impl: strategy, defaultRanking: defaultRanking(env), events, background, shadow, rawUnits });
    await background.start(router);
  } catch (error) {
    // Targets a background feature cannot use, or a failed first membership refresh: nothing
    // may stay open (a Redis connection, a timer).
    await background.close();
    throw error;
  }
  return router;
}

/** What a router is made of beside its settings. */
interface RouterParts<T extends TargetSpec> {
  readonly hasher: KeyHasher;
  readonly impl: RoutingStrategy<T>;
  /** The ranking `rank()` reports for strategies that define none: rendezvous over the routing key. */
  readonly defaultRanking: ReturnType<typeof defaultRanking>;
  readonly events: RouterEvents;
  /** Load view, membership and health checks (background.ts). */
  readonly background: Background<T>;
  /** The shadow strategy (`RouterOptions.shadow`), never acted on. */
  readonly shadow: Shadow<T> | undefined;
  /** Routing input a raw-prefix stand-in covers: as much as any strategy of this router reads. */
  readonly rawUnits: number;
}

/** One pick on its way to a lease (see `take`). */
interface Taking<T extends TargetSpec> {
  readonly snap: Snapshot<T>;
  readonly pick: StrategyPick;
  readonly prepared: Prepared;
  readonly attempt: number;
  readonly now: number;
  /** A retry (the request excluded targets it tried). */
  readonly retry: boolean;
  readonly reason: DecisionReason | undefined;
}

class PrefixRouter<T extends TargetSpec> implements Router<T>, LeaseOwner {
  readonly strategy: StrategyName;
  readonly mode: RoutingMode;
  readonly prefixLength: number;
  readonly concurrencyThreshold: number;
  private snapshot!: Snapshot<T>;
  /** Every state by id: current targets, and removed ones while they have open leases. */
  private readonly states = new TargetStates();
  private readonly hasher: KeyHasher;
  private readonly impl: RoutingStrategy<T>;
  private readonly defaultRanking: RouterParts<T>["defaultRanking"];
  private readonly events: RouterEvents;
  private readonly background: Background<T>;
  private readonly shadow: Shadow<T> | undefined;
  private readonly rawUnits: number;
  /** What every decision's view shares. */
  private readonly viewSettings: ViewSettings;

  constructor(
    private readonly config: Config<T>,
    parts: RouterParts<T>,
  ) {
    ({ hasher: this.hasher, impl: this.impl, defaultRanking: this.defaultRanking, events: this.events } = parts);
    ({ background: this.background, shadow: this.shadow, rawUnits: this.rawUnits } = parts);
    this.strategy = this.impl.name;
    Object.defineProperty(this, TELEMETRY, { value: this.events.telemetry });
    this.mode = config.mode;
    this.prefixLength = config.prefixLength;
    this.concurrencyThreshold = config.concurrencyThreshold;
    this.viewSettings = { concurrencyThreshold: config.concurrencyThreshold, random: config.random, load: () => this.background.reader?.current() };
    config.targetCheck?.(config.targets);
    this.background.validate(config.targets);
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
    const states = this.states.install(list, (id) => this.background.failing(id));
    this.snapshot = new Snapshot(list, states, (id) => this.hasher.targetHash(id));
    this.background.install(list);
    this.impl.setTargets?.(list);
    this.shadow?.setTargets(list);
    this.events.targetsSet(list, this.impl.read !== undefined);
  }

  prepare(request: RouteRequest): PreparedRequest {
    return prepare(this, request, this.mode);
  }

  settle(request: PreparedRequest): Promise<void> | undefined {
    return this.impl.settle?.(prepare(this, request, this.mode));
  }

  route(request: RouteRequest | PreparedRequest, options?: RouteOptions): Lease<T> {
    const { exclude, attempt, explain } = checkRouteOptions(options);
    const snap = this.snapshot;
    const prepared = prepare(this, request, this.mode);
    const now = this.config.clock.now();
    if (options?.target !== undefined) return this.routeTo(options.target, prepared, { attempt, now, explain });
    const view = new DecisionView(snap, snap.eligible(prepared.model), exclude, now, this.viewSettings);
    const input = this.inputOf(prepared);
    const pick = this.impl.pick(view, input);
    // The shadow picks on the same view, after the live pick, and only for a first attempt.
    const shadow = this.shadow;
    const shadowPick = shadow === undefined || exclude !== undefined ? undefined : shadow.pick(view, prepared);
    const reason = explain || this.config.onDecision !== undefined ? explainPick(view, pick, () => this.firstChoice(view, prepared)) : undefined;
    // The commit hook is an argument, not a property: tools that keep names (tsx) name property functions per call.
    const lease = this.take({ snap, pick, prepared, attempt, now, retry: exclude !== undefined, reason }, () => this.impl.commit?.(view, pick, input));
    if (shadowPick !== undefined) lease.shadowTicket = shadow?.commit(view, shadowPick, pick);
    return lease;
  }

  /** The key's first choice, ignoring load: for a reason's `preferred` (called only when a pick went elsewhere). */
  private firstChoice(view: DecisionView<T>, prepared: Prepared): number | undefined {
    return this.ranking(view, prepared).order[0];
  }

  /** The strategy's ranking of the view's candidates, or the default one (rendezvous over the routing key). */
  private ranking(view: DecisionView<T>, prepared: Prepared) {
    if (this.impl.rank !== undefined) return this.impl.rank(view, this.inputOf(prepared));
    prepared.rankingKey ??= prepared.readInput((p) => this.defaultRanking.read(p), this.mode, this.rawUnits);
    return this.defaultRanking.rank(view, prepared.rankingKey);
  }

  /** Announces a pick (`onDecision`), commits it and opens its lease: the one way a target is taken. */
  private take(taking: Taking<T>, commit: () => Commitment | undefined): RouterLease<T> {
    const { snap, pick, prepared, attempt, now, reason } = taking;
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
    this.events.picked(target.id, pick.kind, this.config.clock.now() - now, this.spillCauses, taking.retry);
    const { kind, rank } = pick;
    const { model, inputKind: input } = prepared;
    return new RouterLease(this, state, { target, kind, rank, model, rawKey: key, attempt, startMs: now, predictedCachedTokens, commitment, input, reason });
  }

  /** The pick the caller named: no strategy, no commitment; see {@link RouteOptions.target}. */
  private routeTo(id: string, prepared: Prepared, call: { attempt: number; now: number; explain: boolean }): Lease<T> {
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
      call.explain || this.config.onDecision !== undefined
        ? { kind: "affinity", rank: 0, inflight: (snap.states[index] as TargetState).inflight, threshold: this.concurrencyThreshold }
        : undefined;
    const pick: StrategyPick = { index, kind: "affinity", rank: 0 };
    return this.take({ snap, pick, prepared, attempt: call.attempt, now: call.now, retry: false, reason }, () => undefined);
  }

  rank(request: RouteRequest | PreparedRequest): Ranking<T> {
    const snap = this.snapshot;
    const prepared = prepare(this, request, this.mode);
    const view = new DecisionView(snap, snap.eligible(prepared.model), undefined, this.config.clock.now(), this.viewSettings);
    const ranking = this.ranking(view, prepared);
    return { key: hexKey(ranking.key), targets: ranking.order.map((i) => snap.targets[i] as T) };
  }

  /** Why a pick may miss its first choice now (spill-storm.ts); made once, called rarely. */
  private readonly spillCauses = () => spillCauses(this.snapshot, this.background.reader?.current(), this.config.clock.now(), this.concurrencyThreshold);

  /** @internal The strategy forgot what it believed target `id` caches (closed loop). */
  forgot(id: string, entries: number): void {
    const state = this.states.get(id);
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
  private inputOf(prepared: Prepared): unknown {
    const impl = this.impl;
    if (prepared.input === undefined && impl.read !== undefined) prepared.input = prepared.readInput((p) => impl.read?.(p), this.mode, this.rawUnits);
    return prepared.input;
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
    const verdict = state.recordUsage(predicted, outcome, info, this.config.closedLoop?.ratio ?? DEFAULT_RATIO);
    const { kind, model, ttftMs } = lease;
    this.events.released({ targetId: state.id, strategy: this.strategy, kind, outcome, model, durationMs, ttftMs, info, predictedCachedTokens: predicted, verdict });
    if (lease.shadowTicket !== undefined) this.shadow?.released(lease.shadowTicket, outcome, lease.sawFirstByte, info);
    this.states.retire(state);
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
    const stats: RouterStats = { ...buildStats(this.states.all(), this.config.clock.now(), this.impl.stats?.()), ...this.background.stats() };
    if (this.shadow !== undefined) stats.shadow = this.shadow.stats();
    return stats;
  }

  /** @internal Active health checks take target `id` out, or bring it back. */
  setFailing(id: string, failing: boolean): void {
    const state = this.states.get(id);
    if (state !== undefined) state.failingHealthCheck = failing;
  }

  close(): Promise<void> {
    return this.background.close();
  }
}

/** The miss ratio stats use with the closed loop off. */
const DEFAULT_RATIO = DEFAULT_CLOSED_LOOP.ratio;
