/**
 * Options of the `precise-prefix` strategy (`RouterOptions.precisePrefix`): their defaults,
 * limits and validation. Messages name the option, the range and the value received.
 */
import { checkBoolean, checkInteger, checkKnownKeys, describe, keysOf, orDefault } from "../../internal/validate.js";
import type { KvEventSink } from "../../kv-events/events.js";
import type { TokenizerSource } from "../../kv-events/tokenizer.js";

/**
 * What the strategy reads of an engine's KV-event feed: whether it is in sync (its events since
 * the last clear are all applied) and its statistics (events/s, lag, gaps, replays), reported
 * under `router.stats().precise.feed`. The feed delivers into the strategy's index, a
 * {@link KvEventSink}: pass a factory to receive it.
 */
export interface KvFeedLike {
  inSync(engine: string): boolean;
  stats?(): unknown;
}

/** Options of the `precise-prefix` strategy. */
export interface PrecisePrefixOptions {
  /**
   * Where tokens come from: the model's `tokenizer.json` and `tokenizer_config.json` (paths or
   * content; needs the optional packages `@huggingface/tokenizers` and `@huggingface/jinja`), or
   * an engine's `POST /tokenize` (`{ endpoint }`, with the chat template or the config holding
   * it), or your own `{ render(body), encode(text) }` — called synchronously in each request's
   * read, so they must be cheap (a simulation that never yields still routes precisely). Without
   * it every request routes on the approximate strategy (`longest-prefix`).
   * @default undefined
   */
  tokenizer?: TokenizerSource;
  /**
   * Tokens per block: must equal the engines' block size (vLLM `--block-size`, 16 by default;
   * SGLang's page size). Events of another size are skipped and counted. From 1 to 1,024.
   * @default 16
   */
  blockSize?: number;
  /**
   * The served model's name: the first extra key of every chain (as the engine's own hash), the
   * `model` of `/tokenize` calls; a request whose `model` differs is taken as a LoRA adapter of
   * that name (vLLM serves adapters under their own names).
   * @default undefined
   */
  model?: string;
  /**
   * The index's bound, in (engine, block) pairs; past it whole blocks are evicted (counted).
   * Engines send removals, so set it above the fleet's total cache in blocks. ≤ 51 bytes per pair
   * up to 32 engines. From 1,024 to 67,108,864.
   * @default 1048576
   */
  capacityBlocks?: number;
  /**
   * How long the strategy's own decisions count as held on their engine before its events confirm
   * them, ms: the time an engine takes to prefill a queued prompt and publish. From 0 to 600,000.
   * @default 10000
   */
  pendingTtlMs?: number;
  /** Most pending (engine, block) entries; the oldest go first. From 0 to 16,777,216. @default 65536 */
  pendingCapacity?: number;
  /**
   * The engines' KV-event feed (or a factory given the strategy's index as its sink): engines
   * whose feed is not in sync route on what this router sent them (the approximate index).
   * Without a feed no engine is in sync.
   * @default undefined
   */
  feed?: KvFeedLike | ((sink: KvEventSink) => KvFeedLike);
  /**
   * Base URL of one engine whose `POST /tokenize` checks the tokenizer at start: a mismatch is a
   * warning and every request routes on the approximate strategy, never silent zero hits.
   * @default undefined
   */
  checkUrl?: string;
  /** Tokens of prompt segments kept cached (LRU): 4 bytes each. From 0 to 268,435,456. @default 4194304 */
  cacheTokens?: number;
  /** Characters queued for tokenization at most; past it new segments wait for a later request. From 1,024 to 268,435,456. @default 8388608 */
  maxQueuedChars?: number;
  /** Tokenize in a worker thread (`false`: in this thread, one batch per macrotask). @default true */
  worker?: boolean;
  /** Timeout of one `/tokenize` call, ms. From 1 to 600,000. @default 10000 */
  tokenizeTimeoutMs?: number;
  /**
   * How long the adapters hold a request whose prompt is not all tokenized yet (a system prompt
   * or document this process has not seen) for its tokens, ms, before routing it on what is
   * known. Tokenizing runs off the event loop meanwhile; a wrong engine costs a whole prefill.
   * 0: never wait. From 0 to 10,000.
   * @default 100
   */
  tokenizeWaitMs?: number;
  /**
   * A request whose longest held prefix on an engine is part of a request this router is running
   * there counts that engine as holding nothing — for engines whose cache is private to a running
   * request (llama.cpp's slots), where a second request for a running prefix starts cold. vLLM
   * and SGLang share a running request's blocks. `"auto"`: only on an engine whose responses to
   * such requests were mostly misses; `true` always; `false` never.
   * @default "auto"
   */
  spreadRunningPrefixes?: boolean | "auto";
}

