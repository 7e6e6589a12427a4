/**
 * Command-line values of `prefix-router bench`: durations (`90s`, `30m`, `1h30m`), token counts
 * (`1.2M`, `600k`), scale events (`30m:+1`), comma-separated lists. Every parser throws a
 * {@link BenchError} (`ERR_BENCH_OPTION`) that names the option and quotes the bad value.
 */
import { type ParseArgsConfig, parseArgs } from "node:util";
import { BenchError } from "../common/errors.js";
import { parseCommandLine, parseDuration, parseNumbers, parseTokenCount, splitList } from "../common/cli.js";
import type { RestartEvent } from "./restarts.js";
import type { ScaleEvent } from "./simulate.js";

/**
 * Parses a scale event `<duration>:<+n|-n>`.
 * @example parseScaleEvent("30m:+1") // { atMs: 1_800_000, delta: 1 }
 */
export function parseScaleEvent(text: string): ScaleEvent {
  const m = /^([^:]+):([+-]\d+)$/.exec(text.trim());
  if (m === null || Number(m[2]) === 0) {
    throw new BenchError("ERR_BENCH_OPTION", `Expected \`--scale-at\` like 30m:+1 or 45m:-2, got "${text}"`);
  }
  return { atMs: parseDuration(m[1]!, "--scale-at"), delta: Number(m[2]) };
}

/**
 * Parses a restart `<duration>:<instance>[:<downtime>]`, the instance as an id (`i3`) or an index (`3`).
 * @example parseRestartEvent("10m:i3:1m") // { atMs: 600_000, instance: "i3", downMs: 60_000 }
 */
export function parseRestartEvent(text: string): RestartEvent {
  const m = /^([^:]+):i?(\d+)(?::([^:]+))?$/.exec(text.trim());
  if (m === null) throw new BenchError("ERR_BENCH_OPTION", `Expected \`--restart-at\` like 10m:i3 or 10m:i3:1m (down for a minute), got "${text}"`);
  const atMs = parseDuration(m[1]!, "--restart-at");
  const instance = `i${Number(m[2])}`;
  return m[3] === undefined ? { atMs, instance } : { atMs, instance, downMs: parseDuration(m[3], "--restart-at") };
}

/**
 * Parses seeds: integers ≥ 0 and inclusive ranges `a-b` (at most 1,000 seeds in a range).
 * @example parseSeeds(["1-3,7"]) // [1, 2, 3, 7]
 */
export function parseSeeds(values: readonly string[] | undefined): number[] | undefined {
  const list = splitList(values);
  if (list === undefined) return undefined;
  return list.flatMap((v) => {
    const m = /^(\d+)(?:-(\d+))?$/.exec(v);
    const from = m === null ? Number.NaN : Number(m[1]);
    const to = m === null ? Number.NaN : Number(m[2] ?? m[1]);
    if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to) || to < from || to - from >= 1000) {
      throw new BenchError("ERR_BENCH_OPTION", `Expected \`--seed\` to hold integers ≥ 0 or ranges like 1-5 (at most 1,000 seeds), got "${v}"`);
    }
    return Array.from({ length: to - from + 1 }, (_, i) => from + i);
  });
}

/** The parsed command line of `prefix-router bench`. */
export interface BenchArgs {
  help: boolean;
  workloads: string[] | undefined;
  strategies: string[] | undefined;
  instances: number[] | undefined;
  prefixLengths: number[] | undefined;
  concurrencyThresholds: number[] | undefined;
  capacityTokens: number[] | undefined;
  rateMultipliers: number[] | undefined;
  durationsMs: number[] | undefined;
  seeds: number[] | undefined;
  routers: number[] | undefined;
  kvLagMs: number | undefined;
  loadViews: string[] | undefined;
  enginePollIntervalsMs: number[] | undefined;
  redisRttMs: number | undefined;
  redisRefreshMs: number | undefined;
  traceFile: string | undefined;
  shadow: string | undefined;
  shadowPlacement: string | undefined;
  scaleEvents: ScaleEvent[];
  restarts: RestartEvent[];
  json: string | undefined;
  report: string | undefined;
  quiet: boolean;
}

/**
 * Parses the arguments of `prefix-router bench` (after the subcommand name).
 * @throws {BenchError} `ERR_BENCH_OPTION` for unknown options or malformed values
 */
export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  const { values } = parseCommandLine(argv, false, {
    workload: { type: "string", multiple: true },
    strategies: { type: "string", multiple: true },
    instances: { type: "string", multiple: true },
    "prefix-length": { type: "string", multiple: true },
    threshold: { type: "string", multiple: true },
    capacity: { type: "string", multiple: true },
    rate: { type: "string", multiple: true },
    duration: { type: "string", multiple: true },
    seed: { type: "string", multiple: true },
    routers: { type: "string", multiple: true },
    "kv-lag": { type: "string" },
    "load-view": { type: "string", multiple: true },
    "engine-poll": { type: "string", multiple: true },
    "redis-rtt": { type: "string" },
    "redis-refresh": { type: "string" },
    trace: { type: "string" },
    shadow: { type: "string" },
    "shadow-placement": { type: "string" },
    "scale-at": { type: "string", multiple: true },
    "restart-at": { type: "string", multiple: true },
    json: { type: "string" },
    report: { type: "string" },
    quiet: { type: "boolean", short: "q" },
    help: { type: "boolean", short: "h" },
  });
  const strings = (k: string) => values[k] as string[] | undefined;
  return {
    help: values["help"] === true,
    workloads: splitList(strings("workload")),
    strategies: splitList(strings("strategies")),
    instances: parseNumbers(strings("instances"), "--instances", true),
    prefixLengths: parseNumbers(strings("prefix-length"), "--prefix-length", true),
    concurrencyThresholds: parseNumbers(strings("threshold"), "--threshold", true),
    capacityTokens: splitList(strings("capacity"))?.map((v) => parseTokenCount(v, "--capacity")),
    rateMultipliers: parseNumbers(strings("rate"), "--rate", false),
    durationsMs: splitList(strings("duration"))?.map((v) => parseDuration(v, "--duration")),
    seeds: parseSeeds(strings("seed")),
    routers: parseNumbers(strings("routers"), "--routers", true),
    kvLagMs: values["kv-lag"] === undefined ? undefined : parseDuration(values["kv-lag"] as string, "--kv-lag"),
    loadViews: splitList(strings("load-view")),
    enginePollIntervalsMs: splitList(strings("engine-poll"))?.map((v) => parseDuration(v, "--engine-poll")),
    redisRttMs: values["redis-rtt"] === undefined ? undefined : parseDuration(values["redis-rtt"] as string, "--redis-rtt"),
    redisRefreshMs: values["redis-refresh"] === undefined ? undefined : parseDuration(values["redis-refresh"] as string, "--redis-refresh"),
    traceFile: values["trace"] as string | undefined,
    shadow: values["shadow"] as string | undefined,
    shadowPlacement: values["shadow-placement"] as string | undefined,
    scaleEvents: (strings("scale-at") ?? []).map(parseScaleEvent),
    restarts: (strings("restart-at") ?? []).map(parseRestartEvent),
    json: values["json"] as string | undefined,
    report: values["report"] as string | undefined,
    quiet: values["quiet"] === true,
  };
}
