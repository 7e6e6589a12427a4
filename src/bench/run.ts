/**
 * The benchmark driver: every requested combination of workload, fleet size, cache capacity,
 * rate multiplier, duration and seed is a *scenario*; every strategy (and, for strategies that
 * read a prefix, every prefix length × concurrency threshold) replays the scenario's request
 * sequence on a fresh {@link VirtualFleet} and yields one {@link BenchRow}.
 *
 * Simulation loop, per request in arrival order: apply due scale events, `fleet.advanceTo(arrival)`
 * (completions fire and release their routing leases), `policy.route(request)` (timed on the wall
 * clock: the only non-simulated measurement), `fleet.submit(...)`; at the end `runUntilIdle()`.
 * Everything except the `wall` field of a row is a pure function of the options.
 */
import { DEFAULT_CONCURRENCY_THRESHOLD, DEFAULT_PREFIX_LENGTH } from "../index.js";
import { DEFAULT_ENGINE_CONFIG, VirtualFleet, blockKeys, countTokens, isFleetError, renderPrompt } from "../fleet/index.js";
import type { EngineConfig, VirtualResult } from "../fleet/index.js";
import { BenchError } from "./errors.js";
import { IdealCache, RunRecorder } from "./metrics.js";
import type { AppliedScaleEvent, RunMetrics, ScaleEventResult } from "./metrics.js";
import { BENCH_STRATEGIES, policyByName } from "./registry.js";
import type { Policy, PolicyFactory } from "./policies.js";
import { Rng, mix32 } from "../sim/random.js";
import { WORKLOAD_NAMES, builtinWorkload } from "./workloads.js";
import type { BenchRequest, Workload, WorkloadName } from "./workloads.js";

/** A change of fleet size during a run: `--scale-at 30m:+1`. */
export interface ScaleEvent {
  /** Simulated time, ms from the start of the run. */
  readonly atMs: number;
  /** Instances to add (> 0) or remove (< 0). Removed instances finish their requests, then vanish with their cache. */
  readonly delta: number;
}

/** Options of {@link runBenchmark}. Every array sweeps: one row per combination. */
export interface BenchOptions {
  /** Built-in workload names or workload objects. @default all built-in workloads */
  workloads?: readonly (WorkloadName | Workload)[];
  /** Strategy names (prefix-router's, or a peer baseline's `peer:*`) or policy factories. @default BENCH_STRATEGIES (every strategy, then the peer baselines) */
  strategies?: readonly (string | PolicyFactory)[];
  /** Fleet sizes at the start of the run. @default [7] (the AWS benchmark) */
  instances?: readonly number[];
  /**
   * Routing prefix lengths in characters, for strategies that read a prefix.
   * @default the workload's `defaultPrefixLengths`, else [4096] (the router's default)
   */
  prefixLengths?: readonly number[];
  /** Concurrency thresholds, for strategies with a load guard. @default [32] (the router's default) */
  concurrencyThresholds?: readonly number[];
  /** KV-cache capacity per instance, tokens. @default [1_200_000] (the engine's 75,000 blocks of 16) */
  capacityTokens?: readonly number[];
  /** Arrival-rate multipliers. @default [1] */
  rateMultipliers?: readonly number[];
  /** Simulated durations, ms. @default the workload's `defaultDurationMs` */
  durationsMs?: readonly number[];
  /** Seeds. @default [1] */
  seeds?: readonly number[];
  /**
   * Independent router processes in front of the fleet (application replicas that each embed the
   * router): each request goes through one of them, chosen uniformly at random per request (a
   * stateless load balancer in front of the application, the hardest case for strategies that
   * learn from what they routed). Each has its own in-flight counts and, for `longest-prefix`, its
   * own index; they share the configuration, seed included. @default [1]
   */
  routers?: readonly number[];
  /** Scale events applied in every run, in time order. @default [] */
  scaleEvents?: readonly ScaleEvent[];
  /** Engine parameter overrides for every instance (capacity is set by `capacityTokens`). */
  engine?: Partial<EngineConfig>;
  /** Called as the runs advance (at most every few thousand requests). */
  onProgress?: (progress: BenchProgress) => void;
}

/** Progress of {@link runBenchmark}. */
export interface BenchProgress {
  /** 0-based index of the current run. */
  readonly run: number;
  /** Number of runs. */
  readonly runs: number;
  /** `workload/strategy` of the current run. */
  readonly label: string;
  /** Fraction of all simulated time done, 0..1. */
  readonly fraction: number;
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
  /** Wall-clock measurements (not deterministic). */
  wall: WallClock;
}

/** Instance ids at the start of a run: `i0`, `i1`, … (the fleet's default ids). */
function initialIds(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `i${i}`);
}

interface Scenario {
  workload: Workload;
  instances: number;
  capacityTokens: number;
  rateMultiplier: number;
  durationMs: number;
  seed: number;
  routers: number;
}

interface PolicyRun {
  factory: PolicyFactory;
  prefixLength: number | null;
  concurrencyThreshold: number | null;
}

