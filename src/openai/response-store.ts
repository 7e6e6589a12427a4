/**
 * The shared store of response affinity: which target served which response id, in one Redis
 * that every application process reads, so a follow-up sent through any process reaches the
 * replica holding its response. The client is the `redis` load view's (`ioredis`, an optional
 * peer), configured the same way: no offline queue, no automatic retry, reconnection on this
 * store's own schedule.
 *
 * Keys and the write script: `response-store-options.ts`.
 *
 * Cost per request: a write is a map insert on the response path; the writes made in one run of
 * synchronous code go out together (one script call each, in one pipeline) in a microtask after
 * it. A non-streamed Responses answer is handed to the caller once its id's write is acknowledged,
 * or after `timeoutMs` without (counted, `lateAnswers`): a follow-up sent through any process the
 * moment the answer arrives finds the id in Redis. A streamed answer's events flow meanwhile; only
 * its end waits the same way.
 *
 * Bounded while Redis is frozen: at most {@link MAX_PENDING_WRITES} writes wait or are unanswered
 * — counted until Redis really answers or the connection closes, not until a timer fires — and
 * more are dropped and counted (`writesDropped`). A batch unanswered after max(1,000 ms,
 * `timeoutMs`) closes the connection (the client's queue goes with it) and the store reconnects
 * on its schedule. Every write carries a deadline in Redis's time — sent + `timeoutMs`, from an
 * upper bound of Redis's clock minus this process's real-time clock, learned from the replies —
 * and the script refuses one that reaches Redis later (`writesExpired`): a write that sat in a
 * socket while Redis was frozen is never applied after the thaw. A timer judges after the next
 * I/O poll, so an answer already waiting in the socket is read first (a process that stalled is
 * not taken for a Redis that did).
 *
 * A read is one round trip, only for a follow-up whose id the local map lacks, bounded by
 * `timeoutMs`.
 *
 * Fail-safe: a read that fails or times out answers "unknown" (the request is routed as without
 * the store) and makes the next reads skip the store for a backoff (50 ms doubling to 2 s, reset
 * by an answer), so a slow Redis costs at most one `timeoutMs` per backoff period. While the
 * connection is down, reads are skipped and writes dropped (both counted); it is reopened on an
 * unref'd timer with the same backoff. Start-up waits for the first connection at most max(1,000
 * ms, `timeoutMs`). Nothing here throws into a request.
 */
import { redactText } from "../internal/redact.js";
import { FIRST_RETRY_DELAY_MS, MAX_PENDING_WRITES, MAX_RETRY_DELAY_MS, MAX_TARGET_ID_CHARS, MAX_VALUE_BYTES } from "./response-store-options.js";
import { MIN_CONNECT_TIMEOUT_MS, type ResponseStoreConfig, type StoreClient, WRITE_COMMAND, WRITE_SCRIPT, responseKey } from "./response-store-options.js";
import { type RedisConstructor, failFastOptions, loadRedisClient } from "../load-view/redis.js";
import type { Clock } from "../types.js";
import type { ResponseStoreStats } from "./stats.js";

export { DEFAULT_RESPONSE_STORE, MAX_PENDING_WRITES, MAX_TARGET_ID_CHARS, RESPONSE_STORE_OPTION_KEYS } from "./response-store-options.js";
export { type ResponseStoreConfig, type ResponseStoreOptions, resolveResponseStore, responseKey } from "./response-store-options.js";

/** Real time for deadlines, which are in Redis's (wall) time: never the injected clock. */
const REAL_TIME: Clock = performance;

/** One id's write, and who waits for its acknowledgement. */
interface Write {
  targetId: string;
  acked: ((applied: boolean) => void)[];
}

/** @internal The Redis store of response affinity. */
export class RedisResponseStore {
  private readonly client: StoreClient;
  private pending = new Map<string, Write>();
  private scheduled = false;
  /** Writes sent and not yet answered by Redis (nor failed by a closed connection). */
  private writing = 0;
  private closed = false;
  /** No read before this time (after a failed one). */
  private readAfterMs = Number.NEGATIVE_INFINITY;
  private readDelayMs = FIRST_RETRY_DELAY_MS;
  private connectDelayMs = FIRST_RETRY_DELAY_MS;
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly counts = { hits: 0, misses: 0, errors: 0, timeouts: 0, skipped: 0, writes: 0, writeErrors: 0, writesDropped: 0, writesExpired: 0, lateAnswers: 0 };
  private lastError: string | null = null;
  private readonly connecting: Promise<void>;
  /** max(1,000 ms, timeoutMs): connecting, and the longest a batch of writes may go unanswered. */
  private readonly stuckMs: number;
  /** An upper bound of Redis's clock minus {@link REAL_TIME}, ms; unknown (no deadline sent) before the first answer. */
  private offsetMs = Number.POSITIVE_INFINITY;

