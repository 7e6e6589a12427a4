/**
 * The shared store of response affinity: which target served which response id, in one Redis
 * that every application process reads, so a follow-up sent through any process reaches the
 * replica holding its response. The client is the `redis` load view's (`ioredis`, an optional
 * peer), configured the same way: no offline queue, no automatic retry, reconnection on this
 * store's own schedule.
 *
 * Keys: `{<keyPrefix>}:resp:<id>` → the target id, `SET … PX ttlMs` (every key expires). An id
 * made only of `A–Z a–z 0–9 _ . -` (vLLM's `resp_…`, OpenAI's) is the key's tail as it is; any
 * other id (at most `MAX_RESPONSE_ID_CHARS` characters, the local map's cap: responses.ts) is written
 * as `x:` + the hex of its UTF-8 bytes, so no id reaches Redis unescaped and two ids never share
 * a key. A value is read with `GETRANGE 0 MAX_VALUE_BYTES` (a value another program made huge is
 * never read whole) and counts only when it names a current target.
 *
 * Cost per request: a write is a map insert on the response path, never awaited; the writes made
 * in one run of synchronous code go out together (one command, or one pipeline) in a microtask
 * after it — on the wire before the caller can have read the id and sent a follow-up anywhere.
 * At most {@link MAX_PENDING_WRITES} writes wait or are in flight (more are dropped and counted).
 * A read is one round trip, only for a follow-up whose id the local map lacks, bounded by
 * `timeoutMs`.
 *
 * Fail-safe: a read that fails or times out answers "unknown" (the request is routed as without
 * the store) and makes the next reads skip the store for a backoff (50 ms doubling to 2 s, reset
 * by an answer), so a slow Redis costs at most one `timeoutMs` per backoff period. While the
 * connection is down, reads are skipped and writes dropped (both counted); it is reopened on an
 * unref'd timer with the same backoff. Nothing here throws into a request.
 */
import { redactText, redactURL } from "../internal/redact.js";
import { optionInteger, optionObject, optionString } from "../internal/options.js";
import { checkKnownKeys, describe, keysOf } from "../internal/validate.js";
import { DEFAULT_LOAD_VIEW } from "../load-view/options.js";
import { type RedisConstructor, failFastOptions, loadRedisClient } from "../load-view/redis.js";
import type { Clock, ResponseStoreStats } from "../types.js";

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

/** Writes waiting or in flight, at most; more are dropped (and counted). */
export const MAX_PENDING_WRITES = 10_000;
/** A target id longer than this is not written (nor matched when read). */
export const MAX_TARGET_ID_CHARS = 1024;
/** Bytes of a value read: a longer value is no target id. */
const MAX_VALUE_BYTES = 4 * MAX_TARGET_ID_CHARS;
const FIRST_RETRY_DELAY_MS = 50;
const MAX_RETRY_DELAY_MS = 2000;
/** Connecting may take longer than one read (TLS, another zone). */
const MIN_CONNECT_TIMEOUT_MS = 1000;
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
  const url = optionString(`${name}.url`, o["url"], DEFAULT_RESPONSE_STORE.url);
  if (!/^rediss?:\/\//.test(url)) throw new RangeError(`Expected \`${name}.url\` to be a redis:// or rediss:// URL, got ${describe(redactURL(url))}`);
  return {
    source: "redis",
    url,
    keyPrefix: optionString(`${name}.keyPrefix`, o["keyPrefix"], DEFAULT_RESPONSE_STORE.keyPrefix),
    ttlMs: optionInteger(`${name}.ttlMs`, o["ttlMs"], DEFAULT_RESPONSE_STORE.ttlMs, 1000, 604_800_000),
    timeoutMs: optionInteger(`${name}.timeoutMs`, o["timeoutMs"], DEFAULT_RESPONSE_STORE.timeoutMs, 1, 60_000),
  };
}

