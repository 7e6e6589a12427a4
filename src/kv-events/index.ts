/**
 * `prefix-router/kv-events`: routing on the engines' own KV-cache events (docs/precise.md) — the
 * feeds that subscribe to vLLM's and SGLang's publishers, the events' shapes, the decoder, and the
 * `precise-prefix` strategy's option types. The strategy itself is chosen by name
 * (`strategy: "precise-prefix"`) from the root entry.
 */
export { subscribeKvEvents } from "./subscribe.js";
export type { KvEngineEndpoint, KvEventsSubscribed, KvEventsSubscription } from "./subscribe.js";
export { KvEventFeed, type KvEventFeedStats } from "./feed.js";
export { KvEventFeeds } from "./feeds.js";
export type { KvEventFeedOptions } from "./feed-options.js";
export { DEFAULT_KV_WIRE_LIMITS, KvWireDecoder, type KvWireLimits, type KvWireMessage, normalizeBlockHash } from "./wire.js";
export type { AllBlocksCleared, BlockRemoved, BlockStored, EngineBlockHash, KvEvent, KvEventBatch, KvEventSink } from "./events.js";
export type { OwnTokenizerSource, TokenizerSource, TokenizerStats } from "./tokenizer.js";
export type { KvIndexStats } from "./block-index.js";
export { DEFAULT_PRECISE_PREFIX, PRECISE_PREFIX_LIMITS, type KvFeedLike, type PrecisePrefixOptions } from "../strategies/precise-prefix/options.js";
export type { PrecisePrefixStats, PreciseState } from "../strategies/precise-prefix/stats.js";
