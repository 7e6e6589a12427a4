/**
 * `prefix-router/bench`: the benchmark of prefix-aware routing on the emulated virtual-time
 * fleet. Every strategy replays the same deterministic request sequence; rows report TTFT
 * percentiles, queueing, token hit rate against the ideal, throughput, spillover, per-instance
 * shares and the router's own decision rate. See docs/bench.md.
 */
export { runBenchmark } from "./run.js";
export type { BenchOptions, BenchProgress, BenchRow, ScaleEvent, WallClock } from "./run.js";
export {
  AGENT_DEFAULTS,
  BENCH_MODEL,
  HOT_PREFIX_DEFAULTS,
  LONG_CONTEXT_DEFAULTS,
  RAG_DEFAULTS,
  SHAREGPT_DEFAULTS,
  WORKLOAD_NAMES,
  agentWorkload,
  builtinWorkload,
  hotPrefixWorkload,
  longContextWorkload,
  ragWorkload,
  sharegptWorkload,
} from "./workloads.js";
export type {
  AgentParams,
  BenchRequest,
  ChatBody,
  ChatMessage,
  ChatTool,
  ChatToolCall,
  HotPrefixParams,
  LongContextParams,
  RagParams,
  SharegptParams,
  Workload,
  WorkloadName,
  WorkloadSettings,
} from "./workloads.js";
