/**
 * The `loadView` router option: its shapes, defaults and validation. The views themselves are
 * in engine.ts and redis.ts; view.ts has the contract and the arithmetic.
 */
import {
  MAX_BODY_BYTES,
  optionHeaders,
  optionInteger,
  optionObject,
  optionString,
  optionStrings,
  optionTimers,
  targetURL,
} from "../internal/options.js";
import { checkRedisURL } from "../internal/redis-url.js";
import type { Timers } from "../internal/timers.js";
import { checkKnownKeys, describe, keysOf } from "../internal/validate.js";
import type { TargetSpec } from "../types.js";
import type { LoadView } from "./view.js";

/** The Prometheus metric names the `engine` view reads; the first name a target exports counts. */
export interface EngineMetricNames {
  /**
   * Gauges of requests running on the engine (summed over label sets). The `sglang_` names are
   * those of SGLang's `/v1/loads?format=prometheus`.
   * @default ["vllm:num_requests_running", "sglang:num_running_reqs", "sglang_num_running_reqs"]
   */
  running?: readonly string[];
  /** Gauges of requests waiting for the engine. @default ["vllm:num_requests_waiting", "sglang:num_queue_reqs", "sglang_num_waiting_reqs"] */
  waiting?: readonly string[];
  /** KV-cache usage gauges, 0..1 (reported in stats). @default ["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage", "sglang_token_usage"] */
  kvCacheUsage?: readonly string[];
  /**
   * Gauges of prompt tokens waiting for prefill that the engine's prefix cache does not hold
   * (summed over label sets). Where a target exports one and the view polls every 20 ms or
   * faster, `longest-prefix` counts this queued prefill, in tokens, besides its own. SGLang serves
   * `sglang_num_waiting_uncached_tokens` on `/v1/loads?format=prometheus`; vLLM's
   * `vllm:approximate_uncached_tokens_waiting` is proposed (docs/load-view.md).
   * @default ["vllm:approximate_uncached_tokens_waiting", "sglang_num_waiting_uncached_tokens"]
   */
  waitingUncachedTokens?: readonly string[];
  /**
   * Info metrics whose labels `block_size` and `num_gpu_blocks` give the engine's KV block size
   * (tokens) and capacity (reported in stats).
   * @default ["vllm:cache_config_info"]
   */
  cacheConfig?: readonly string[];
}

/** Defaults of {@link EngineMetricNames}: vLLM's names, then SGLang's. */
export const DEFAULT_ENGINE_METRICS: Readonly<Required<EngineMetricNames>> = Object.freeze({
  running: Object.freeze(["vllm:num_requests_running", "sglang:num_running_reqs", "sglang_num_running_reqs"]),
  waiting: Object.freeze(["vllm:num_requests_waiting", "sglang:num_queue_reqs", "sglang_num_waiting_reqs"]),
  kvCacheUsage: Object.freeze(["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage", "sglang_token_usage"]),
  waitingUncachedTokens: Object.freeze(["vllm:approximate_uncached_tokens_waiting", "sglang_num_waiting_uncached_tokens"]),
  cacheConfig: Object.freeze(["vllm:cache_config_info"]),
});

/**
 * `loadView: { source: "engine", … }`: poll each target's Prometheus `/metrics` and count its
 * running + waiting requests. Needs the optional package `parse-prometheus-text-format`.
 */
