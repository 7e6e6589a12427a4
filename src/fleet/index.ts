/**
 * `prefix-router/fleet`: an emulated fleet of vLLM-like inference servers with a real
 * prefix-cache model, in virtual time (`VirtualFleet`) or live over HTTP (`startFleet`); and a
 * fleet of real llama.cpp engines (`startLlamaFleet`, docs/real-engines.md).
 * See docs/fleet.md.
 */

export { DEFAULT_ENGINE_CONFIG, resolveEngineConfig } from "./config.js";
export type { EngineConfig } from "./config.js";
export { idleTtftMs, prefillChunkMs, decodeTokenMs } from "./cost-model.js";
export { Engine } from "./engine.js";
export type { EngineCallbacks, EngineOptions, EngineRequest, EngineStats, EngineTicket, VirtualResult } from "./engine.js";
export { FleetError, isFleetError } from "./errors.js";
export type { FleetErrorCode } from "./errors.js";
export { Histogram, TTFT_BUCKETS_SECONDS } from "./histogram.js";
export { KvCache } from "./kv-cache.js";
export type { KvCacheUsage } from "./kv-cache.js";
export { createRandom } from "../sim/random.js";
export type { RandomSource } from "../sim/random.js";
export { renderPrompt } from "./template.js";
export { cacheNamespace, cacheSaltOf } from "./cache-salt.js";
export { CHARS_PER_TOKEN, blockKeys, countTokens, fillerText, fillerToken } from "./tokenizer.js";
export { VirtualFleet, defaultInstanceIds } from "./virtual.js";
export type { InstanceStats, VirtualCallbacks, VirtualFleetOptions, VirtualRequest } from "./virtual.js";
export { DEFAULT_FAULTS, applyFaults } from "./faults.js";
export type { FaultKnobs } from "./faults.js";
export { DEFAULT_MODEL, startFleet } from "./live.js";
export type { LiveFleet, LiveInstance, StartFleetOptions } from "./live.js";
export { renderMetrics } from "./metrics.js";
export type { MetricsSnapshot } from "./metrics.js";
export {
  DEFAULT_ENGINE_START_TIMEOUT_MS,
  DEFAULT_LLAMA_CONTEXT_SIZE,
  DEFAULT_LLAMA_INSTANCES,
  DEFAULT_LLAMA_MAX_TOKENS,
  DEFAULT_LLAMA_MODEL,
  DEFAULT_LLAMA_SLOTS,
  ENGINE_STOP_GRACE_MS,
  startLlamaFleet,
} from "./llama/index.js";
export type { LlamaFleet, LlamaFleetOptions, LlamaTarget } from "./llama/index.js";
export { DEFAULT_SLOT_PROMPT_SIMILARITY } from "./llama/slots.js";