/** Defaults of {@link PrecisePrefixOptions}. */
export const DEFAULT_PRECISE_PREFIX: Readonly<{
  blockSize: number;
  capacityBlocks: number;
  pendingTtlMs: number;
  pendingCapacity: number;
  cacheTokens: number;
  maxQueuedChars: number;
  worker: boolean;
  tokenizeTimeoutMs: number;
  tokenizeWaitMs: number;
  spreadRunningPrefixes: boolean | "auto";
}> = Object.freeze({
  blockSize: 16,
  capacityBlocks: 1_048_576,
  pendingTtlMs: 10_000,
  pendingCapacity: 65_536,
  cacheTokens: 4_194_304,
  maxQueuedChars: 8_388_608,
  worker: true,
  tokenizeTimeoutMs: 10_000,
  tokenizeWaitMs: 100,
  spreadRunningPrefixes: "auto",
});

/** @internal Every key of {@link PrecisePrefixOptions}. */
export const PRECISE_PREFIX_OPTION_KEYS = keysOf<PrecisePrefixOptions>()([
  "tokenizer", "blockSize", "model", "capacityBlocks", "pendingTtlMs", "pendingCapacity", "feed", "checkUrl",
  "cacheTokens", "maxQueuedChars", "worker", "tokenizeTimeoutMs", "tokenizeWaitMs", "spreadRunningPrefixes",
]);

/** Ranges of {@link PrecisePrefixOptions}, inclusive. */
export const PRECISE_PREFIX_LIMITS = Object.freeze({
  blockSize: { min: 1, max: 1024 },
  capacityBlocks: { min: 1024, max: 67_108_864 },
  pendingTtlMs: { min: 0, max: 600_000 },
  pendingCapacity: { min: 0, max: 16_777_216 },
  cacheTokens: { min: 0, max: 268_435_456 },
  maxQueuedChars: { min: 1024, max: 268_435_456 },
  tokenizeTimeoutMs: { min: 1, max: 600_000 },
  tokenizeWaitMs: { min: 0, max: 10_000 },
});

/** @internal Validated options. */
export interface PrecisePrefixConfig extends Readonly<typeof DEFAULT_PRECISE_PREFIX> {
  readonly tokenizer: TokenizerSource | undefined;
  readonly model: string | undefined;
  readonly feed: KvFeedLike | ((sink: KvEventSink) => KvFeedLike) | undefined;
  readonly checkUrl: string | undefined;
}

const NAME = "precisePrefix";