export interface EngineLoadViewOptions<T extends TargetSpec = TargetSpec> {
  source: "engine";
  /**
   * Where a target's metrics are. Default: the target's own `metricsURL` field when it has one,
   * else `/metrics` at the origin of its `baseURL` (an OpenAI target `http://10.0.0.7:8000/v1`
   * → `http://10.0.0.7:8000/metrics`, where vLLM and SGLang serve them). A target with neither,
   * or a URL with credentials, is a TypeError at `createRouter`/`setTargets`.
   */
  metricsURL?: (target: T) => string | URL;
  /**
   * Time between two polls of every target, ms. From 10 to 600,000. Each router process sends
   * each engine 1000 / `intervalMs` scrapes per second; other routers' requests are seen one
   * poll late (docs/load-view.md has the measured trade-off). Strategies get the engines'
   * queued-tokens figure only at 20 ms or less: older, it misleads more than it helps.
   * @default 100
   */
  intervalMs?: number;
  /** Timeout of one scrape, ms. From 1 to 600,000. @default 1000 */
  timeoutMs?: number;
  /** A longer `/metrics` body fails the scrape (not read further), bytes. From 1 to 2^30. @default 4194304 */
  maxBodyBytes?: number;
  /**
   * A target's figure older than this no longer counts (its load is then this router's own).
   * From 1 to 3,600,000.
   * @default 3 × intervalMs, at least 1000
   */
  staleAfterMs?: number;
  /**
   * Router processes that share the fleet, if you know it (a Deployment's replica count). The
   * engines cannot tell, so by default each process may fill all of a target's headroom between
   * two polls; with `peers` each opens at most its share of it until the next poll (the remainder
   * at random), as the redis view does with the count it reads. From 1 to 1,024.
   * @default 1
   */
  peers?: number;
  /** Metric names (vLLM's and SGLang's by default). */
  metrics?: EngineMetricNames;
  /** Headers sent with every scrape (e.g. `Authorization`). @default {} */
  headers?: Readonly<Record<string, string>>;
}

/**
 * `loadView: { source: "redis", … }`: every router process counts its leases in one Redis, and
 * reads every process's total. Needs the optional package `ioredis`. Key layout and expiry:
 * docs/load-view.md.
 */
export interface RedisLoadViewOptions {
  source: "redis";
  /** `redis://[user:password@]host:port[/db]` (or `rediss://`). @default "redis://127.0.0.1:6379" */
  url?: string;
  /**
   * Prefix of every key; routers in front of the same fleet share it, other fleets use another.
   * The keys are `{<keyPrefix>}:…`, one Redis Cluster slot.
   * @default "prefix-router"
   */
  keyPrefix?: string;
  /**
   * How long a process's counts outlive it: a process that stops heartbeating (killed, frozen,
   * cut off) has its leases removed by the other processes after this long. It heartbeats every
   * `leaseTtlMs / 3`. From 1,000 to 3,600,000.
   * @default 15000
   */
  leaseTtlMs?: number;
  /**
   * Reads of the fleet-wide total while this process has requests in flight and sends nothing
   * (every write reads it too), ms. From 5 to 600,000. Fresh figures matter most to
   * `longest-prefix`, whose fallback reads other routers' queued prefill: 5 ms keeps it within
   * 5% of one process's P90 with 8 processes, 20 ms does not (docs/load-view.md).
   * @default 5
   */
  refreshIntervalMs?: number;
  /**
   * Reads of the total while this process has no request in flight, ms: an idle process costs
   * Redis little. From `refreshIntervalMs` to 600,000.
   * @default max(100, refreshIntervalMs)
   */
  idleRefreshIntervalMs?: number;
  /** A total older than this no longer counts: the router uses its local view. @default max(1000, 3 × idleRefreshIntervalMs) */
  staleAfterMs?: number;
  /** Timeout of one Redis command, ms; also the connect timeout. From 1 to 600,000. @default 1000 */
  commandTimeoutMs?: number;
  /** This process's id in Redis. Unique per process. @default a random UUID */
  processId?: string;
}

/** What the `loadView` option accepts. */
export type LoadViewOption<T extends TargetSpec = TargetSpec> =
  | "local"
  | "engine"
  | "redis"
  | { source: "local" }
  | EngineLoadViewOptions<T>
  | RedisLoadViewOptions
  | LoadView<T>;

/** Defaults of the shared views. */
export const DEFAULT_LOAD_VIEW = Object.freeze({
  engineIntervalMs: 100,
  engineTimeoutMs: 1000,
  engineMaxBodyBytes: 4 * 1024 * 1024,
  redisUrl: "redis://127.0.0.1:6379",
  redisKeyPrefix: "prefix-router",
  leaseTtlMs: 15_000,
  redisRefreshIntervalMs: 5,
  redisIdleRefreshIntervalMs: 100,
  redisCommandTimeoutMs: 1000,
  minStaleAfterMs: 1000,
  /**
   * The engine view gives strategies its queued-tokens figure only when it polls at least this
   * often (`intervalMs` ≤ 20): an older figure describes requests that have left the queue, and
   * every router process piles onto its minimum until the next poll (docs/load-view.md).
   */
  engineTokensMaxIntervalMs: 20,
});

