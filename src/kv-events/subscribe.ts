/**
 * `subscribeKvEvents`: the engines' KV-event feeds as `precisePrefix.feed` takes them — a
 * factory that the strategy calls with its index, and that opens one feed per engine into it.
 */
import type { Logger } from "../logger.js";
import { checkKnownKeys, describe, keysOf } from "../internal/validate.js";
import type { KvEventSink } from "./events.js";
import type { KvEventFeedOptions } from "./feed-options.js";
import { KvEventFeeds } from "./feeds.js";

/** Where one engine publishes: its PUB endpoint, or the endpoints and its data-parallel rank. */
export type KvEngineEndpoint = string | { readonly endpoint: string; readonly replayEndpoint?: string; readonly dataParallelRank?: number };

/** Options of {@link subscribeKvEvents}. */
export interface KvEventsSubscription {
  /** Each engine's publisher, by target id: `{ "vllm-0": { endpoint: "tcp://10.0.0.7:5557", replayEndpoint: "tcp://10.0.0.7:5657" } }`. */
  readonly engines: Readonly<Record<string, KvEngineEndpoint>>;
  /** Topic prefix (vLLM's `topic`). @default "" */
  readonly topic?: string;
  /** Where feed problems are reported (gaps, replays, undecodable messages). @default silent */
  readonly logger?: Logger;
}

const SUBSCRIPTION_KEYS = keysOf<KvEventsSubscription>()(["engines", "topic", "logger"]);

/** The feeds {@link subscribeKvEvents} opened, with a promise settled once every engine's feed is open (or failed to, logged). */
export interface KvEventsSubscribed extends Pick<KvEventFeeds, "inSync" | "stats" | "close" | "get"> {
  readonly opened: Promise<void>;
}

/**
 * A `precisePrefix.feed` that subscribes to every engine's KV events (needs the optional peers
 * `zeromq` and `@msgpack/msgpack`). An engine whose feed has not heard from it yet is not in sync:
 * the strategy routes it on what this router sent it until then.
 * @example
 * const router = await createRouter({
 *   targets: [{ id: "vllm-0" }, { id: "vllm-1" }],
 *   strategy: "precise-prefix",
 *   precisePrefix: {
 *     tokenizer: { endpoint: "http://10.0.0.7:8000" },
 *     feed: subscribeKvEvents({ engines: { "vllm-0": "tcp://10.0.0.7:5557", "vllm-1": "tcp://10.0.0.8:5557" } }),
 *   },
 * });
 */
export function subscribeKvEvents(options: KvEventsSubscription): (sink: KvEventSink) => KvEventsSubscribed {
  if (options === null || typeof options !== "object") throw new TypeError(`Expected \`subscribeKvEvents\` options to be an object, got ${describe(options)}`);
  checkKnownKeys("subscribeKvEvents", options, SUBSCRIPTION_KEYS);
  const engines = options.engines;
  if (engines === null || typeof engines !== "object" || Object.keys(engines).length === 0) {
    throw new TypeError(`Expected \`engines\` to be an object of at least one target id → endpoint, got ${describe(engines)}`);
  }
  for (const [id, e] of Object.entries(engines)) {
    const endpoint = typeof e === "string" ? e : e?.endpoint;
    if (typeof endpoint !== "string" || !/^(tcp|ipc):\/\/./.test(endpoint)) {
      throw new TypeError(`Expected \`engines[${JSON.stringify(id)}]\` to be a tcp:// or ipc:// endpoint (or { endpoint, replayEndpoint? }), got ${describe(e)}`);
    }
  }
  return (sink) => {
    const feeds = new KvEventFeeds();
    const opened = Promise.all(
      Object.entries(engines).map(([engine, e]) => {
        const where = typeof e === "string" ? { endpoint: e } : e;
        const feed: KvEventFeedOptions = { engine, sink, ...where, ...(options.topic !== undefined && { topic: options.topic }), ...(options.logger !== undefined && { logger: options.logger }) };
        return feeds.add(feed).then(
          () => undefined,
          (error: unknown) => options.logger?.warn(`precise-prefix: no KV-event feed for ${JSON.stringify(engine)}: ${(error as Error).message}`),
        );
      }),
    ).then(() => undefined);
    return { opened, inSync: (engine) => feeds.inSync(engine), stats: () => feeds.stats(), get: (engine) => feeds.get(engine), close: () => feeds.close() };
  };
}
