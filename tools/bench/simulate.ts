/**
 * One simulated run: a scenario's request sequence replayed through one policy configuration on
 * a fresh {@link VirtualFleet}, measured into one {@link BenchRow}.
 *
 * Simulation loop, per request in arrival order: apply due scale events, `fleet.advanceTo(arrival)`
 * (completions fire and release their routing leases), `policy.route(request)` (timed on the wall
 * clock: the only non-simulated measurement), `fleet.submit(...)`; at the end `runUntilIdle()`.
 * Everything except the `wall` field of a row is a pure function of the scenario and the policy.
 */
import { DEFAULT_ENGINE_CONFIG, type EngineConfig } from "../fleet/config.js";
import { cacheNamespace } from "../fleet/cache-salt.js";
import type { VirtualResult } from "../fleet/engine.js";
import { isFleetError } from "../fleet/errors.js";
import { kvEventBlockSize } from "../fleet/kv-events/slot-blocks.js";
import { renderPrompt } from "../fleet/template.js";
import { blockKeys, countTokens } from "../fleet/tokenizer.js";
import { VirtualFleet } from "../fleet/virtual.js";
import { Rng, mix32 } from "../sim/random.js";
import { IdealCache, RunRecorder } from "./metrics.js";
import type { AppliedScaleEvent, RunMetrics, ScaleEventResult } from "./metrics.js";
import type { Policy, PolicyFactory, ShadowSetting } from "./policies.js";
import { BenchError } from "../common/errors.js";
import { FineSeries, type RestartEvent, type RestartResult } from "./restarts.js";
import type { BenchRequest, Workload } from "./workload.js";
import { type LoadViewModelParams, LoadViewModel, type SharedViewName } from "./load-views.js";
import { DEFAULTS, mergeStats, type RouterStats } from "prefix-router";
import { KvEventHub } from "./kv-feed.js";

/** What `stats().shadow` reports. */
type ShadowStats = NonNullable<RouterStats["shadow"]>;

/** A change of fleet size during a run: `--scale-at 30m:+1`. */
export interface ScaleEvent {
  /** Simulated time, ms from the start of the run. */
  readonly atMs: number;
  /** Instances to add (> 0) or remove (< 0). Removed instances finish their requests, then vanish with their cache. */
  readonly delta: number;
}

/** Wall-clock measurements of a row: they vary between runs and are not part of determinism. */
export interface WallClock {
  /** Routing decisions per second of wall time spent inside `route()`. */
  readonly decisionsPerSecond: number;
  /** Mean wall time of one `route()` call, µs. */
  readonly routeMeanUs: number;
  /** Wall time of the whole simulated run, ms. */
  readonly runMs: number;
}

/** One result row: one policy configuration on one scenario. Rates and shares are fractions of 1. */
export interface BenchRow extends RunMetrics {
  workload: string;
  strategy: string;
  instances: number;
  /** Routing prefix length in characters; `null` for strategies that read no prefix. */
  prefixLength: number | null;
  /** Load-guard threshold; `null` for strategies without one. */
  concurrencyThreshold: number | null;
  capacityTokens: number;
  rateMultiplier: number;
  durationMs: number;
  seed: number;
  /** Independent router processes the requests were spread over (see `BenchOptions.routers`). */
  routers: number;
  /** Requests the engine refused (prompt + output longer than the model's context or the whole cache). */
  rejected: number;
  /** Σ cached tokens / Σ prompt tokens for one infinitely large cache that has seen every earlier request. */
  idealHitRate: number;
  scaleEvents: ScaleEventResult[];
  /** Per `--restart-at` event: the hit-rate gap to the same run without restarts, and the time to recover (restarts.ts). */
  restarts?: RestartResult[];
  /** Wall-clock measurements (not deterministic). */
  wall: WallClock;
  /** The shared load view the router processes used (load-views.ts); absent: `local`. */
  loadView?: SharedViewName;
  /** The modelled source of that view: the engine poll interval, or the Redis round trip and idle refresh. */
  loadViewModel?: Partial<LoadViewModelParams>;
  /** The shadow strategy's figures over every router process (`--shadow`); absent without one. */
  shadow?: ShadowStats;
  /** Policies that read the engines' KV events (`precise-prefix`): the modelled lag, ms of virtual time. */
  kvLagMs?: number;
  /** `precise-prefix`'s own figures, summed over every router process. */
  precise?: PreciseRowStats;
}

/** `precise-prefix`'s figures in a row, over every router process. */
export interface PreciseRowStats {
  /** Decisions taken on tokens and the events, and on `longest-prefix` (no tokens). */
  routedPrecise: number;
  routedApproximate: number;
  /** Responses that reported cached tokens, and those within 10% of the prediction. */
  predictionsTested: number;
  predictionsWithin10Percent: number;
  /** Events delivered to each index. */
  events: number;
}