  constructor(
    private readonly config: ResponseStoreConfig,
    private readonly clock: Clock,
    Redis: RedisConstructor,
  ) {
    this.stuckMs = Math.max(MIN_CONNECT_TIMEOUT_MS, config.timeoutMs);
    // No commandTimeout: the client would fail a command on its timer while the command stays
    // queued (and, once written, gets applied when Redis answers). This store keeps its own
    // timers, judged after the next I/O poll, and closes a connection that stopped answering.
    this.client = new Redis(config.url, { ...failFastOptions(this.stuckMs), commandTimeout: undefined }) as unknown as StoreClient;
    this.client.defineCommand(WRITE_COMMAND, { numberOfKeys: 1, lua: WRITE_SCRIPT });
    this.client.on("error", (e) => this.fail(e));
    this.client.on("connect", () => this.client.stream?.unref?.());
    // The client does not reconnect by itself (retryStrategy); this store does, on a timer.
    this.client.on("end", () => this.scheduleReconnect());
    this.client.on("ready", () => {
      this.connectDelayMs = FIRST_RETRY_DELAY_MS;
      this.readAfterMs = Number.NEGATIVE_INFINITY;
      this.readDelayMs = FIRST_RETRY_DELAY_MS;
      this.learnOffset();
    });
    this.connecting = this.connect();
  }