/** @internal Validated `engine` options. */
export interface EngineConfig<T extends TargetSpec> {
  readonly source: "engine";
  readonly metricsURL: (target: T) => string;
  readonly intervalMs: number;
  readonly timeoutMs: number;
  readonly maxBodyBytes: number;
  readonly staleAfterMs: number;
  readonly peers: number;
  readonly metrics: Readonly<Required<EngineMetricNames>>;
  readonly headers: Readonly<Record<string, string>>;
  readonly timers: Timers;
}

/** @internal Validated `redis` options. */
export interface RedisConfig {
  readonly source: "redis";
  readonly url: string;
  readonly keyPrefix: string;
  readonly leaseTtlMs: number;
  readonly refreshIntervalMs: number;
  readonly idleRefreshIntervalMs: number;
  readonly staleAfterMs: number;
  readonly commandTimeoutMs: number;
  readonly processId: string | undefined;
  readonly timers: Timers;
}

/** @internal A validated `loadView` option (`undefined`: local). */
export type LoadViewConfig<T extends TargetSpec> = EngineConfig<T> | RedisConfig | { readonly source: "custom"; readonly view: LoadView<T> };

const VIEW_METHODS = ["shared", "others", "setTargets", "acquire", "release", "stats", "close"] as const;

/** @internal Every key of {@link EngineLoadViewOptions}. */
export const ENGINE_LOAD_VIEW_OPTION_KEYS = keysOf<EngineLoadViewOptions>()([
  "source", "metricsURL", "intervalMs", "timeoutMs", "maxBodyBytes", "staleAfterMs", "peers", "metrics", "headers",
]);

/** @internal Every key of {@link EngineMetricNames}. */
export const ENGINE_METRIC_NAME_KEYS = keysOf<EngineMetricNames>()(["running", "waiting", "kvCacheUsage", "waitingUncachedTokens", "cacheConfig"]);

/** @internal Every key of {@link RedisLoadViewOptions}. */
export const REDIS_LOAD_VIEW_OPTION_KEYS = keysOf<RedisLoadViewOptions>()([
  "source", "url", "keyPrefix", "leaseTtlMs", "refreshIntervalMs", "idleRefreshIntervalMs", "staleAfterMs", "commandTimeoutMs", "processId",
]);

/** @internal Validates `loadView`. */
export function resolveLoadView<T extends TargetSpec>(value: unknown): LoadViewConfig<T> | undefined {
  if (value === undefined || value === "local") return undefined;
  if (value === "engine" || value === "redis") return resolveLoadView({ source: value });
  const o = optionObject("loadView", value);
  if (typeof o["shared"] === "function" || typeof o["others"] === "function") {
    for (const m of VIEW_METHODS) {
      if (typeof o[m] !== "function") throw new TypeError(`Expected \`loadView.${m}\` to be a function, got ${describe(o[m])}`);
    }
    optionString("loadView.source", o["source"]);
    return { source: "custom", view: value as LoadView<T> };
  }
  switch (o["source"]) {
    case "local":
      checkKnownKeys("loadView", o, ["source"]);
      return undefined;
    case "engine":
      checkKnownKeys("loadView", o, ENGINE_LOAD_VIEW_OPTION_KEYS);
      return resolveEngine<T>(o);
    case "redis":
      checkKnownKeys("loadView", o, REDIS_LOAD_VIEW_OPTION_KEYS);
      return resolveRedis(o);
    default:
      throw new TypeError(
        `Expected \`loadView\` to be "local", "engine", "redis", { source, … } or a LoadView object, got ${describe(o["source"] === undefined ? value : o["source"])}`,
      );
  }
}

function staleAfter(name: string, value: unknown, intervalMs: number): number {
  return optionInteger(name, value, Math.max(DEFAULT_LOAD_VIEW.minStaleAfterMs, 3 * intervalMs), 1, 3_600_000);
}

