/**
 * The `redis` load view: every router process counts its leases in one Redis (an optional peer,
 * `ioredis`) and reads the fleet-wide total; key layout and expiry in redis-scripts.ts.
 *
 * Fields are namespaced: `n:<target>` counts leases, `w:<target>` the queued work of picks that
 * report some (`StrategyPick.work`, `longest-prefix`'s uncached blocks) until their first byte.
 *
 * Per request: the lease's +1 and −1 join a pending delta; one script call at a time carries the
 * pending deltas and answers the total (so a burst of requests shares one round trip, and while
 * traffic flows the view is one round trip old). Between writes, a read every `refreshIntervalMs`
 * while this process has leases open, every `idleRefreshIntervalMs` while it has none; every
 * `leaseTtlMs / 3`, a full write of this process's counts that renews
 * its heartbeat and reaps processes whose heartbeat expired. A write that is refused (this
 * process was reaped, Redis restarted empty, or another program changed its keys) makes the next
 * one full, at once; a write that fails makes the next one full after a backoff (50 ms doubling
 * to 2 s, reset by an answer), so the counts heal by themselves and a failing Redis gets a few
 * calls a second, not one per round trip. One loop sends the calls, one after the other, for as
 * long as changes keep coming: its memory does not grow with the number of round trips. A
 * decision never waits: it reads the last total. What the view does with values other programs
 * wrote into its keys: redis-scripts.ts.
 *
 * Down or slow Redis: commands fail fast (no offline queue), the total goes stale after
 * `staleAfterMs` and the router uses its local view; this view reconnects on its own timers
 * (unref'd, backoff to 2 s) and is back on the shared figure at the first answer.
 */
import { randomUUID } from "node:crypto";
import { redactText, redactURL } from "../internal/redact.js";
import { Repeater } from "../internal/timers.js";
import { log } from "../logger.js";
import type { TargetSpec } from "../types.js";
import type { RedisConfig } from "./options.js";
import { type RedisConstructor, type RedisLike, failFastOptions, loadRedisClient } from "./redis-client.js";
import { LOAD_SCRIPT, loadKeys } from "./redis-scripts.js";
import { type LoadView, type LoadViewHost, type LoadViewStats, OwnCounts } from "./view.js";

const COMMAND = "prefixRouterLoad";
const MAX_RECONNECT_DELAY_MS = 2000;
/** First wait after a failed call, doubled per failure up to MAX_RECONNECT_DELAY_MS. */
const FIRST_RETRY_DELAY_MS = 50;
/** One pick's queued work as counted in Redis, at most (the script keeps counts of up to 15 digits). */
const MAX_WORK = 1_000_000_000;
/** A count as the script writes it (redis-scripts.ts). */
const COUNT = /^\d{1,15}$/;

type Reply = [number, string[], number, number];

// The client's loading and fail-fast settings, shared with the OpenAI adapter's response store.
export { type RedisConstructor, failFastOptions, loadRedisClient };

/** @internal The `redis` view. */
export class RedisLoadView<T extends TargetSpec> implements LoadView<T> {
  readonly source = "redis";
  version = 0;
  readonly processId: string;
  private readonly client: RedisLike;
  private readonly keys: ReturnType<typeof loadKeys>;
  private readonly own = new OwnCounts();
  private readonly pending = new Map<string, number>();
  private othersById = new Map<string, number>();
  private workById = new Map<string, number>();
  private included = new Map<string, number>();
  private processes = 1;
  private position = 0;
  private needFull = true;
  /** The send loop runs (one call out, or about to be). */
  private running = false;
  /** A read was asked for while a call was out: one more call after it. */
  private again = false;
  private queued = false;
  /** `refresh()` callers waiting for the next call to settle. */
  private waiters: (() => void)[] = [];
  /** No call before this time (after a failure). */
  private retryAtMs = Number.NEGATIVE_INFINITY;
  private retryDelayMs = FIRST_RETRY_DELAY_MS;
  private healthy = false;
  private warned = false;
  private closed = false;
  private errors = 0;
  private refreshes = 0;
  private lastError: string | null = null;
  private lastOkMs: number | null = null;
  private lastFullMs = Number.NEGATIVE_INFINITY;
  private reconnectDelayMs = 50;
  private nextConnectMs = Number.NEGATIVE_INFINITY;
  /** Staleness, reconnection, heartbeat and reads between writes (tick). */
  private readonly loop: Repeater;
  /** Settles at the first total, the first failure, or after `commandTimeoutMs`, whichever comes first. */
  private readonly first: Promise<void>;
  private settleFirst: () => void = () => {};