/**
 * Runs the benchmark and returns one row per (scenario × policy configuration), in the order
 * workloads → instances → capacity → rate → duration → seed → routers → strategy → prefix length →
 * threshold.
 *
 * @throws {BenchError} `ERR_BENCH_OPTION` for an unknown workload or strategy, or a value out of range
 * @example
 * const rows = await runBenchmark({ workloads: ["long-context"], durationsMs: [600_000] });
 */
export async function runBenchmark(options: BenchOptions = {}): Promise<BenchRow[]> {
  const workloads = (options.workloads ?? WORKLOAD_NAMES).map((w) => {
    if (typeof w !== "string") return w;
    if (!(WORKLOAD_NAMES as readonly string[]).includes(w)) {
      throw new BenchError("ERR_BENCH_OPTION", `Unknown workload \`${w}\`; expected one of ${WORKLOAD_NAMES.join(", ")}`);
    }
    return builtinWorkload(w);
  });
  const factories = (options.strategies ?? BENCH_STRATEGIES).map((s) => {
    if (typeof s !== "string") return s;
    const f = policyByName(s);
    if (f === undefined) {
      throw new BenchError("ERR_BENCH_OPTION", `Unknown strategy \`${s}\`; expected one of ${BENCH_STRATEGIES.join(", ")}`);
    }
    return f;
  });
  const blockTokens = options.engine?.blockSizeTokens ?? DEFAULT_ENGINE_CONFIG.blockSizeTokens;
  const instances = checkList("instances", options.instances ?? [7], (v) => Number.isInteger(v) && v >= 1 && v <= 4096, "integers from 1 to 4096");
  const capacities = checkList(
    "capacityTokens",
    options.capacityTokens ?? [DEFAULT_ENGINE_CONFIG.numGpuBlocks * blockTokens],
    (v) => Number.isInteger(v) && v >= blockTokens,
    `integers ≥ ${blockTokens} (one block)`,
  );
  const rates = checkList("rateMultipliers", options.rateMultipliers ?? [1], (v) => Number.isFinite(v) && v > 0, "numbers > 0");
  const seeds = checkList("seeds", options.seeds ?? [1], (v) => Number.isSafeInteger(v) && v >= 0, "integers ≥ 0");
  const routerCounts = checkList("routers", options.routers ?? [1], (v) => Number.isInteger(v) && v >= 1 && v <= 256, "integers from 1 to 256");
  const thresholds = checkList(
    "concurrencyThresholds",
    options.concurrencyThresholds ?? [DEFAULT_CONCURRENCY_THRESHOLD],
    (v) => Number.isInteger(v) && v >= 1 && v <= 1024,
    "integers from 1 to 1024",
  );
  if (options.prefixLengths !== undefined) {
    checkList("prefixLengths", options.prefixLengths, (v) => Number.isInteger(v) && v >= 1024 && v <= 65_536, "integers from 1024 to 65536");
  }
  if (options.durationsMs !== undefined) {
    checkList("durationsMs", options.durationsMs, (v) => Number.isFinite(v) && v > 0, "numbers of ms > 0");
  }
  const scaleEvents = [...(options.scaleEvents ?? [])];
  for (const e of scaleEvents) {
    if (!Number.isFinite(e.atMs) || e.atMs < 0 || !Number.isInteger(e.delta) || e.delta === 0) {
      throw new BenchError("ERR_BENCH_OPTION", `Expected a scale event as { atMs ≥ 0, delta: non-zero integer }, got ${JSON.stringify(e)}`);
    }
  }
  scaleEvents.sort((a, b) => a.atMs - b.atMs);

  const plan: { scenario: Scenario; runs: PolicyRun[] }[] = [];
  for (const workload of workloads) {
    const prefixLengths = options.prefixLengths ?? workload.defaultPrefixLengths ?? [DEFAULT_PREFIX_LENGTH];
    for (const n of instances)
      for (const capacityTokens of capacities)
        for (const rateMultiplier of rates)
          for (const durationMs of options.durationsMs ?? [workload.defaultDurationMs])
            for (const seed of seeds)
              for (const routers of routerCounts) {
                let size = n;
                for (const e of scaleEvents) {
                  size += e.delta;
                  if (size < 1) {
                    throw new BenchError(
                      "ERR_BENCH_OPTION",
                      `Scale event at ${e.atMs} ms would leave ${size} instances (starting from ${n}); at least 1 must remain`,
                    );
                  }
                }
                const runs: PolicyRun[] = [];
                for (const factory of factories) {
                  for (const prefixLength of factory.usesPrefixLength ? prefixLengths : [null])
                    for (const concurrencyThreshold of factory.usesConcurrencyThreshold ? thresholds : [null])
                      runs.push({ factory, prefixLength, concurrencyThreshold });
                }
                plan.push({ scenario: { workload, instances: n, capacityTokens, rateMultiplier, durationMs, seed, routers }, runs });
              }
  }

  const totalMs = plan.reduce((s, p) => s + p.scenario.durationMs * p.runs.length, 0);
  const runCount = plan.reduce((s, p) => s + p.runs.length, 0);
  let doneMs = 0;
  let runIndex = 0;
  const rows: BenchRow[] = [];
  for (const { scenario, runs } of plan) {
    let ideal: IdealTotals | undefined;
    for (const run of runs) {
      const label = `${scenario.workload.name}/${run.factory.name}`;
      const base = doneMs;
      const row = await simulate(scenario, run, scaleEvents, options.engine, ideal, (simMs) => {
        options.onProgress?.({
          run: runIndex,
          runs: runCount,
          label,
          fraction: totalMs === 0 ? 1 : Math.min(1, (base + simMs) / totalMs),
        });
      });
      ideal = row.ideal;
      rows.push(row.row);
      doneMs += scenario.durationMs;
      runIndex++;
    }
  }
  options.onProgress?.({ run: runCount, runs: runCount, label: "done", fraction: 1 });
  return rows;
}

