/**
 * The shared response store's options, their validation, its Redis keys and its write script:
 * what `response-store.ts` builds on (see its header for the store's behaviour).
 *
 * Keys: `{<keyPrefix>}:resp:<id>` → the target id, `SET … PX ttlMs` (every key expires). An id
 * made only of `A–Z a–z 0–9 _ . -` (vLLM's `resp_…`, OpenAI's) is the key's tail as it is; any
 * other id (at most `MAX_RESPONSE_ID_CHARS` characters, the local map's cap: responses.ts) is written
 * as `x:` + the hex of its UTF-8 bytes (`u:` + the hex of its UTF-16 code units when it has a lone
 * surrogate, which UTF-8 cannot carry), so no id reaches Redis unescaped and two ids never share
 * a key. A value is read with `GETRANGE 0 MAX_VALUE_BYTES` (a value another program made huge is
 * never read whole) and counts only when it names a current target.
 */
import { checkRedisURL } from "../internal/redis-url.js";
import { isWellFormedId } from "../internal/target-id.js";
import { optionInteger, optionObject, optionString } from "../internal/options.js";
import { checkKnownKeys, describe, keysOf } from "../internal/validate.js";
import { DEFAULT_LOAD_VIEW } from "../load-view/options.js";

/** `responseAffinity.store`: where processes share which target served which response. */
export interface ResponseStoreOptions {
  source: "redis";
  /** `redis://[user:password@]host:port[/db]` (or `rediss://`). @default "redis://127.0.0.1:6379" */
  url?: string;
  /**
   * Prefix of every key; the keys are `{<keyPrefix>}:resp:<id>`. Processes in front of the same
   * fleet share it (it may be the `redis` load view's: the key names do not collide).
   * @default "prefix-router"
   */
  keyPrefix?: string;
  /**
   * How long a response id → target entry lives in Redis, ms (every key expires). Match it to
   * how long your engines keep stored responses. From 1,000 to 604,800,000 (7 days).
   * @default 3600000 (1 hour)
   */
  ttlMs?: number;
  /**
   * Longest wait for a read, ms (a follow-up whose id this process does not know); past it the
   * request is routed as without the store. From 1 to 60,000.
   * @default 50
   */
  timeoutMs?: number;
}

/** Defaults of {@link ResponseStoreOptions}. */
export const DEFAULT_RESPONSE_STORE = Object.freeze({
  url: DEFAULT_LOAD_VIEW.redisUrl,
  keyPrefix: DEFAULT_LOAD_VIEW.redisKeyPrefix,
  ttlMs: 3_600_000,
  timeoutMs: 50,
});

/** Writes waiting or sent and unanswered, at most; more are dropped (and counted, `writesDropped`). */
export const MAX_PENDING_WRITES = 10_000;
/** A target id longer than this is not written (nor matched when read). */
export const MAX_TARGET_ID_CHARS = 1024;
/** Bytes of a value read: a longer value is no target id. */
export const MAX_VALUE_BYTES = 4 * MAX_TARGET_ID_CHARS;
export const FIRST_RETRY_DELAY_MS = 50;
export const MAX_RETRY_DELAY_MS = 2000;
/** Connecting may take longer than one read (TLS, another zone). */
export const MIN_CONNECT_TIMEOUT_MS = 1000;
const SAFE_ID = /^[A-Za-z0-9_.-]+$/;

/** @internal Validated {@link ResponseStoreOptions}. */
export interface ResponseStoreConfig {
  readonly source: "redis";
  readonly url: string;
  readonly keyPrefix: string;
  readonly ttlMs: number;
  readonly timeoutMs: number;
}

/** @internal Every key of {@link ResponseStoreOptions}. */
export const RESPONSE_STORE_OPTION_KEYS = keysOf<ResponseStoreOptions>()(["source", "url", "keyPrefix", "ttlMs", "timeoutMs"]);

/** @internal Validates `responseAffinity.store` (`"redis"` is `{ source: "redis" }`). */
export function resolveResponseStore(value: unknown): ResponseStoreConfig {
  const name = "responseAffinity.store";
  const o = value === "redis" ? { source: "redis" } : optionObject(name, value);
  checkKnownKeys(name, o, RESPONSE_STORE_OPTION_KEYS);
  if (o["source"] !== "redis") throw new TypeError(`Expected \`${name}.source\` to be "redis", got ${describe(o["source"])}`);
  const url = checkRedisURL(`${name}.url`, optionString(`${name}.url`, o["url"], DEFAULT_RESPONSE_STORE.url));
  return {
    source: "redis",
    url,
    keyPrefix: optionString(`${name}.keyPrefix`, o["keyPrefix"], DEFAULT_RESPONSE_STORE.keyPrefix),
    ttlMs: optionInteger(`${name}.ttlMs`, o["ttlMs"], DEFAULT_RESPONSE_STORE.ttlMs, 1000, 604_800_000),
    timeoutMs: optionInteger(`${name}.timeoutMs`, o["timeoutMs"], DEFAULT_RESPONSE_STORE.timeoutMs, 1, 60_000),
  };
}

/**
 * The Redis key of response `id` (an id the local map would keep: 1 to 512 characters). An id
 * with a lone surrogate has no UTF-8 form (it would become U+FFFD, the key of another id): it is
 * written as `u:` + the hex of its UTF-16 code units instead.
 */
export function responseKey(keyPrefix: string, id: string): string {
  return `{${keyPrefix}}:resp:${SAFE_ID.test(id) ? id : escapedId(id)}`;
}

function escapedId(id: string): string {
  if (isWellFormedId(id)) return `x:${Buffer.from(id, "utf8").toString("hex")}`;
  let hex = "u:";
  for (let i = 0; i < id.length; i++) hex += id.charCodeAt(i).toString(16).padStart(4, "0");
  return hex;
}

/** @internal What the store uses of an ioredis client. */
export interface StoreClient {
  status: string;
  connect(): Promise<void>;
  getrange(key: string, start: number, end: number): Promise<string>;
  time(): Promise<[string, string]>;
  defineCommand(name: string, definition: { numberOfKeys: number; lua: string }): void;
  pipeline(): { [WRITE_COMMAND](key: string, value: string, ttlMs: number, deadlineMs: number): unknown; exec(): Promise<[Error | null, unknown][] | null> };
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  quit(): Promise<unknown>;
  disconnect(): void;
  stream?: { unref?(): void; destroy?(): void };
}

/** The script that writes one id: `SET … PX ttlMs` unless Redis's clock is past the deadline (0: none). */
export const WRITE_COMMAND = "prefixRouterResponse";
export const WRITE_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local deadline = tonumber(ARGV[3])
if deadline ~= nil and deadline > 0 and now > deadline then return {0, now} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {1, now}
`;