/** The Redis key of response `id` (an id the local map would keep: 1 to 512 characters). */
export function responseKey(keyPrefix: string, id: string): string {
  return `{${keyPrefix}}:resp:${SAFE_ID.test(id) ? id : `x:${Buffer.from(id, "utf8").toString("hex")}`}`;
}

/** What the store uses of an ioredis client. */
interface StoreClient {
  status: string;
  connect(): Promise<void>;
  getrange(key: string, start: number, end: number): Promise<string>;
  set(key: string, value: string, px: "PX", ms: number): Promise<unknown>;
  pipeline(): { set(key: string, value: string, px: "PX", ms: number): unknown; exec(): Promise<[Error | null, unknown][] | null> };
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  quit(): Promise<unknown>;
  disconnect(): void;
  stream?: { unref?(): void };
}

/** @internal The Redis store of response affinity. */
export class RedisResponseStore {
  private readonly client: StoreClient;
  private pending = new Map<string, string>();
  private scheduled = false;
  /** Writes sent and not yet answered. */
  private writing = 0;
  private closed = false;
  /** No read before this time (after a failed one). */
  private readAfterMs = Number.NEGATIVE_INFINITY;
  private readDelayMs = FIRST_RETRY_DELAY_MS;
  private connectDelayMs = FIRST_RETRY_DELAY_MS;
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly counts = { hits: 0, misses: 0, errors: 0, timeouts: 0, skipped: 0, writes: 0, writeErrors: 0 };
  private lastError: string | null = null;
  private readonly connecting: Promise<void>;

  constructor(
    private readonly config: ResponseStoreConfig,
    private readonly clock: Clock,
    Redis: RedisConstructor,
  ) {
    const connectTimeout = Math.max(MIN_CONNECT_TIMEOUT_MS, config.timeoutMs);
    // A write (or a read this store gave up on) is failed by the client after connectTimeout.
    this.client = new Redis(config.url, failFastOptions(connectTimeout)) as unknown as StoreClient;
    this.client.on("error", (e) => this.fail(e));
    this.client.on("connect", () => this.client.stream?.unref?.());
    // The client does not reconnect by itself (retryStrategy); this store does, on a timer.
    this.client.on("end", () => this.scheduleReconnect());
    this.client.on("ready", () => {
      this.connectDelayMs = FIRST_RETRY_DELAY_MS;
      this.readAfterMs = Number.NEGATIVE_INFINITY;
      this.readDelayMs = FIRST_RETRY_DELAY_MS;
    });
    this.connecting = this.connect();
  }

  /** Settles once the first connection is made or has failed (never rejects). */
  ready(): Promise<void> {
    return this.connecting;
  }