  /** Settles once the first connection is made or has failed, or after max(1,000 ms, `timeoutMs`) (never rejects). */
  ready(): Promise<void> {
    return new Promise<void>((resolve) => {
      // Not unref'd: the connection's socket is, and a start-up awaited at the top level must not
      // see the process exit under it.
      const timer = setTimeout(resolve, this.stuckMs);
      void this.connecting.then(() => {
        clearTimeout(timer);
        resolve();
      });
    });
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
      // Not unref'd: a caller awaits it, and the socket is (bounded by timeoutMs).
      timer = setTimeout(() => setImmediate(resolve, TIMED_OUT), this.config.timeoutMs);
    });
    let answer: string | typeof TIMED_OUT;
    let settled = false;
    try {
      const reading = this.client.getrange(responseKey(this.config.keyPrefix, id), 0, MAX_VALUE_BYTES);
      // A read given up on still settles later: its rejection must not go unhandled.
      reading.then(
        () => (settled = true),
        () => (settled = true),
      );
      answer = await Promise.race([reading, timeout]);
    } catch (e) {
      this.readFailed(e, false);
      return undefined;
    } finally {
      clearTimeout(timer);
    }
    if (answer === TIMED_OUT) {
      this.readFailed(new Error(`read timed out after ${this.config.timeoutMs} ms`), true);
      // Still unanswered later: the connection stopped answering (the read stays queued until it is closed).
      this.watch(() => settled);
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
    this.enqueue(id, targetId);
  }

  /**
   * {@link put}, and a promise that settles once Redis acknowledged the write, or it failed or
   * was dropped, or `timeoutMs` passed (judged after the next I/O poll; counted in `lateAnswers`),
   * whichever comes first. Never rejects.
   */
  putAndWait(id: string, targetId: string): Promise<void> {
    const write = this.enqueue(id, targetId);
    if (write === undefined) return Promise.resolve();
    return new Promise<void>((resolve) => {
      let done = false;
      const timer = setTimeout(
        () =>
          setImmediate(() => {
            if (done) return;
            done = true;
            this.counts.lateAnswers++;
            resolve();
          }),
        this.config.timeoutMs,
      );
      // Not unref'd: the caller's answer waits on it (bounded by timeoutMs).
      write.acked.push(() => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        resolve();
      });
    });
  }

  stats(): ResponseStoreStats {
    return {
      source: "redis",
      healthy: !this.closed && this.client.status === "ready" && this.clock.now() >= this.readAfterMs,
      ...this.counts,
      lastError: this.lastError,
    };
  }

  /** Sends the writes still waiting, then closes the connection (at most max(1,000 ms, `timeoutMs`) later). Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    clearTimeout(this.reconnectTimer);
    if (this.client.status === "ready") {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const gaveUp = new Promise<boolean>((resolve) => {
        // Not unref'd either: the socket is, and the caller awaits this close.
        timer = setTimeout(() => resolve(false), this.stuckMs);
      });
      const done = (async () => {
        await this.flush();
        this.closed = true;
        await this.client.quit();
        return true;
      })().catch(() => false);
      const clean = await Promise.race([done, gaveUp]);
      clearTimeout(timer);
      if (clean) return;
    }
    this.closed = true;
    this.client.disconnect();
  }

  /** Queues a write; `undefined` when it was dropped (counted). */
  private enqueue(id: string, targetId: string): Write | undefined {
    if (this.closed) return undefined;
    const queued = this.pending.get(id);
    if (queued !== undefined) {
      queued.targetId = targetId;
      return queued;
    }
    if (targetId.length > MAX_TARGET_ID_CHARS || this.pending.size + this.writing >= MAX_PENDING_WRITES) {
      this.counts.writeErrors++;
      this.counts.writesDropped++;
      return undefined;
    }
    const write: Write = { targetId, acked: [] };
    this.pending.set(id, write);
    this.schedule();
    return write;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  /** Sends the waiting writes: one pipeline of script calls. Never rejects. */
  private async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    if (this.client.status !== "ready") {
      this.counts.writeErrors += batch.size;
      this.counts.writesDropped += batch.size;
      for (const write of batch.values()) settle(write, false);
      return;
    }
    const { keyPrefix, ttlMs, timeoutMs } = this.config;
    const sentMs = REAL_TIME.now();
    const deadlineMs = Number.isFinite(this.offsetMs) ? Math.ceil(sentMs + this.offsetMs + timeoutMs) : 0;
    this.writing += batch.size;
    let answered = false;
    this.watch(() => answered);
    try {
      const pipeline = this.client.pipeline();
      for (const [id, write] of batch) pipeline[WRITE_COMMAND](responseKey(keyPrefix, id), write.targetId, ttlMs, deadlineMs);
      const results = (await pipeline.exec()) ?? [];
      const receivedMs = REAL_TIME.now();
      let i = 0;
      for (const write of batch.values()) {
        const [error, reply] = results[i++] ?? [new Error("no reply"), undefined];
        if (error !== null) {
          this.writeFailed(error, 1);
          settle(write, false);
          continue;
        }
        const applied = Array.isArray(reply) ? Number(reply[0]) : Number.NaN;
        const redisMs = Array.isArray(reply) ? Number(reply[1]) : Number.NaN;
        if (applied === 1) {
          this.counts.writes++;
          this.learn(redisMs, sentMs);
          settle(write, true);
        } else {
          this.counts.writeErrors++;
          this.counts.writesExpired++;
          this.fail(new Error("a write reached Redis after its deadline (sent more than timeoutMs before)"));
          // Refused though it came back within timeoutMs: the deadline was wrong (Redis's clock
          // jumped); start the estimate again from this answer.
          if (receivedMs - sentMs < timeoutMs && Number.isFinite(redisMs)) this.offsetMs = redisMs - sentMs;
          settle(write, false);
        }
      }
    } catch (e) {
      this.writeFailed(e, batch.size);
      for (const write of batch.values()) settle(write, false);
    } finally {
      answered = true;
      this.writing -= batch.size;
    }
  }

  /**
   * Closes the connection when `answered()` is still false max(1,000 ms, `timeoutMs`) from now
   * (judged after the next I/O poll): the commands queued in the client are failed with it, and
   * the store reconnects on its schedule.
   */
  private watch(answered: () => boolean): void {
    const timer = setTimeout(
      () =>
        setImmediate(() => {
          if (answered() || this.closed || this.client.status === "end") return;
          this.fail(new Error(`Redis did not answer within ${this.stuckMs} ms; reconnecting`));
          // Destroyed, not ended: a frozen peer never completes a graceful close, and the client
          // fails its queued commands only once the socket has closed.
          this.client.disconnect();
          this.client.stream?.destroy?.();
        }),
      this.stuckMs,
    );
    timer.unref?.();
  }

  /** One answer's lesson on Redis's clock: the offset is at most redisMs − sentMs. */
  private learn(redisMs: number, sentMs: number): void {
    if (Number.isFinite(redisMs)) this.offsetMs = Math.min(this.offsetMs, redisMs - sentMs);
  }

  /** On each connection: Redis's `TIME`, for the deadlines of the first writes. */
  private learnOffset(): void {
    const sentMs = REAL_TIME.now();
    this.client.time().then(
      ([seconds, micros]) => this.learn(Number(seconds) * 1000 + Math.floor(Number(micros) / 1000), sentMs),
      () => undefined,
    );
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

function settle(write: Write, applied: boolean): void {
  for (const acked of write.acked) acked(applied);
  write.acked.length = 0;
}

const TIMED_OUT = Symbol("timed out");

/** @internal Opens the store (loading `ioredis`; `ERR_MISSING_PEER` when it is absent) and waits for its first connection, at most max(1,000 ms, `timeoutMs`). */
export async function openResponseStore(config: ResponseStoreConfig, clock: Clock): Promise<RedisResponseStore> {
  const store = new RedisResponseStore(config, clock, await loadRedisClient('responseAffinity.store "redis"'));
  await store.ready();
  return store;
}
