/**
 * `prefix-router/bench`: the benchmark of prefix-aware routing on the emulated virtual-time
 * fleet. Every strategy replays the same deterministic request sequence; rows report TTFT
 * percentiles, queueing, token hit rate against the ideal, throughput, spillover, per-instance
 * shares and the router's own decision rate. See docs/bench.md.
 */
export { runBenchmark } from "./run.js";
export type { BenchOptions, BenchProgress } from "./run.js";
export type { BenchRow, ScaleEvent, WallClock } from "./simulate.js";
export { BENCH_MODEL, DECODE_MS_PER_TOKEN_ESTIMATE } from "./workload.js";
export type { BenchRequest, ChatBody, ChatMessage, ChatTool, ChatToolCall, Workload, WorkloadSettings } from "./workload.js";
export { HOT_PREFIX_DEFAULTS, LONG_CONTEXT_DEFAULTS, RAG_DEFAULTS, hotPrefixWorkload, longContextWorkload, ragWorkload } from "./workloads-single-turn.js";
export type { HotPrefixParams, LongContextParams, RagParams } from "./workloads-single-turn.js";
export { AGENT_DEFAULTS, SHAREGPT_DEFAULTS, agentWorkload, sharegptWorkload } from "./workloads-sessions.js";
export type { AgentParams, SharegptParams } from "./workloads-sessions.js";
export { MULTI_TENANT_DEFAULTS, multiTenantWorkload } from "./workloads-tenants.js";
export type { MultiTenantParams } from "./workloads-tenants.js";
export { WORKLOAD_NAMES, builtinWorkload } from "./workloads.js";
export type { WorkloadName } from "./workloads.js";
export { MOONCAKE_BLOCK_TOKENS, loadTrace, parseTrace, traceWorkload } from "./trace.js";
export type { TraceParseOptions, TraceRecord, TraceWorkloadOptions } from "./trace.js";
export { ROUTER_STRATEGIES, routerPolicy } from "./policies.js";
export { DEFAULT_LOAD_VIEW_MODEL, LOAD_VIEW_NAMES, LoadViewModel } from "./load-views.js";
export type { LoadViewModelParams, LoadViewName } from "./load-views.js";
export { BENCH_STRATEGIES, policyByName } from "./registry.js";
export { KUBEAI_DEFAULTS, LITELLM_PREFIX_CHARS, PEER_BASELINES, SGLANG_DEFAULTS, kubeaiPrefixHash, litellmAffinity, sglangCacheAware } from "./baselines.js";
export type { Policy, PolicyContext, PolicyDecision, PolicyFactory } from "./policies.js";
export { IdealCache, RECOVERY_TOLERANCE, RunRecorder, analyzeScaleEvent } from "./metrics.js";
export type {
  AppliedScaleEvent,
  CompletedRequest,
  HitRatePoint,
  RunMetrics,
  RunRecorderOptions,
  ScaleEventResult,
} from "./metrics.js";
export { compareAcrossSeeds, compareToRandom, estimate, scenarioKey, summarizeSeeds } from "./compare.js";
export type { Comparison, Estimate, PairedComparison, SeedSummary, Verdict } from "./compare.js";
export { formatComparison, formatDuration, formatPaired, formatReport, formatScaleEvents, formatSeedSummary, formatTable } from "./table.js";
export { chartSpecs, hitRateSpec, loadSvgRenderer, renderHtmlReport, seriesLabel, shareSpec, ttftCdfSpec } from "./report.js";
export { MAX_SERIES_PER_CHART, chartScales, logDomain, smallMultiples } from "./chart-layout.js";
export type { ChartScales } from "./chart-layout.js";
export type { ChartSpec, SvgRenderer } from "./report.js";
export { BENCH_USAGE, runBenchCommand } from "./cli.js";
export type { BenchCliIo } from "./cli.js";
export { parseBenchArgs, parseDuration, parseScaleEvent, parseSeeds, parseTokenCount } from "./options.js";
export type { BenchArgs } from "./options.js";
export { Rng, Zipf, mix32 } from "../sim/random.js";
export { TextSource, syntheticText } from "./text.js";
export { BenchError, isBenchError } from "./errors.js";
export type { BenchErrorCode } from "./errors.js";