/** What every policy of a scenario replays: one workload on one fleet, one seed. */
export interface Scenario {
  workload: Workload;
  instances: number;
  capacityTokens: number;
  rateMultiplier: number;
  durationMs: number;
  seed: number;
  routers: number;
}

/** One policy configuration to run on a scenario (`null`: a setting the policy does not read). */
export interface PolicyRun {
  factory: PolicyFactory;
  prefixLength: number | null;
  concurrencyThreshold: number | null;
  /** A shared load view and its model's parameters; absent: each process's local view. */
  loadView?: { name: SharedViewName; params: LoadViewModelParams };
  /** A shadow strategy beside the policy (`--shadow`); absent: none. */
  shadow?: ShadowSetting;
  /** For a policy that reads KV events: their lag from the engine to the routers, ms of virtual time. */
  kvLagMs?: number;
}

/** Instance ids at the start of a run: `i0`, `i1`, … (the fleet's default ids). */
function initialIds(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `i${i}`);
}

/** The strategy-independent ideal hit rates of a scenario, computed during its first run. */
export interface IdealTotals {
  hitRate: number;
  /** Per arrival bucket: ideal cached tokens and prompt tokens. */
  cached: number[];
  prompt: number[];
}

/** Requests between two yields to the event loop (and progress reports). */
const YIELD_EVERY = 2048;

/**
 * Runs `run` on `sc` and returns its row, and the scenario's ideal hit rates: computed here when
 * `knownIdeal` is undefined (the scenario's first run), else taken from it — they do not depend
 * on the policy.
 */