  /**
   * The target id stored for response `id`, if Redis answers within `timeoutMs` and it is one of
   * `isTarget`'s; `undefined` otherwise. Never rejects.
   */
  async get(id: string, isTarget: (targetId: string) => boolean): Promise<string | undefined> {
    if (this.closed || this.client.status !== "ready" || this.clock.now() < this.readAfterMs) {
      this.counts.skipped++;
      return undefined;
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<typeof TIMED_OUT>((resolve) => {
      // Decided after the next poll phase: when this process itself stalled past timeoutMs, an
      // answer already waiting in the socket is read first instead of being counted a timeout.
      timer = setTimeout(() => setImmediate(resolve, TIMED_OUT), this.config.timeoutMs);
      timer.unref?.();
    });
    let answer: string | typeof TIMED_OUT;
    try {
      const reading = this.client.getrange(responseKey(this.config.keyPrefix, id), 0, MAX_VALUE_BYTES);
      // A read given up on still settles later: its rejection must not go unhandled.
      reading.catch(() => undefined);
      answer = await Promise.race([reading, timeout]);
    } catch (e) {
      this.readFailed(e, false);
      return undefined;
    } finally {
      clearTimeout(timer);
    }
    if (answer === TIMED_OUT) {
      this.readFailed(new Error(`read timed out after ${this.config.timeoutMs} ms`), true);
      return undefined;
    }
    this.readDelayMs = FIRST_RETRY_DELAY_MS;
    if (typeof answer === "string" && answer.length > 0 && answer.length <= MAX_TARGET_ID_CHARS && isTarget(answer)) {
      this.counts.hits++;
      return answer;
    }
    this.counts.misses++;
    return undefined;
  }

  /** Stores that `targetId` served response `id`, once the running synchronous code is done. Never throws. */
  put(id: string, targetId: string): void {
    if (this.closed) return;
    if (targetId.length > MAX_TARGET_ID_CHARS || (this.pending.size + this.writing >= MAX_PENDING_WRITES && !this.pending.has(id))) {
      this.counts.writeErrors++;
      return;
    }
    this.pending.set(id, targetId);
    this.schedule();
  }

  stats(): ResponseStoreStats {
    return {
      source: "redis",
      healthy: !this.closed && this.client.status === "ready" && this.clock.now() >= this.readAfterMs,
      ...this.counts,
      lastError: this.lastError,
    };
  }

  /** Sends the writes still waiting, then closes the connection. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    clearTimeout(this.reconnectTimer);
    if (this.client.status === "ready") {
      try {
        await this.flush();
        this.closed = true;
        await this.client.quit();
        return;
      } catch {
        // Disconnected below.
      }
    }
    this.closed = true;
    this.client.disconnect();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  /** Sends the waiting writes: one `SET`, or one pipeline of them. Never rejects. */
  private async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    if (this.client.status !== "ready") {
      this.counts.writeErrors += batch.size;
      return;
    }
    const { keyPrefix, ttlMs } = this.config;
    this.writing += batch.size;
    try {
      if (batch.size === 1) {
        const [id, targetId] = batch.entries().next().value as [string, string];
        await this.client.set(responseKey(keyPrefix, id), targetId, "PX", ttlMs);
        this.counts.writes++;
        return;
      }
      const pipeline = this.client.pipeline();
      for (const [id, targetId] of batch) pipeline.set(responseKey(keyPrefix, id), targetId, "PX", ttlMs);
      const results = (await pipeline.exec()) ?? [];
      for (const [error] of results) {
        if (error === null) this.counts.writes++;
        else this.writeFailed(error, 1);
      }
      if (results.length < batch.size) this.counts.writeErrors += batch.size - results.length;
    } catch (e) {
      this.writeFailed(e, batch.size);
    } finally {
      this.writing -= batch.size;
    }
  }

  private readFailed(e: unknown, timedOut: boolean): void {
    this.counts.errors++;
    if (timedOut) this.counts.timeouts++;
    this.readAfterMs = this.clock.now() + this.readDelayMs;
    this.readDelayMs = Math.min(2 * this.readDelayMs, MAX_RETRY_DELAY_MS);
    this.fail(e);
  }

  private writeFailed(e: unknown, n: number): void {
    this.counts.writeErrors += n;
    this.fail(e);
  }

  private fail(e: unknown): void {
    this.lastError = redactText(e instanceof Error ? e.message : String(e));
  }

  /** Reopens the connection after it ended, after a backoff (50 ms doubling to 2 s, reset when ready). */
  private scheduleReconnect(): void {
    if (this.closed || this.reconnectTimer !== undefined) return;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      if (!this.closed && this.client.status === "end") void this.connect();
    }, this.connectDelayMs);
    this.reconnectTimer.unref?.();
    this.connectDelayMs = Math.min(2 * this.connectDelayMs, MAX_RETRY_DELAY_MS);
  }

  private connect(): Promise<void> {
    return this.client.connect().catch((e: unknown) => this.fail(e));
  }
}

const TIMED_OUT = Symbol("timed out");

/** @internal Opens the store (loading `ioredis`; `ERR_MISSING_PEER` when it is absent) and waits for its first connection. */
export async function openResponseStore(config: ResponseStoreConfig, clock: Clock): Promise<RedisResponseStore> {
  const store = new RedisResponseStore(config, clock, await loadRedisClient('responseAffinity.store "redis"'));
  await store.ready();
  return store;
}
