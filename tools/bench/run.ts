/**
 * The benchmark driver: every requested combination of workload, fleet size, cache capacity,
 * rate multiplier, duration, seed and router count is a *scenario*; every strategy (and, for
 * strategies that read a prefix, every prefix length × concurrency threshold) replays the
 * scenario's request sequence in a run of its own (simulate.ts) and yields one {@link BenchRow}.
 * Everything except the `wall` field of a row is a pure function of the options.
 */
import { DEFAULT_ENGINE_CONFIG } from "../fleet/index.js";
import type { EngineConfig } from "../fleet/index.js";
import { BenchError } from "../common/errors.js";
import type { PolicyFactory, ShadowSetting } from "./policies.js";
import { BENCH_STRATEGIES, NAMED_ONLY_POLICIES, policyByName } from "./registry.js";
import { type RestartEvent, analyzeRestart } from "./restarts.js";
import { simulate } from "./simulate.js";
import type { BenchRow, IdealTotals, PolicyRun, ScaleEvent, Scenario } from "./simulate.js";
import type { Workload } from "./workload.js";
import { WORKLOAD_NAMES, builtinWorkload } from "./workloads.js";
import type { WorkloadName } from "./workloads.js";
import { DEFAULT_LOAD_VIEW_MODEL, LOAD_VIEW_NAMES, type LoadViewName } from "./load-views.js";
import { DEFAULTS, STRATEGIES } from "prefix-router";
import { DEFAULT_KV_LAG_MS } from "./kv-feed.js";