function resolveEngine<T extends TargetSpec>(o: Record<string, unknown>): EngineConfig<T> {
  const intervalMs = optionInteger("loadView.intervalMs", o["intervalMs"], DEFAULT_LOAD_VIEW.engineIntervalMs, 10, 600_000);
  const names = o["metrics"] === undefined ? {} : optionObject("loadView.metrics", o["metrics"]);
  checkKnownKeys("loadView.metrics", names, ENGINE_METRIC_NAME_KEYS);
  return {
    source: "engine",
    metricsURL: targetURL<T>("loadView.metricsURL", "metricsURL", "/metrics", o["metricsURL"]),
    intervalMs,
    timeoutMs: optionInteger("loadView.timeoutMs", o["timeoutMs"], DEFAULT_LOAD_VIEW.engineTimeoutMs, 1, 600_000),
    maxBodyBytes: optionInteger("loadView.maxBodyBytes", o["maxBodyBytes"], DEFAULT_LOAD_VIEW.engineMaxBodyBytes, 1, MAX_BODY_BYTES),
    staleAfterMs: staleAfter("loadView.staleAfterMs", o["staleAfterMs"], intervalMs),
    peers: optionInteger("loadView.peers", o["peers"], 1, 1, 1024),
    metrics: Object.freeze({
      running: optionStrings("loadView.metrics.running", names["running"], DEFAULT_ENGINE_METRICS.running),
      waiting: optionStrings("loadView.metrics.waiting", names["waiting"], DEFAULT_ENGINE_METRICS.waiting),
      kvCacheUsage: optionStrings("loadView.metrics.kvCacheUsage", names["kvCacheUsage"], DEFAULT_ENGINE_METRICS.kvCacheUsage),
      waitingUncachedTokens: optionStrings("loadView.metrics.waitingUncachedTokens", names["waitingUncachedTokens"], DEFAULT_ENGINE_METRICS.waitingUncachedTokens),
      cacheConfig: optionStrings("loadView.metrics.cacheConfig", names["cacheConfig"], DEFAULT_ENGINE_METRICS.cacheConfig),
    }),
    headers: optionHeaders("loadView.headers", o["headers"]),
    timers: optionTimers("loadView", o),
  };
}

/** A target's `metricsURL`, else `/metrics` at the origin of its `baseURL`; `undefined` when it has neither. */
function resolveRedis(o: Record<string, unknown>): RedisConfig {
  const refreshIntervalMs = optionInteger("loadView.refreshIntervalMs", o["refreshIntervalMs"], DEFAULT_LOAD_VIEW.redisRefreshIntervalMs, 5, 600_000);
  const idleRefreshIntervalMs = optionInteger(
    "loadView.idleRefreshIntervalMs",
    o["idleRefreshIntervalMs"],
    Math.max(DEFAULT_LOAD_VIEW.redisIdleRefreshIntervalMs, refreshIntervalMs),
    refreshIntervalMs,
    600_000,
  );
  const url = checkRedisURL("loadView.url", optionString("loadView.url", o["url"], DEFAULT_LOAD_VIEW.redisUrl));
  return {
    source: "redis",
    url,
    keyPrefix: optionString("loadView.keyPrefix", o["keyPrefix"], DEFAULT_LOAD_VIEW.redisKeyPrefix),
    leaseTtlMs: optionInteger("loadView.leaseTtlMs", o["leaseTtlMs"], DEFAULT_LOAD_VIEW.leaseTtlMs, 1000, 3_600_000),
    refreshIntervalMs,
    idleRefreshIntervalMs,
    staleAfterMs: staleAfter("loadView.staleAfterMs", o["staleAfterMs"], idleRefreshIntervalMs),
    commandTimeoutMs: optionInteger("loadView.commandTimeoutMs", o["commandTimeoutMs"], DEFAULT_LOAD_VIEW.redisCommandTimeoutMs, 1, 600_000),
    processId: o["processId"] === undefined ? undefined : optionString("loadView.processId", o["processId"]),
    timers: optionTimers("loadView", o),
  };
}
