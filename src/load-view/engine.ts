/**
 * The `engine` load view: every `intervalMs`, each target's Prometheus `/metrics` is fetched and
 * parsed (with `parse-prometheus-text-format`, an optional peer), and its running + waiting
 * requests (vLLM `vllm:num_requests_running` + `vllm:num_requests_waiting`, SGLang
 * `sglang:num_running_reqs` + `sglang:num_queue_reqs`; summed over label sets, e.g. data-parallel
 * engines) become the target's shared figure. Other routers' load is that figure minus this
 * router's own leases at the scrape (view.ts). Cost per request: none; per target and interval,
 * one HTTP GET of at most `maxBodyBytes` and one parse of the configured families' lines. Each
 * target is scraped on its own: one that answers slowly or not at all delays only its own next
 * scrape. A target whose scrape fails keeps its last figure until it is `staleAfterMs` old, then
 * counts only this router's leases.
 */
import { getText } from "../internal/http-get.js";
import { Poller } from "../internal/poller.js";
import { redactText, redactURL } from "../internal/redact.js";
import { log } from "../logger.js";
import type { TargetSpec } from "../types.js";
import { DEFAULT_LOAD_VIEW, type EngineConfig } from "./options.js";
import { type LoadView, type LoadViewHost, type LoadViewStats, OwnCounts } from "./view.js";
import { type EngineCacheConfig, type EngineFigures, type PrometheusParser, readEngineFigures } from "./engine-metrics.js";

/** A metric family as `parse-prometheus-text-format` returns it. */
interface Scraped {
  id: string;
  url: string;
  /** Other routers' requests at the last scrape; NaN when unknown or stale. */
  others: number;
  /** This router's leases at the last scrape. */
  own: number;
  /** Queued uncached prefill tokens not this router's at the last scrape; NaN when unknown or stale. */
  othersTokens: number;
  figures: EngineFigures | null;
  atMs: number;
  fresh: boolean;
  /** At least one scrape of this URL has ended (answered or failed). */
  tried: boolean;
  /** Why its last scrape failed (credentials redacted); `null` after a success. */
  error: string | null;
  /** A stale warning was logged and no fresh figure came since. */
  warned: boolean;
}

/** `stats().loadView` of the engine view: per target, the figures of its last fresh scrape (`null`: none, or not exported). */
export interface EngineLoadViewStats extends LoadViewStats {
  /** KV-cache usage, 0..1. */
  kvCacheUsage: Record<string, number | null>;
  /** Prompt tokens waiting for prefill that the engine's cache does not hold (all clients'). */
  waitingUncachedTokens: Record<string, number | null>;
  /** The engine's KV block size and capacity in tokens (vLLM's `vllm:cache_config_info`). */
  cache: Record<string, EngineCacheConfig | null>;
}

/** @internal The `engine` view. */
export class EngineLoadView<T extends TargetSpec> implements LoadView<T> {
  readonly source = "engine";
  version = 0;
  private targets = new Map<string, Scraped>();
  private readonly own = new OwnCounts();
  /** This router's queued uncached prefill tokens per target (`StrategyPick.workTokens`, until the first byte). */
  private readonly ownTokens = new OwnCounts();
  private readonly poller: Poller<Scraped>;
  private started = false;
  /** The first scrape of every target (each bounded by `timeoutMs`). */
  private firstRound: Promise<void> = Promise.resolve();
  private closed = false;
  /** A figure changed since the version last moved. */
  private changed = false;
  private errors = 0;
  private refreshes = 0;
  private lastError: string | null = null;
  private lastRefreshAtMs: number | null = null;
  private anyFresh = false;

  constructor(
    private readonly config: EngineConfig<T>,
    private readonly host: LoadViewHost,
    private readonly parse: PrometheusParser,
  ) {
    // Every target on its own cadence: one that hangs until its timeout delays only itself. Each
    // tick also ages the figures, so a hanging target goes stale on time.
    this.poller = new Poller(
      config.timers,
      config.intervalMs,
      () => this.targets.values(),
      (s, signal) => this.scrape(s, signal),
      () => this.settle(true),
    );
  }

  /** Throws a TypeError for a target without a metrics URL. */
  validate(targets: readonly T[]): void {
    for (const t of targets) this.config.metricsURL(t);
  }

  setTargets(targets: readonly T[]): void {
    const next = new Map<string, Scraped>();
    for (const t of targets) {
      const url = this.config.metricsURL(t);
      const old = this.targets.get(t.id);
      next.set(
        t.id,
        old !== undefined && old.url === url
          ? old
          : { id: t.id, url, others: Number.NaN, own: 0, othersTokens: Number.NaN, figures: null, atMs: Number.NaN, fresh: false, tried: false, error: null, warned: false },
      );
    }
    this.targets = next;
    this.changed = true;
    this.settle(false);
    if (!this.started && !this.closed) {
      this.started = true;
      this.firstRound = this.refresh();
      this.poller.start();
    }
  }

  ready(): Promise<void> {
    return this.firstRound;
  }

  peers(): number {
    return this.config.peers;
  }

  shared(): boolean {
    return this.anyFresh;
  }

  others(id: string): number {
    return this.targets.get(id)?.others ?? Number.NaN;
  }