/** Options of {@link runBenchmark}. Every array sweeps: one row per combination. */
export interface BenchOptions {
  /** Built-in workload names or workload objects. @default all built-in workloads */
  workloads?: readonly (WorkloadName | Workload)[];
  /** Strategy names (prefix-router's, `precise-prefix`, or a peer baseline's `peer:*`) or policy factories. @default BENCH_STRATEGIES (every strategy, then the peer baselines; `precise-prefix` only when named) */
  strategies?: readonly (string | PolicyFactory)[];
  /**
   * For policies that read the engines' KV events (`precise-prefix`): virtual time from an
   * engine's event to the routers' indexes, ms (`--kv-lag`). @default 50
   */
  kvLagMs?: number;
  /** Fleet sizes at the start of the run. @default the workload's own (`short-prompts`: [4]), else [7] (the AWS benchmark) */
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
  /**
   * Load views of the router processes (`--load-view`): `local` (each process counts its own
   * requests), `engine` (the engines' running + waiting requests, polled) and `redis` (every
   * process's leases in one Redis), modelled in virtual time (load-views.ts). Non-local views run
   * for prefix-router's strategies other than `random`. @default ["local"]
   */
  loadViews?: readonly LoadViewName[];
  /** `engine` view: poll intervals, ms; one row each. @default [100] (the library's default) */
  enginePollIntervalsMs?: readonly number[];
  /** `redis` view: round trip to Redis, ms. @default 0.5 */
  redisRttMs?: number;
  /**
   * `redis` view: reads of the total between writes while a process has leases open, ms; with
   * none open, every max(100, this). @default 5 (the library's default)
   */
  redisRefreshMs?: number;
  /** Scale events applied in every run, in time order. @default [] */
  scaleEvents?: readonly ScaleEvent[];
  /**
   * Replica restarts (the instance's prefix cache emptied under the same id) applied in every
   * run. Each policy then also replays the sequence without them, and its row reports per restart
   * the hit-rate gap to that reference and the time to recover (restarts.ts). @default []
   */
  restarts?: readonly RestartEvent[];
  /** Engine parameter overrides for every instance (capacity is set by `capacityTokens`). */
  engine?: Partial<EngineConfig>;
  /**
   * A built-in strategy run as a shadow beside each of prefix-router's strategies (`--shadow`):
   * its picks are computed and never acted on; rows report its agreement and predicted hit rate.
   * @default none
   */
  shadow?: string;
  /**
   * What the shadow's state follows: its own picks or the live placement. One value, not a sweep:
   * the live rows would repeat and count as extra seeds. @default "own"
   */
  shadowPlacement?: "own" | "live";
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

/**
 * Runs the benchmark and returns one row per (scenario × policy configuration), in the order
 * workloads → instances → capacity → rate → duration → seed → routers → strategy → prefix length →
 * threshold → load view.
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
      throw new BenchError("ERR_BENCH_OPTION", `Unknown strategy \`${s}\`; expected one of ${[...BENCH_STRATEGIES, ...NAMED_ONLY_POLICIES].join(", ")}`);
    }
    return f;
  });
  const blockTokens = options.engine?.blockSizeTokens ?? DEFAULT_ENGINE_CONFIG.blockSizeTokens;
  const instanceCheck = (list: readonly number[]) => checkList("instances", list, (v) => Number.isInteger(v) && v >= 1 && v <= 4096, "integers from 1 to 4096");
  if (options.instances !== undefined) instanceCheck(options.instances);
  const capacities = checkList(
    "capacityTokens",
    options.capacityTokens ?? [DEFAULT_ENGINE_CONFIG.numGpuBlocks * blockTokens],
    (v) => Number.isInteger(v) && v >= blockTokens,
    `integers ≥ ${blockTokens} (one block)`,
  );
  const rates = checkList("rateMultipliers", options.rateMultipliers ?? [1], (v) => Number.isFinite(v) && v > 0, "numbers > 0");
  const seeds = checkList("seeds", options.seeds ?? [1], (v) => Number.isSafeInteger(v) && v >= 0, "integers ≥ 0");
  const kvLagMs = checkList("kvLagMs", [options.kvLagMs ?? DEFAULT_KV_LAG_MS], (v) => Number.isFinite(v) && v >= 0, "a number of ms ≥ 0")[0]!;
  const routerCounts = checkList("routers", options.routers ?? [1], (v) => Number.isInteger(v) && v >= 1 && v <= 256, "integers from 1 to 256");
  const thresholds = checkList(
    "concurrencyThresholds",
    options.concurrencyThresholds ?? [DEFAULTS.concurrencyThreshold],
    (v) => Number.isInteger(v) && v >= 1 && v <= 1024,
    "integers from 1 to 1024",
  );
  if (options.prefixLengths !== undefined) {
    checkList("prefixLengths", options.prefixLengths, (v) => Number.isInteger(v) && v >= 1024 && v <= 65_536, "integers from 1024 to 65536");
  }
  if (options.durationsMs !== undefined) {
    checkList("durationsMs", options.durationsMs, (v) => Number.isFinite(v) && v > 0, "numbers of ms > 0");
  }
  const loadViews = options.loadViews ?? ["local"];
  if (!Array.isArray(loadViews) || loadViews.length === 0 || loadViews.some((v) => !LOAD_VIEW_NAMES.includes(v))) {
    throw new BenchError("ERR_BENCH_OPTION", `Expected \`loadViews\` to hold ${LOAD_VIEW_NAMES.join(", ")}, got ${JSON.stringify(loadViews)}`);
  }
  const polls = checkList("enginePollIntervalsMs", options.enginePollIntervalsMs ?? [DEFAULT_LOAD_VIEW_MODEL.enginePollMs], (v) => Number.isFinite(v) && v > 0, "numbers of ms > 0");
  const redisRttMs = checkList("redisRttMs", [options.redisRttMs ?? DEFAULT_LOAD_VIEW_MODEL.redisRttMs], (v) => Number.isFinite(v) && v >= 0, "a number of ms ≥ 0")[0]!;
  const redisRefreshMs = checkList("redisRefreshMs", [options.redisRefreshMs ?? DEFAULT_LOAD_VIEW_MODEL.redisRefreshMs], (v) => Number.isFinite(v) && v > 0, "a number of ms > 0")[0]!;
  const views: PolicyRun["loadView"][] = [];
  for (const v of loadViews) {
    if (v === "local") views.push(undefined);
    else if (v === "redis") views.push({ name: v, params: { ...DEFAULT_LOAD_VIEW_MODEL, redisRttMs, redisRefreshMs, redisIdleRefreshMs: Math.max(DEFAULT_LOAD_VIEW_MODEL.redisIdleRefreshMs, redisRefreshMs) } });
    else for (const enginePollMs of polls) views.push({ name: v, params: { ...DEFAULT_LOAD_VIEW_MODEL, enginePollMs } });
  }
  const shadow = shadowSetting(options.shadow, options.shadowPlacement);
  const scaleEvents = [...(options.scaleEvents ?? [])];
  for (const e of scaleEvents) {
    if (!Number.isFinite(e.atMs) || e.atMs < 0 || !Number.isInteger(e.delta) || e.delta === 0) {
      throw new BenchError("ERR_BENCH_OPTION", `Expected a scale event as { atMs ≥ 0, delta: non-zero integer }, got ${JSON.stringify(e)}`);
    }
  }
  scaleEvents.sort((a, b) => a.atMs - b.atMs);
  const restarts = [...(options.restarts ?? [])];
  for (const e of restarts) {
    if (!Number.isFinite(e.atMs) || e.atMs < 0 || typeof e.instance !== "string" || e.instance.length === 0) {
      throw new BenchError("ERR_BENCH_OPTION", `Expected a restart as { atMs ≥ 0, instance: an instance id }, got ${JSON.stringify(e)}`);
    }
  }
  restarts.sort((a, b) => a.atMs - b.atMs);
  // With restarts every policy also runs without them, as the reference.
  const passes = restarts.length === 0 ? 1 : 2;

  const plan: { scenario: Scenario; runs: PolicyRun[]; engine: Partial<EngineConfig> | undefined }[] = [];
  for (const workload of workloads) {
    const prefixLengths = options.prefixLengths ?? workload.defaultPrefixLengths ?? [DEFAULTS.prefixLength];
    const instances = instanceCheck(options.instances ?? [workload.fleet?.instances ?? 7]);
    const engine = workload.fleet?.engine === undefined ? options.engine : { ...workload.fleet.engine, ...options.engine };
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
                      for (const loadView of factory.usesLoadView === true ? views : [undefined])
                        runs.push({ factory, prefixLength, concurrencyThreshold, ...(loadView && { loadView }), ...(shadow && factory.usesShadow === true && { shadow }), ...(factory.usesKvEvents === true && { kvLagMs }) });
                }
                plan.push({ scenario: { workload, instances: n, capacityTokens, rateMultiplier, durationMs, seed, routers }, runs, engine });
              }
  }

  const totalMs = plan.reduce((s, p) => s + p.scenario.durationMs * p.runs.length * passes, 0);
  const runCount = plan.reduce((s, p) => s + p.runs.length, 0);
  let doneMs = 0;
  let runIndex = 0;
  const rows: BenchRow[] = [];
  for (const { scenario, runs, engine } of plan) {
    let ideal: IdealTotals | undefined;
    for (const run of runs) {
      const label = `${scenario.workload.name}/${run.factory.name}`;
      const progress = (base: number) => (simMs: number) => {
        options.onProgress?.({
          run: runIndex,
          runs: runCount,
          label,
          fraction: totalMs === 0 ? 1 : Math.min(1, (base + simMs) / totalMs),
        });
      };
      const reference = restarts.length === 0 ? undefined : await simulate(scenario, run, scaleEvents, engine, ideal, progress(doneMs));
      if (reference !== undefined) doneMs += scenario.durationMs;
      const result = await simulate(scenario, run, scaleEvents, engine, ideal ?? reference?.ideal, progress(doneMs), restarts);
      ideal = result.ideal;
      if (reference !== undefined) {
        result.row.restarts = restarts.map((e, i) => analyzeRestart(e, result.fine, reference.fine, restarts[i + 1]?.atMs ?? scenario.durationMs));
      }
      rows.push(result.row);
      doneMs += scenario.durationMs;
      runIndex++;
    }
  }
  options.onProgress?.({ run: runCount, runs: runCount, label: "done", fraction: 1 });
  return rows;
}

/** The shadow setting: none without a shadow strategy. */
function shadowSetting(strategy: string | undefined, placement: string | undefined): ShadowSetting | undefined {
  if (strategy === undefined) {
    if (placement !== undefined) throw new BenchError("ERR_BENCH_OPTION", "`shadowPlacement` needs `shadow` (a strategy to run as the shadow)");
    return undefined;
  }
  if (!(STRATEGIES as readonly string[]).includes(strategy)) {
    throw new BenchError("ERR_BENCH_OPTION", `Unknown shadow strategy \`${strategy}\`; expected one of ${STRATEGIES.join(", ")}`);
  }
  const where = placement ?? "own";
  if (where !== "own" && where !== "live") throw new BenchError("ERR_BENCH_OPTION", `Expected \`shadowPlacement\` to be own or live, got ${JSON.stringify(where)}`);
  return { strategy: strategy as ShadowSetting["strategy"], placement: where };
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