export async function simulate(
  sc: Scenario,
  run: PolicyRun,
  scaleEvents: readonly ScaleEvent[],
  engine: Partial<EngineConfig> | undefined,
  knownIdeal: IdealTotals | undefined,
  progress: (simMs: number) => void,
  restarts: readonly RestartEvent[] = [],
): Promise<{ row: BenchRow; ideal: IdealTotals; fine: FineSeries }> {
  const wallStart = performance.now();
  const blockTokens = engine?.blockSizeTokens ?? DEFAULT_ENGINE_CONFIG.blockSizeTokens;
  const engineConfig: Partial<EngineConfig> = {
    ...engine,
    numGpuBlocks: Math.floor(sc.capacityTokens / blockTokens),
  };
  let ids = initialIds(sc.instances);
  let nextId = sc.instances;
  // Only a policy that reads KV events gets a publishing fleet (same tokens, same timings). Its
  // events' blocks are the engine's, but 16 tokens for a slot engine counting reuse by the token.
  const eventBlockTokens = kvEventBlockSize({ slots: engine?.slots ?? DEFAULT_ENGINE_CONFIG.slots, blockSizeTokens: blockTokens });
  const hub = run.factory.usesKvEvents === true ? new KvEventHub(run.kvLagMs ?? 0, eventBlockTokens) : undefined;
  const fleet = new VirtualFleet({ instances: ids, engine: engineConfig, seed: sc.seed, ...(hub && { kvEvents: hub.push }) });
  const bucketMs = Math.max(1000, Math.round(sc.durationMs / 120 / 1000) * 1000);
  const recorder = new RunRecorder({ bucketMs });
  for (const id of ids) recorder.registerInstance(id);
  const lv = run.loadView;
  const model = lv === undefined ? undefined : new LoadViewModel(lv.name, sc.routers, lv.params, fleet, mix32(sc.seed, 0x10ad));
  // One policy per router process: same configuration and seed, own random stream and state.
  const policies: Policy[] = [];
  for (let k = 0; k < sc.routers; k++) {
    policies.push(
      await run.factory.create({
        targets: ids,
        prefixLength: run.prefixLength ?? DEFAULTS.prefixLength,
        concurrencyThreshold: run.concurrencyThreshold ?? DEFAULTS.concurrencyThreshold,
        seed: sc.seed,
        random: new Rng(k === 0 ? mix32(sc.seed, 0x2047e) : mix32(sc.seed, 0x2047e, k)).asFunction(),
        clock: { now: () => fleet.now },
        ...(model && { loadView: model.views[k] }),
        ...(run.shadow && { shadow: run.shadow }),
        ...(hub && { kvEvents: hub }),
      }),
    );
  }
  // Which process each request goes through: its own stream, so the sequence does not depend on it.
  const front = new Rng(mix32(sc.seed, 0x707e5));
  const ideal = knownIdeal === undefined ? new IdealCache(blockTokens) : undefined;
  const idealCached: number[] = [];
  const idealPrompt: number[] = [];
  const applied: AppliedScaleEvent[] = [];
  let nextEvent = 0;
  let nextRestart = 0;
  const fine = new FineSeries();
  let rejected = 0;
  let routeMs = 0;
  let decisions = 0;
  let count = 0;

  // With a modelled load view, its events and the fleet's run in one time order.
  const advanceTo = (t: number) => {
    // Fleet events one at a time: a release may schedule a model event before the next one.
    while (model !== undefined) {
      const te = model.nextEventMs();
      const tf = fleet.nextEventMs();
      if (te > t && tf > t) break;
      if (tf < te) fleet.advanceTo(tf);
      else {
        fleet.advanceTo(te);
        model.runNext();
      }
    }
    fleet.advanceTo(t);
  };

  const applyScale = (e: ScaleEvent) => {
    advanceTo(Math.max(fleet.now, e.atMs));
    if (e.delta > 0) {
      for (let k = 0; k < e.delta; k++) {
        const id = `i${nextId++}`;
        fleet.addInstance(id);
        recorder.registerInstance(id);
        ids = [...ids, id];
      }
    } else {
      const removed = ids.slice(ids.length + e.delta);
      ids = ids.slice(0, ids.length + e.delta);
      for (const id of removed) fleet.removeInstance(id);
    }
    for (const policy of policies) policy.setTargets(ids);
    applied.push({ atMs: e.atMs, delta: e.delta, instances: ids.length });
  };

  const requests: Iterable<BenchRequest> = sc.workload.requests({
    seed: sc.seed,
    durationMs: sc.durationMs,
    rateMultiplier: sc.rateMultiplier,
  });
  const applyRestart = (e: RestartEvent) => {
    advanceTo(Math.max(fleet.now, e.atMs));
    if (!ids.includes(e.instance)) {
      throw new BenchError("ERR_BENCH_OPTION", `Cannot restart \`${e.instance}\` at ${e.atMs} ms: the fleet has ${ids.join(", ")}`);
    }
    fleet.restartInstance(e.instance, e.downMs ?? 0);
  };

  for (const req of requests) {
    while (nextEvent < scaleEvents.length && scaleEvents[nextEvent]!.atMs <= req.arrivalMs) {
      const e = scaleEvents[nextEvent++]!;
      if (e.atMs < sc.durationMs) applyScale(e);
    }
    while (nextRestart < restarts.length && restarts[nextRestart]!.atMs <= req.arrivalMs) applyRestart(restarts[nextRestart++]!);
    advanceTo(req.arrivalMs);
    const prompt = renderPrompt(req.body);
    // Events reach the indexes before the decision, outside its timing (a feed applies them between requests).
    hub?.deliverUntil(fleet.now);
    const t0 = performance.now();
    const policy = sc.routers === 1 ? (policies[0] as Policy) : (policies[front.int(sc.routers)] as Policy);
    let decision = policy.route(req);
    routeMs += performance.now() - t0;
    decisions++;
    let accepted = false;
    for (let attempt = 1; ; attempt++) {
      const current = decision;
      try {
        const salt = req.cacheSalt === undefined ? {} : { cacheSalt: req.cacheSalt };
        fleet.submit(current.targetId, { id: req.id, prompt, outputTokens: req.outputTokens, model: req.body.model, ...salt }, {
          onFirstToken() {
            current.firstToken?.();
          },
          onDone(result: VirtualResult) {
            current.release({ promptTokens: result.promptTokens, cachedTokens: result.cachedTokens });
            recorder.recordCompletion(result);
            fine.record(result.arrivalMs, result.promptTokens, result.cachedTokens);
          },
        });
        accepted = true;
        break;
      } catch (e) {
        if (isFleetError(e) && e.code === "INSTANCE_DOWN" && attempt < ids.length) {
          if (current.refused === undefined) {
            throw new BenchError("ERR_BENCH_OPTION", `\`${run.factory.name}\` cannot route around an instance that is down: run restarts with downtime with prefix-router's strategies`);
          }
          decision = current.refused();
          continue;
        }
        current.release();
        // Too long for the model, or every instance down at once: the request is refused.
        if (isFleetError(e) && (e.code === "PROMPT_TOO_LONG" || e.code === "INSTANCE_DOWN")) {
          rejected++;
          break;
        }
        throw e;
      }
    }
    if (!accepted) continue;
    recorder.recordDecision(decision.targetId, decision.spilled);
    if (ideal !== undefined) {
      const promptTokens = countTokens(prompt);
      const cached = ideal.observe(blockKeys(prompt, blockTokens, cacheNamespace(req.body.model, req.cacheSalt)), promptTokens);
      const b = Math.floor(req.arrivalMs / bucketMs);
      idealCached[b] = (idealCached[b] ?? 0) + cached;
      idealPrompt[b] = (idealPrompt[b] ?? 0) + promptTokens;
    }
    if (++count % YIELD_EVERY === 0) {
      progress(req.arrivalMs);
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
  while (nextEvent < scaleEvents.length) {
    const e = scaleEvents[nextEvent++]!;
    if (e.atMs < sc.durationMs) applyScale(e);
  }
  fleet.runUntilIdle();
  progress(sc.durationMs);

  const idealTotals: IdealTotals = knownIdeal ?? {
    hitRate: ideal!.hitRate,
    cached: Array.from({ length: idealPrompt.length }, (_, b) => idealCached[b] ?? 0),
    prompt: Array.from({ length: idealPrompt.length }, (_, b) => idealPrompt[b] ?? 0),
  };
  for (let b = 0; b < idealTotals.prompt.length; b++) {
    if (idealTotals.prompt[b]! > 0) recorder.recordIdeal(b * bucketMs, idealTotals.prompt[b]!, idealTotals.cached[b]!);
  }
  const m = recorder.finish();
  const shadow = run.shadow === undefined ? undefined : mergeStats(policies.flatMap((p) => (p.stats === undefined ? [] : [p.stats()]))).shadow;
  const routeS = routeMs / 1000;
  const row: BenchRow = {
    workload: sc.workload.name,
    strategy: run.factory.name,
    instances: sc.instances,
    prefixLength: run.prefixLength,
    concurrencyThreshold: run.concurrencyThreshold,
    capacityTokens: sc.capacityTokens,
    rateMultiplier: sc.rateMultiplier,
    durationMs: sc.durationMs,
    seed: sc.seed,
    routers: sc.routers,
    requests: m.requests,
    rejected,
    ttftP50Ms: round(m.ttftP50Ms, 3),
    ttftP90Ms: round(m.ttftP90Ms, 3),
    ttftP99Ms: round(m.ttftP99Ms, 3),
    ttftMeanMs: round(m.ttftMeanMs, 3),
    queueMeanMs: round(m.queueMeanMs, 3),
    tokenHitRate: round(m.tokenHitRate, 6),
    idealHitRate: round(idealTotals.hitRate, 6),
    throughput: round(m.throughput, 4),
    outputTokensPerSecond: round(m.outputTokensPerSecond, 2),
    spilloverRate: round(m.spilloverRate, 6),
    minShare: round(m.minShare, 6),
    maxShare: round(m.maxShare, 6),
    instanceShares: Object.fromEntries(Object.entries(m.instanceShares).map(([k, v]) => [k, round(v, 6)])),
    ttftCdf: m.ttftCdf.map(([p, v]) => [p, round(v, 3)]),
    bucketMs,
    hitRateSeries: m.hitRateSeries.map((p) => ({
      tMs: p.tMs,
      hitRate: p.hitRate === null ? null : round(p.hitRate, 6),
      idealHitRate: p.idealHitRate === null ? null : round(p.idealHitRate, 6),
      requests: p.requests,
    })),
    scaleEvents: recorder.analyzeScaleEvents(applied, sc.durationMs).map((e) => ({
      ...e,
      baselineHitRate: e.baselineHitRate === null ? null : round(e.baselineHitRate, 6),
      minHitRate: e.minHitRate === null ? null : round(e.minHitRate, 6),
      dip: e.dip === null ? null : round(e.dip, 6),
    })),
    wall: {
      decisionsPerSecond: routeS > 0 ? Math.round(decisions / routeS) : 0,
      routeMeanUs: decisions > 0 ? round((routeMs * 1000) / decisions, 3) : 0,
      runMs: Math.round(performance.now() - wallStart),
    },
    ...(lv && {
      loadView: lv.name,
      loadViewModel: lv.name !== "redis" ? { enginePollMs: lv.params.enginePollMs } : { redisRttMs: lv.params.redisRttMs, redisRefreshMs: lv.params.redisRefreshMs, redisIdleRefreshMs: lv.params.redisIdleRefreshMs },
    }),
  };
  if (shadow !== undefined) row.shadow = shadow;
  if (hub !== undefined) {
    row.kvLagMs = hub.lagMs;
    row.precise = preciseStats(policies, hub);
  }
  return { row, ideal: idealTotals, fine };
}

/** `precise-prefix`'s figures, summed over the router processes. */
function preciseStats(policies: readonly Policy[], hub: KvEventHub): PreciseRowStats {
  const out: PreciseRowStats = { routedPrecise: 0, routedApproximate: 0, predictionsTested: 0, predictionsWithin10Percent: 0, events: 0 };
  for (const p of policies) {
    const s = (p.stats?.() as { precise?: { routed: { precise: number; approximate: number }; predictions: { tested: number; within10Percent: number } } } | undefined)?.precise;
    if (s === undefined) continue;
    out.routedPrecise += s.routed.precise;
    out.routedApproximate += s.routed.approximate;
    out.predictionsTested += s.predictions.tested;
    out.predictionsWithin10Percent += s.predictions.within10Percent;
  }
  out.events = hub.stats().events;
  return out;
}

function round(v: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}
