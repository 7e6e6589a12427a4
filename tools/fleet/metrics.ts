/**
 * `GET /metrics` in the Prometheus text exposition format (version 0.0.4), with vLLM's metric
 * names, types, help texts and labels (`model_name`, `engine`). Counters follow the Python
 * client's convention vLLM uses: the family `vllm:x` is declared `counter` and its sample is
 * `vllm:x_total`. Times are model seconds (before `timeScale`).
 */

import type { EngineStats } from "./engine.js";
import type { Histogram } from "./histogram.js";

/** What {@link renderMetrics} needs of an instance. */
export interface MetricsSnapshot {
  /** Served model name (the `model_name` label). */
  modelName: string;
  /** Instance id (exported as `prefix_router_fleet_instance_info`). */
  instanceId: string;
  /** Engine counters and gauges. */
  stats: EngineStats;
  /** TTFT histogram in seconds. */
  ttft: Histogram;
  /**
   * Whose metric names: `"vllm"` (the default) or `"sglang"`, which adds SGLang's load gauges
   * (`sglang:num_running_reqs`, `sglang:num_queue_reqs`, `sglang:token_usage`) with the same
   * true values — for load views configured for SGLang.
   */
  flavor?: "vllm" | "sglang";
  /** The instance's KV cache, exported as `vllm:cache_config_info` (labels `block_size`, `num_gpu_blocks`). */
  cache?: { blockSizeTokens: number; numGpuBlocks: number };
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

function num(v: number): string {
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  if (Number.isNaN(v)) return "NaN";
  return Number.isInteger(v) ? `${v}.0` : String(v);
}

/** Renders an instance's metrics as Prometheus text. */
export function renderMetrics(s: MetricsSnapshot): string {
  const labels = `model_name="${escapeLabel(s.modelName)}",engine="0"`;
  const lines: string[] = [];
  const family = (name: string, type: string, help: string, samples: [string, string, number][]): void => {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const [suffix, extra, value] of samples) lines.push(`${name}${suffix}{${labels}${extra}} ${num(value)}`);
  };
  const st = s.stats;
  family("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", [["", "", st.running]]);
  family("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", [["", "", st.waiting]]);
  family("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", [["", "", st.kvUsage]]);
  // The token-waiting gauges vLLM PR #38025 proposes (not merged), with the emulator's true values.
  if (st.waitingTokens !== undefined && st.waitingUncachedTokens !== undefined) {
    family("vllm:num_tokens_waiting", "gauge", "Prompt tokens of the requests waiting to be processed.", [["", "", st.waitingTokens]]);
    family("vllm:approximate_uncached_tokens_waiting", "gauge", "Prompt tokens of the waiting requests not in the prefix cache when they arrived.", [
      ["", "", st.waitingUncachedTokens],
    ]);
  }
  if (s.cache !== undefined) {
    // An info metric: the labels carry the configuration, the value is 1 (vLLM: one series per engine).
    lines.push(
      "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig",
      "# TYPE vllm:cache_config_info gauge",
      `vllm:cache_config_info{block_size="${s.cache.blockSizeTokens}",enable_prefix_caching="True",engine="0",num_gpu_blocks="${s.cache.numGpuBlocks}"} 1.0`,
    );
  }
  family("vllm:prefix_cache_queries", "counter", "Prefix cache queries, in terms of number of queried tokens.", [
    ["_total", "", st.promptTokens],
  ]);
  family("vllm:prefix_cache_hits", "counter", "Prefix cache hits, in terms of number of cached tokens.", [
    ["_total", "", st.cachedTokens],
  ]);
  family("vllm:prompt_tokens", "counter", "Number of prefill tokens processed.", [["_total", "", st.promptTokens]]);
  family("vllm:generation_tokens", "counter", "Number of generation tokens processed.", [["_total", "", st.generationTokens]]);
  family("vllm:request_success", "counter", "Count of successfully processed requests.", [
    ["_total", `,finished_reason="length"`, st.completed],
  ]);
  const buckets: [string, string, number][] = s.ttft
    .cumulative()
    .map(([le, count]) => ["_bucket", `,le="${num(le)}"`, count] as [string, string, number]);
  buckets.push(["_sum", "", s.ttft.sum], ["_count", "", s.ttft.count]);
  family("vllm:time_to_first_token_seconds", "histogram", "Histogram of time to first token in seconds.", buckets);
  if (s.flavor === "sglang") {
    const sg = (name: string, help: string, value: number): void => {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`, `${name}{model_name="${escapeLabel(s.modelName)}"} ${num(value)}`);
    };
    sg("sglang:num_running_reqs", "The number of running requests.", st.running);
    sg("sglang:num_queue_reqs", "The number of requests in the waiting queue.", st.waiting);
    sg("sglang:token_usage", "The token usage.", st.kvUsage);
  }
  lines.push(
    "# HELP prefix_router_fleet_instance_info The emulated instance serving these metrics.",
    "# TYPE prefix_router_fleet_instance_info gauge",
    `prefix_router_fleet_instance_info{instance="${escapeLabel(s.instanceId)}"} 1.0`,
  );
  return lines.join("\n") + "\n";
}

/**
 * SGLang's `GET /v1/loads?format=prometheus` (python/sglang/srt/entrypoints/v1_loads.py): each
 * field of a DP rank's load as a gauge `sglang_<field>{dp_rank="…"}`, no HELP lines — here the
 * core fields an emulated instance has (one rank), with their true values.
 */
export function renderLoads(st: EngineStats, maxTotalNumTokens: number): string {
  const fields: [string, number][] = [
    ["num_running_reqs", st.running],
    ["num_waiting_reqs", st.waiting],
    ["num_waiting_uncached_tokens", st.waitingUncachedTokens ?? 0],
    ["max_total_num_tokens", maxTotalNumTokens],
    ["token_usage", st.kvUsage],
  ];
  return fields.map(([name, v]) => `# TYPE sglang_${name} gauge\nsglang_${name}{dp_rank="0"} ${v}`).join("\n") + "\n";
}
