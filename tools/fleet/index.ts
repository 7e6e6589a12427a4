/**
 * `prefix-router/fleet`: an emulated fleet of vLLM-like inference servers with a real
 * prefix-cache model, live over HTTP (`startFleet`) or in virtual time (`VirtualFleet`).
 * See docs/fleet.md.
 */

export { DEFAULT_MODEL, startFleet } from "./live.js";
export type { LiveFleet, LiveInstance, StartFleetOptions } from "./live.js";
export { DEFAULT_ENGINE_CONFIG } from "./config.js";
export type { EngineConfig } from "./config.js";
export { DEFAULT_FAULTS } from "./faults.js";
export type { FaultKnobs } from "./faults.js";
export { VirtualFleet } from "./virtual.js";
export type { InstanceStats, VirtualCallbacks, VirtualFleetOptions, VirtualRequest } from "./virtual.js";
export type { VirtualResult } from "./engine.js";
export { FleetError, isFleetError } from "./errors.js";
export type { FleetErrorCode } from "./errors.js";
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
export type { LlamaFleet, LlamaFleetOptions, LlamaKvEventsOptions, LlamaTarget } from "./llama/index.js";
export { KV_BLOCK_SIZE, SlotBlockEvents, engineBlockHash, toVllmEvents } from "./llama/kv-events.js";
export type { KvPublisher } from "./llama/kv-events.js";
export { TINY_LLAMA_CHAT_TEMPLATE, tinyLlamaTokenizerConfig, tinyLlamaTokenizerJson, writeTinyLlamaTokenizer } from "./llama/tokenizer-files.js";
export { DEFAULT_SLOT_PROMPT_SIMILARITY } from "./llama/slots.js";
export { KvEventPublisher, encodeWireBatch, offsetEndpoint } from "./kv-events/publisher.js";
export { kvEventBlockSize } from "./kv-events/slot-blocks.js";
export type {
  KvEventPublisherOptions,
  WireBatch,
  WireBlockHash,
  WireBlockRemoved,
  WireBlockStored,
  WireAllBlocksCleared,
  WireEncoding,
  WireEvent,
} from "./kv-events/publisher.js";
export { byteTokens, emulatedTokens } from "./tokenizer.js";