  constructor(
    private readonly config: RedisConfig,
    private readonly host: LoadViewHost,
    Redis: RedisConstructor,
  ) {
    this.processId = config.processId ?? randomUUID();
    this.first = new Promise<void>((resolve) => {
      // Real timers, not `config.timers`: a bound on startup, whatever drives the loop.
      const timer = setTimeout(resolve, config.commandTimeoutMs);
      timer.unref?.();
      this.settleFirst = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.loop = new Repeater(config.timers, () => (this.own.leases() > 0 ? config.refreshIntervalMs : config.idleRefreshIntervalMs), () => this.tick());
    this.keys = loadKeys(config.keyPrefix);
    this.client = new Redis(config.url, {
      ...failFastOptions(config.commandTimeoutMs),
    });
    this.client.defineCommand(COMMAND, { numberOfKeys: 2, lua: LOAD_SCRIPT });
    this.client.on("error", (e) => this.fail(e, false));
    this.client.on("connect", () => this.client.stream?.unref?.());
    this.client.on("ready", () => {
      this.reconnectDelayMs = 50;
      this.retryAtMs = Number.NEGATIVE_INFINITY;
      this.needFull = true;
      this.flush();
    });
    this.connect();
    this.loop.start();
  }

  setTargets(): void {
    // Counts are kept by target id; a removed target's leases still release.
  }

  ready(): Promise<void> {
    return this.first;
  }

  shared(): boolean {
    return this.healthy;
  }

  others(id: string): number {
    return this.healthy ? (this.othersById.get(id) ?? 0) : Number.NaN;
  }

  ownAtRefresh(id: string): number {
    return this.included.get(`n:${id}`) ?? 0;
  }

  othersWork(id: string): number {
    return this.healthy ? (this.workById.get(id) ?? 0) : 0;
  }

  addWork(id: string, delta: number): void {
    // Counted as an integer (the script keeps integers), symmetrically: +w then −w nets to 0.
    const n = Math.sign(delta) * Math.min(Math.round(Math.abs(delta)), MAX_WORK);
    if (n !== 0 && !Number.isNaN(n)) this.count(`w:${id}`, n);
  }

  peers(): number {
    return this.processes;
  }

  peerIndex(): number {
    return this.position;
  }

  acquire(id: string): void {
    this.count(`n:${id}`, 1);
  }

  release(id: string): void {
    this.count(`n:${id}`, -1);
  }

  stats(): LoadViewStats & { processId: string; processes: number; othersQueuedWork: Record<string, number | null> } {
    const others: Record<string, number | null> = {};
    for (const [id, n] of this.othersById) others[id] = this.healthy ? n : null;
    const work: Record<string, number | null> = {};
    for (const [id, n] of this.workById) work[id] = this.healthy ? n : null;
    return {
      source: this.source,
      healthy: this.healthy,
      lastRefreshAtMs: this.lastOkMs,
      errors: this.errors,
      refreshes: this.refreshes,
      lastError: this.lastError,
      others,
      processId: this.processId,
      processes: this.processes,
      othersQueuedWork: work,
    };
  }

  /**
   * One round trip now: the pending deltas (or a full write) and a read of the total. Resolves
   * when a call that started after this one was made answered or failed, or at once when no call
   * can go (not connected, closed, backing off after a failure); never rejects. For tests.
   */
  refresh(full = false): Promise<void> {
    if (full) this.needFull = true;
    return new Promise<void>((resolve) => {
      this.waiters.push(resolve);
      this.flush();
    });
  }

  /**
   * Removes this process's counts from Redis at once, then disconnects; the router is back on its
   * local view at once. Idempotent.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.loop.stop();
    this.healthy = false;
    this.version++;
    this.settleWaiters();
    if (this.client.status === "ready") {
      try {
        await this.call("leave", []);
        await this.client.quit();
        return;
      } catch {
        // Unreachable: the counts expire after leaseTtlMs.
      }
    }
    this.client.disconnect();
  }

  /** `field`: `n:<target>` (leases) or `w:<target>` (queued work). */
  private count(field: string, delta: number): void {
    this.own.add(field, delta);
    this.pending.set(field, (this.pending.get(field) ?? 0) + delta);
    if (!this.queued && !this.running) {
      this.queued = true;
      queueMicrotask(() => {
        this.queued = false;
        this.flush();
      });
    }
  }

  /** Starts the send loop; while it runs, asks it for one more call after the current one. */
  private flush(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    void this.send();
  }

  /**
   * The send loop: one call at a time, carrying the pending deltas (or a full write) and reading
   * the total, again while changes arrived during the call, or a refusal asks for a full write.
   * A loop, not a call per round trip chained onto the previous one: however long traffic keeps
   * it going, it holds one call's state.
   */
  private async send(): Promise<void> {
    let first = true;
    try {
      while (!this.closed && (first || this.again || this.needFull || this.pending.size > 0 || this.waiters.length > 0)) {
        first = false;
        this.again = false;
        if (this.client.status !== "ready") {
          // Everything is rewritten by the full write that follows the reconnection.
          this.pending.clear();
          this.needFull = true;
          return;
        }
        // After a failure, the loop (tick) tries again once the backoff is over.
        if (this.host.clock.now() < this.retryAtMs) return;
        const full = this.needFull;
        const pairs: (string | number)[] = [];
        for (const [field, n] of full ? this.own.entries() : this.pending.entries()) if (full ? n > 0 : n !== 0) pairs.push(field, n);
        this.pending.clear();
        this.needFull = false;
        if (full) this.lastFullMs = this.host.clock.now();
        // After this call Redis holds exactly this router's current counts as its own.
        const included = this.own.copy();
        const waiting = this.waiters;
        this.waiters = [];
        try {
          const [status, total, processes, position] = await this.call(full ? "full" : "delta", pairs);
          if (status === 1) {
            this.retryAtMs = Number.NEGATIVE_INFINITY;
            this.retryDelayMs = FIRST_RETRY_DELAY_MS;
            this.applyTotal(total, included, processes, position);
          } else {
            // Refused, nothing applied: a full write now (one that is refused counts as a failure).
            this.needFull = true;
            if (full) this.backOff(new Error("full write refused"));
          }
        } catch (e) {
          this.needFull = true;
          this.backOff(e);
        } finally {
          for (const resolve of waiting) resolve();
        }
      }
    } finally {
      // In the same turn as the loop's last check: a change from now on starts it again.
      this.running = false;
      this.settleWaiters();
    }
  }

  /** A call failed: the next one waits retryDelayMs (doubling up to MAX_RECONNECT_DELAY_MS). */
  private backOff(e: unknown): void {
    this.retryAtMs = this.host.clock.now() + this.retryDelayMs;
    this.retryDelayMs = Math.min(2 * this.retryDelayMs, MAX_RECONNECT_DELAY_MS);
    this.fail(e, true);
  }

  private settleWaiters(): void {
    const waiting = this.waiters;
    this.waiters = [];
    for (const resolve of waiting) resolve();
  }

  private call(mode: "full" | "delta" | "leave", pairs: (string | number)[]): Promise<Reply> {
    const { base, procs, total } = this.keys;
    const ttl = this.config.leaseTtlMs;
    const command = (this.client as unknown as Record<string, (...args: unknown[]) => Promise<Reply>>)[COMMAND]!;
    return command.call(this.client, procs, total, base, this.processId, mode, ttl, 3 * ttl, ...pairs);
  }

  private applyTotal(total: string[], included: Map<string, number>, processes: number, position: number): void {
    if (this.closed) return;
    const others = new Map<string, number>();
    const work = new Map<string, number>();
    for (let i = 0; i + 1 < total.length; i += 2) {
      const field = String(total[i]);
      const value = String(total[i + 1]);
      // The script answers counts only; anything else is not read.
      if (!COUNT.test(value) || !(field.startsWith("n:") || field.startsWith("w:"))) continue;
      const n = Number(value) - (included.get(field) ?? 0);
      if (n > 0) (field.startsWith("w:") ? work : others).set(field.slice(2), n);
    }
    this.othersById = others;
    this.workById = work;
    this.included = included;
    this.processes = Math.max(1, Number(processes) || 1);
    this.position = Number(position) || 0;
    this.lastOkMs = this.host.clock.now();
    this.refreshes++;
    if (!this.healthy && this.warned) log(this.host.logger, "info", "prefix-router: Redis load view is back; using the shared figures", { event: "load-view", processId: this.processId });
    this.warned = false;
    this.healthy = true;
    this.version++;
    this.settleFirst();
  }

  private fail(e: unknown, counted: boolean): void {
    if (this.closed) return;
    const message = redactText(e instanceof Error ? e.message : String(e));
    this.lastError = message;
    if (counted) {
      this.errors++;
      this.settleFirst();
    }
    log(this.host.logger, "debug", "prefix-router: Redis load view error", { event: "load-view", error: message });
  }

  /** The loop: staleness, reconnection, heartbeat (full write) and idle reads. */
  private tick(): void {
    const now = this.host.clock.now();
    if (this.healthy && (this.lastOkMs === null || now - this.lastOkMs > this.config.staleAfterMs)) {
      this.healthy = false;
      this.version++;
    }
    if (!this.healthy && !this.warned && (this.lastOkMs === null ? this.errors > 0 : now - this.lastOkMs > this.config.staleAfterMs)) {
      this.warned = true;
      log(this.host.logger, "warn", "prefix-router: Redis load view unavailable; routing on the local view while reconnecting", { event: "load-view", error: this.lastError, url: redactURL(this.config.url) });
    }
    const status = this.client.status;
    if ((status === "end" || status === "wait" || status === "close") && now >= this.nextConnectMs) {
      this.nextConnectMs = now + this.reconnectDelayMs;
      this.reconnectDelayMs = Math.min(2 * this.reconnectDelayMs, MAX_RECONNECT_DELAY_MS);
      this.connect();
    } else if (status === "ready") {
      if (now - this.lastFullMs >= this.config.leaseTtlMs / 3) this.needFull = true;
      this.flush();
    }
  }

  private connect(): void {
    this.client.connect().catch((e: unknown) => this.fail(e, true));
  }

}
