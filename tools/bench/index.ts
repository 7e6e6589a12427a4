/**
 * `prefix-router/bench`: the benchmark of prefix-aware routing on the emulated virtual-time
 * fleet. Every strategy replays the same deterministic request sequence; rows report TTFT
 * percentiles, queueing, token hit rate against the ideal, throughput, spillover, per-instance
 * shares and the router's own decision rate. See docs/bench.md.
 */

// Running it.
export { runBenchmark } from "./run.js";
export type { BenchOptions, BenchProgress } from "./run.js";
export type { BenchRow, ScaleEvent } from "./simulate.js";
export { BENCH_STRATEGIES } from "./registry.js";
export type { Policy, PolicyContext, PolicyDecision, PolicyFactory } from "./policies.js";
export { LOAD_VIEW_NAMES } from "./load-views.js";
export type { LoadViewName } from "./load-views.js";

// Workloads: the built-in ones, a Mooncake trace, or your own requests.
export { WORKLOAD_NAMES, builtinWorkload } from "./workloads.js";
export { SHORT_PROMPTS_DEFAULTS, SLOT_ENGINE, shortPromptsWorkload } from "./workloads-single-turn.js";
export type { ShortPromptsParams } from "./workloads-single-turn.js";
export type { WorkloadName } from "./workloads.js";
export type { BenchRequest, ChatBody, ChatMessage, ChatTool, ChatToolCall, Workload, WorkloadSettings } from "./workload.js";
export { loadTrace, parseTrace, traceWorkload } from "./trace.js";
export type { TraceParseOptions, TraceRecord, TraceWorkloadOptions } from "./trace.js";

// Reading the rows.
export { compareAcrossSeeds, summarizeSeeds } from "./compare.js";
export type { PairedComparison, SeedSummary } from "./compare.js";
export { formatReport } from "./table.js";
export { renderHtmlReport } from "./report.js";

// Errors.
export { BenchError, isBenchError } from "../common/errors.js";
export type { BenchErrorCode } from "../common/errors.js";