/** The strategy-independent ideal hit rates of a scenario, computed during its first run. */
interface IdealTotals {
  hitRate: number;
  /** Per arrival bucket: ideal cached tokens and prompt tokens. */
  cached: number[];
  prompt: number[];
}

const YIELD_EVERY = 2048;

async function simulate(
  sc: Scenario,
  run: PolicyRun,
  scaleEvents: readonly ScaleEvent[],
  engine: Partial<EngineConfig> | undefined,
  knownIdeal: IdealTotals | undefined,
  progress: (simMs: number) => void,
): Promise<{ row: BenchRow; ideal: IdealTotals }> {
  const wallStart = performance.now();
  const blockTokens = engine?.blockSizeTokens ?? DEFAULT_ENGINE_CONFIG.blockSizeTokens;
  const engineConfig: Partial<EngineConfig> = {
    ...engine,
    numGpuBlocks: Math.floor(sc.capacityTokens / blockTokens),
  };
  let ids = initialIds(sc.instances);
  let nextId = sc.instances;
  const fleet = new VirtualFleet({ instances: ids, engine: engineConfig, seed: sc.seed });
  const bucketMs = Math.max(1000, Math.round(sc.durationMs / 120 / 1000) * 1000);
  const recorder = new RunRecorder({ bucketMs });
  for (const id of ids) recorder.registerInstance(id);
  // One policy per router process: same configuration and seed, own random stream and state.
  const policies: Policy[] = [];
  for (let k = 0; k < sc.routers; k++) {
    policies.push(
      await run.factory.create({
        targets: ids,
        prefixLength: run.prefixLength ?? DEFAULT_PREFIX_LENGTH,
        concurrencyThreshold: run.concurrencyThreshold ?? DEFAULT_CONCURRENCY_THRESHOLD,
        seed: sc.seed,
        random: new Rng(k === 0 ? mix32(sc.seed, 0x2047e) : mix32(sc.seed, 0x2047e, k)).asFunction(),
        clock: { now: () => fleet.now },
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
  let rejected = 0;
  let routeMs = 0;
  let decisions = 0;
  let count = 0;

  const applyScale = (e: ScaleEvent) => {
    fleet.advanceTo(Math.max(fleet.now, e.atMs));
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
  for (const req of requests) {
    while (nextEvent < scaleEvents.length && scaleEvents[nextEvent]!.atMs <= req.arrivalMs) {
      const e = scaleEvents[nextEvent++]!;
      if (e.atMs < sc.durationMs) applyScale(e);
    }
    fleet.advanceTo(req.arrivalMs);
    const prompt = renderPrompt(req.body);
    const t0 = performance.now();
    const policy = sc.routers === 1 ? (policies[0] as Policy) : (policies[front.int(sc.routers)] as Policy);
    const decision = policy.route(req);
    routeMs += performance.now() - t0;
    decisions++;
    try {
      fleet.submit(decision.targetId, { id: req.id, prompt, outputTokens: req.outputTokens, model: req.body.model }, {
        onFirstToken() {
          decision.firstToken?.();
        },
        onDone(result: VirtualResult) {
          decision.release({ promptTokens: result.promptTokens, cachedTokens: result.cachedTokens });
          recorder.recordCompletion(result);
        },
      });
    } catch (e) {
      decision.release();
      if (isFleetError(e) && e.code === "PROMPT_TOO_LONG") {
        rejected++;
        continue;
      }
      throw e;
    }
    recorder.recordDecision(decision.targetId, decision.spilled);
    if (ideal !== undefined) {
      const promptTokens = countTokens(prompt);
      const cached = ideal.observe(blockKeys(prompt, blockTokens, req.body.model), promptTokens);
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
  };
  return { row, ideal: idealTotals };
}

function round(v: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}

function checkList(name: string, values: readonly number[], ok: (v: number) => boolean, expected: string): readonly number[] {
  if (!Array.isArray(values) || values.length === 0) {
    throw new BenchError("ERR_BENCH_OPTION", `Expected \`${name}\` to be a non-empty array of ${expected}, got ${JSON.stringify(values)}`);
  }
  for (const v of values) {
    if (typeof v !== "number" || !ok(v)) {
      throw new BenchError("ERR_BENCH_OPTION", `Expected \`${name}\` to hold ${expected}, got ${JSON.stringify(v)}`);
    }
  }
  return values;
}