/** @internal Validates `RouterOptions.precisePrefix`. */
export function resolvePrecisePrefixOptions(options: unknown): PrecisePrefixConfig {
  if (options === undefined) return Object.freeze({ ...DEFAULT_PRECISE_PREFIX, tokenizer: undefined, model: undefined, feed: undefined, checkUrl: undefined });
  if (options === null || typeof options !== "object" || Array.isArray(options)) throw new TypeError(`Expected \`${NAME}\` to be an object, got ${describe(options)}`);
  checkKnownKeys(NAME, options, PRECISE_PREFIX_OPTION_KEYS);
  const o = options as PrecisePrefixOptions;
  const d = DEFAULT_PRECISE_PREFIX;
  const L = PRECISE_PREFIX_LIMITS;
  const int = (k: keyof typeof L) => checkInteger(`${NAME}.${k}`, orDefault(o[k], d[k]), L[k].min, L[k].max);
  return Object.freeze({
    tokenizer: checkTokenizer(o.tokenizer),
    blockSize: int("blockSize"),
    model: checkOptionalString("model", o.model),
    capacityBlocks: int("capacityBlocks"),
    pendingTtlMs: int("pendingTtlMs"),
    pendingCapacity: int("pendingCapacity"),
    feed: checkFeed(o.feed),
    checkUrl: checkUrl("checkUrl", o.checkUrl),
    cacheTokens: int("cacheTokens"),
    maxQueuedChars: int("maxQueuedChars"),
    worker: checkBoolean(`${NAME}.worker`, orDefault(o.worker, d.worker)),
    tokenizeTimeoutMs: int("tokenizeTimeoutMs"),
    tokenizeWaitMs: int("tokenizeWaitMs"),
    spreadRunningPrefixes: checkSpread(orDefault(o.spreadRunningPrefixes, d.spreadRunningPrefixes)),
  });
}

function checkSpread(value: unknown): boolean | "auto" {
  if (typeof value === "boolean" || value === "auto") return value;
  throw new TypeError(`Expected \`${NAME}.spreadRunningPrefixes\` to be a boolean or "auto", got ${describe(value)}`);
}

function checkOptionalString(key: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || value.length === 0 || value.length > 256) {
    throw new TypeError(`Expected \`${NAME}.${key}\` to be a string of 1 to 256 characters, got ${describe(value)}`);
  }
  return value;
}

function checkUrl(key: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  let url: URL | undefined;
  try {
    url = typeof value === "string" ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:")) {
    throw new TypeError(`Expected \`${NAME}.${key}\` to be an http(s) URL, got ${describe(value)}`);
  }
  return value as string;
}

function checkFileOrObject(key: string, value: unknown, optional: boolean): void {
  if (optional && value === undefined) return;
  if ((typeof value === "string" && value.length > 0) || (value !== null && typeof value === "object" && !Array.isArray(value))) return;
  throw new TypeError(`Expected \`${NAME}.tokenizer.${key}\` to be a file path or the file's parsed JSON object, got ${describe(value)}`);
}

function checkTokenizer(value: unknown): TokenizerSource | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new TypeError(`Expected \`${NAME}.tokenizer\` to be { tokenizerJson, tokenizerConfig }, { endpoint } or { render, encode }, got ${describe(value)}`);
  }
  const t = value as Record<string, unknown>;
  if ("render" in t || "encode" in t) {
    for (const k of ["render", "encode"] as const) if (typeof t[k] !== "function") throw new TypeError(`Expected \`${NAME}.tokenizer.${k}\` to be a function, got ${describe(t[k])}`);
    return Object.freeze({ render: (t.render as (b: unknown) => string | undefined).bind(t), encode: (t.encode as (s: string) => readonly number[]).bind(t) });
  }
  if (t.chatTemplate !== undefined && typeof t.chatTemplate !== "string") {
    throw new TypeError(`Expected \`${NAME}.tokenizer.chatTemplate\` to be a string, got ${describe(t.chatTemplate)}`);
  }
  if ("endpoint" in t) {
    checkUrl("tokenizer.endpoint", t.endpoint);
    checkFileOrObject("tokenizerConfig", t.tokenizerConfig, true);
    return Object.freeze({ ...t }) as TokenizerSource;
  }
  checkFileOrObject("tokenizerJson", t.tokenizerJson, false);
  checkFileOrObject("tokenizerConfig", t.tokenizerConfig, false);
  return Object.freeze({ ...t }) as TokenizerSource;
}

function checkFeed(value: unknown): PrecisePrefixConfig["feed"] {
  if (value === undefined || typeof value === "function") return value as PrecisePrefixConfig["feed"];
  if (value !== null && typeof value === "object" && typeof (value as KvFeedLike).inSync === "function") return value as KvFeedLike;
  throw new TypeError(`Expected \`${NAME}.feed\` to be an object with an inSync(engine) method, or a function given the index that returns one, got ${describe(value)}`);
}
