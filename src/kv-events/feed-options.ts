/**
 * The options of one engine's KV-event feed ({@link KvEventFeedOptions}), their defaults, their
 * checking into the feed's settings, and the endpoints of a data-parallel rank.
 */
import type { Timers } from "../internal/timers.js";
import { optionTimers } from "../internal/options.js";
import { checkInteger, describe, orDefault } from "../internal/validate.js";
import { checkLogger, type Logger } from "../logger.js";
import type { KvEventSink } from "./events.js";
import type { KvWireLimits } from "./wire.js";

/** Longest wait for each replay reply, in ms. */
export const DEFAULT_KV_REPLAY_TIMEOUT_MS = 2000;
/** Most replies one replay reads (vLLM's default `buffer_steps`). */
export const DEFAULT_KV_MAX_REPLAY_BATCHES = 10_000;
/** Shortest time between the starts of two replays of one feed, in ms. */
export const DEFAULT_KV_MIN_REPLAY_INTERVAL_MS = 1000;
/** Messages the SUB socket queues while the feed is busy (ZeroMQ drops beyond, seen as a gap). */
export const DEFAULT_KV_RECEIVE_HIGH_WATER_MARK = 10_000;

/** Options of {@link KvEventFeed.open}: one engine's publisher. */
export interface KvEventFeedOptions {
  /** The target id this feed reports for; the sink receives it with every call. */
  readonly engine: string;
  /**
   * The engine's publisher as a subscriber connects to it: `"tcp://10.0.0.7:5557"` (the host and
   * port of vLLM's `--kv-events-config` `endpoint`, whose `*` means "bind everywhere"), or
   * `ipc://…`. The data-parallel rank's offset is added here.
   */
  readonly endpoint: string;
  /** The engine's replay ROUTER (`replay_endpoint`), same form; without it every gap clears. */
  readonly replayEndpoint?: string;
  /** The engine's data-parallel rank: adds it to both ports (`ipc://` gets `_dp<rank>`), as vLLM binds them. @default 0 */
  readonly dataParallelRank?: number;
  /** Topic prefix to subscribe to (vLLM's `topic`; `""` takes everything). @default "" */
  readonly topic?: string;
  /** Where batches and clears go. */
  readonly sink: KvEventSink;
  /** Longest wait for each replay reply, in ms. @default 2000 */
  readonly replayTimeoutMs?: number;
  /** Most replies one replay reads before it is abandoned (and the sink cleared). @default 10000 */
  readonly maxReplayBatches?: number;
  /** Shortest time between the starts of two replays; a gap sooner clears instead. @default 1000 */
  readonly minReplayIntervalMs?: number;
  /** The SUB socket's receive high-water mark, in messages. @default 10000 */
  readonly receiveHighWaterMark?: number;
  /** Decoder bounds over {@link DEFAULT_KV_WIRE_LIMITS}. */
  readonly limits?: Partial<KvWireLimits>;
  /** Wall clock in ms since the epoch (lag = now − the batch's `ts`). @default Date */
  readonly clock?: { now(): number };
  /** Where problems are reported. @default silent */
  readonly logger?: Logger;
}

/** A feed's checked settings. */
export interface FeedConfig {
  engine: string;
  endpoint: string;
  replayEndpoint: string | undefined;
  topic: string;
  sink: KvEventSink;
  replayTimeoutMs: number;
  maxReplayBatches: number;
  minReplayIntervalMs: number;
  receiveHighWaterMark: number;
  clock: { now(): number };
  timers: Timers;
  logger: Logger;
}

/**
 * The endpoint of data-parallel rank `rank`, as vLLM's `offset_endpoint_port` computes it:
 * `tcp://host:port` → `tcp://host:(port + rank)`, `ipc://path` → `ipc://path_dp<rank>`.
 * @throws TypeError / RangeError for an endpoint a subscriber cannot connect to
 */