  ownAtRefresh(id: string): number {
    return this.targets.get(id)?.own ?? 0;
  }

  othersWorkTokens(id: string): number {
    if (this.config.intervalMs > DEFAULT_LOAD_VIEW.engineTokensMaxIntervalMs) return Number.NaN;
    return this.targets.get(id)?.othersTokens ?? Number.NaN;
  }

  addWorkTokens(id: string, delta: number): void {
    this.ownTokens.add(id, delta);
  }

  acquire(id: string): void {
    this.own.add(id, 1);
  }

  release(id: string): void {
    this.own.add(id, -1);
  }

  /**
   * Scrapes every target that has no scrape in flight, once (the poll loop runs the same on its
   * own; tests may call it); resolves when those scrapes ended. Never rejects.
   */
  refresh(): Promise<void> {
    return this.poller.pollAll();
  }

  stats(): EngineLoadViewStats {
    const others: Record<string, number | null> = {};
    const kv: Record<string, number | null> = {};
    const waitingUncachedTokens: Record<string, number | null> = {};
    const cache: Record<string, EngineCacheConfig | null> = {};
    let healthy = this.targets.size > 0;
    for (const [id, s] of this.targets) {
      const f = s.fresh ? s.figures : null;
      others[id] = s.fresh ? s.others : null;
      kv[id] = f?.kvCacheUsage ?? null;
      waitingUncachedTokens[id] = f?.waitingUncachedTokens ?? null;
      cache[id] = f?.cache ?? null;
      if (!s.fresh) healthy = false;
    }
    return {
      source: this.source,
      healthy,
      lastRefreshAtMs: this.lastRefreshAtMs,
      errors: this.errors,
      refreshes: this.refreshes,
      lastError: this.lastError,
      others,
      kvCacheUsage: kv,
      waitingUncachedTokens,
      cache,
    };
  }

  /**
   * Stops polling and aborts the scrapes in flight (their connections closed); the figures stop
   * counting at once (the router is back on its local view).
   */
  async close(): Promise<void> {
    this.closed = true;
    this.changed = true;
    this.settle(false);
    await this.poller.close();
  }

  private async scrape(s: Scraped, signal: AbortSignal): Promise<void> {
    let figures: EngineFigures | undefined;
    let error: string | undefined;
    try {
      const { status, text } = await getText(s.url, {
        headers: this.config.headers,
        timeoutMs: this.config.timeoutMs,
        maxBodyBytes: this.config.maxBodyBytes,
        maxBodyOption: "loadView.maxBodyBytes",
        timers: this.config.timers,
        signal,
      });
      if (status !== 200) throw new Error(`HTTP ${status}`);
      figures = readEngineFigures(this.parse, text, this.config.metrics);
    } catch (e) {
      error = redactText(e instanceof Error ? e.message : String(e));
    }
    if (this.closed || this.targets.get(s.id) !== s) return;
    s.tried = true;
    if (figures === undefined) {
      this.errors++;
      s.error = error ?? "unknown error";
      this.lastError = `${s.id}: ${s.error}`;
      log(this.host.logger, "debug", "prefix-router: metrics scrape failed", { event: "load-view", target: s.id, url: redactURL(s.url), error: s.error });
    } else {
      const now = this.host.clock.now();
      s.error = null;
      s.figures = figures;
      s.own = this.own.get(s.id);
      s.others = Math.max(0, figures.running + figures.waiting - s.own);
      // This router's queued prefill the engine already counts; what it has not yet received
      // (or is prefilling) makes this an underestimate, never a double count.
      const tokens = figures.waitingUncachedTokens;
      s.othersTokens = tokens === null ? Number.NaN : Math.max(0, tokens - this.ownTokens.get(s.id));
      s.atMs = now;
      this.refreshes++;
      this.lastRefreshAtMs = now;
      this.changed = true;
    }
    this.settle(true);
  }

  /**
   * Marks figures fresh or stale by age (after a scrape or a tick, logging changes of targets
   * scraped at least once); moves the version when anything a decision reads changed.
   */
  private settle(afterScrape: boolean): void {
    const now = this.host.clock.now();
    let anyFresh = false;
    let changed = this.changed;
    for (const s of this.targets.values()) {
      const fresh = !this.closed && s.figures !== null && now - s.atMs <= this.config.staleAfterMs;
      if (fresh !== s.fresh) changed = true;
      s.fresh = fresh;
      if (!fresh) {
        s.others = Number.NaN;
        s.othersTokens = Number.NaN;
      }
      anyFresh ||= fresh;
      if (!afterScrape || this.closed || !s.tried) continue;
      if (!fresh && !s.warned) {
        s.warned = true;
        log(this.host.logger, "warn", "prefix-router: no fresh engine metrics for target; counting this router's requests only", {
          event: "load-view",
          target: s.id,
          url: redactURL(s.url),
          error: s.error,
        });
      } else if (fresh && s.warned) {
        s.warned = false;
        log(this.host.logger, "info", "prefix-router: engine metrics fresh again for target", { event: "load-view", target: s.id });
      }
    }
    this.anyFresh = anyFresh;
    this.changed = false;
    if (changed) this.version++;
  }
}