export function kvEndpoint(name: string, endpoint: unknown, rank: number): string {
  if (typeof endpoint !== "string") throw new TypeError(`Expected \`${name}\` to be a string like "tcp://host:5557", got ${describe(endpoint)}`);
  if (endpoint.startsWith("ipc://") || endpoint.startsWith("inproc://")) {
    return rank === 0 ? endpoint : `${endpoint}_dp${rank}`;
  }
  const m = /^tcp:\/\/(.+):(\d{1,5})$/.exec(endpoint);
  if (m === null) throw new RangeError(`Expected \`${name}\` to be "tcp://host:port" or "ipc://path", got ${JSON.stringify(endpoint)}`);
  const host = m[1]!;
  if (host === "*" || host === "0.0.0.0" || host === "::" || host === "[::]") {
    throw new RangeError(`Expected \`${name}\` to name the engine's host (the engine binds "${host}"; a subscriber connects to its address), got ${JSON.stringify(endpoint)}`);
  }
  const port = Number(m[2]) + rank;
  if (Number(m[2]) < 1 || port > 65_535) throw new RangeError(`Expected \`${name}\`'s port plus the data-parallel rank to be from 1 to 65535, got ${port}`);
  return `tcp://${host}:${port}`;
}

/** Checks `o` into a feed's settings.
 * @throws TypeError / RangeError for an invalid option (the message names it)
 */
export function checkOptions(o: KvEventFeedOptions): FeedConfig {
  if (o === null || typeof o !== "object") throw new TypeError(`Expected the feed options to be an object, got ${describe(o)}`);
  if (typeof o.engine !== "string" || o.engine.length === 0) throw new TypeError(`Expected \`engine\` to be a non-empty string, got ${describe(o.engine)}`);
  const rank = checkInteger("dataParallelRank", orDefault(o.dataParallelRank, 0), 0, 65_535);
  const sink = o.sink as KvEventSink | null | undefined;
  if (sink === null || typeof sink !== "object" || typeof sink.apply !== "function" || typeof sink.clear !== "function") {
    throw new TypeError(`Expected \`sink\` to be an object with apply and clear methods, got ${describe(sink)}`);
  }
  const topic = orDefault(o.topic, "");
  if (typeof topic !== "string") throw new TypeError(`Expected \`topic\` to be a string, got ${describe(topic)}`);
  const clock = orDefault<{ now(): number } | null>(o.clock, Date);
  if (clock === null || typeof clock !== "object" && typeof clock !== "function" || typeof clock.now !== "function") {
    throw new TypeError(`Expected \`clock\` to be an object with a now() method, got ${describe(clock)}`);
  }
  // The replay timeout's timers: a test seam (`TEST_TIMERS`), on no public type.
  const timers = optionTimers("KvEventFeed options", o);
  return {
    engine: o.engine,
    endpoint: kvEndpoint("endpoint", o.endpoint, rank),
    replayEndpoint: o.replayEndpoint === undefined ? undefined : kvEndpoint("replayEndpoint", o.replayEndpoint, rank),
    topic,
    sink,
    replayTimeoutMs: checkInteger("replayTimeoutMs", orDefault(o.replayTimeoutMs, DEFAULT_KV_REPLAY_TIMEOUT_MS), 1, 600_000),
    maxReplayBatches: checkInteger("maxReplayBatches", orDefault(o.maxReplayBatches, DEFAULT_KV_MAX_REPLAY_BATCHES), 1, 10_000_000),
    minReplayIntervalMs: checkInteger("minReplayIntervalMs", orDefault(o.minReplayIntervalMs, DEFAULT_KV_MIN_REPLAY_INTERVAL_MS), 0, 3_600_000),
    receiveHighWaterMark: checkInteger("receiveHighWaterMark", orDefault(o.receiveHighWaterMark, DEFAULT_KV_RECEIVE_HIGH_WATER_MARK), 1, 10_000_000),
    clock,
    timers,
    logger: checkLogger(o.logger),
  };
}
