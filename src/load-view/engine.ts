/**
 * The `engine` load view: every `intervalMs`, each target's Prometheus `/metrics` is fetched and
 * parsed (with `parse-prometheus-text-format`, an optional peer), and its running + waiting
 * requests (vLLM `vllm:num_requests_running` + `vllm:num_requests_waiting`, SGLang
 * `sglang:num_running_reqs` + `sglang:num_queue_reqs`; summed over label sets, e.g. data-parallel
 * engines) become the target's shared figure. Other routers' load is that figure minus this
 * router's own leases at the scrape (view.ts). Cost per request: none; per target and interval,
 * one HTTP GET and one parse. A target whose scrape fails keeps its last figure until it is
 * `staleAfterMs` old, then counts only this router's leases.
 */
import { RouterError } from "../errors.js";
import { importPeer } from "../internal/optional-peer.js";
import { Repeater } from "../internal/timers.js";
import { getText } from "../internal/http-get.js";
import { log } from "../logger.js";
import type { TargetSpec } from "../types.js";
import type { EngineConfig } from "./options.js";
import { type LoadView, type LoadViewHost, type LoadViewStats, OwnCounts } from "./view.js";

/** A metric family as `parse-prometheus-text-format` returns it. */
interface MetricFamily {
  name: string;
  type: string;
  metrics: { value?: string; labels?: Record<string, string> }[];
}

/** The parser's signature. */
export type PrometheusParser = (text: string) => MetricFamily[];

/** @internal Loads the optional parser. */
export async function loadPrometheusParser(): Promise<PrometheusParser> {
  const mod = await importPeer("parse-prometheus-text-format", 'loadView "engine"', () => import("parse-prometheus-text-format"));
  const fn = (mod as { default?: unknown }).default ?? mod;
  if (typeof fn !== "function") throw new RouterError("ERR_MISSING_PEER", "parse-prometheus-text-format did not export a parser function");
  return fn as PrometheusParser;
}

/** What one scrape read. */
export interface EngineFigures {
  running: number;
  waiting: number;
  /** KV-cache usage 0..1, `null` when the target exports none of the names. */
  kvCacheUsage: number | null;
}

/** @internal Reads the configured gauges from Prometheus text; throws when neither running nor waiting is there. */
export function readEngineFigures(parse: PrometheusParser, text: string, names: EngineConfig<TargetSpec>["metrics"]): EngineFigures {
  const families = new Map(parse(text).map((f) => [f.name, f]));
  const sum = (list: readonly string[]): number | null => {
    for (const name of list) {
      const f = families.get(name);
      if (f === undefined) continue;
      let total = 0;
      for (const m of f.metrics) {
        const v = Number(m.value);
        if (Number.isFinite(v)) total += v;
      }
      return total;
    }
    return null;
  };
  const running = sum(names.running);
  const waiting = sum(names.waiting);
  if (running === null && waiting === null) {
    throw new Error(`none of the metrics ${[...names.running, ...names.waiting].join(", ")} in the answer`);
  }
  return { running: running ?? 0, waiting: waiting ?? 0, kvCacheUsage: sum(names.kvCacheUsage) };
}

interface Scraped {
  url: string;
  /** Other routers' requests at the last scrape; NaN when unknown or stale. */
  others: number;
  /** This router's leases at the last scrape. */
  own: number;
  figures: EngineFigures | null;
  atMs: number;
  fresh: boolean;
  /** A stale warning was logged and no fresh figure came since. */
  warned: boolean;
}

/** @internal The `engine` view. */
export class EngineLoadView<T extends TargetSpec> implements LoadView<T> {
  readonly source = "engine";
  version = 0;
  private targets = new Map<string, Scraped>();
  private readonly own = new OwnCounts();
  private readonly loop: Repeater;
  private started = false;
  /** The first round of scrapes (each bounded by `timeoutMs`). */
  private firstRound: Promise<void> = Promise.resolve();
  private closed = false;
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
    this.loop = new Repeater(config.timers, () => config.intervalMs, () => this.refresh());
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
      next.set(t.id, old !== undefined && old.url === url ? old : { url, others: Number.NaN, own: 0, figures: null, atMs: Number.NaN, fresh: false, warned: false });
    }
    this.targets = next;
    this.settle(false);
    if (!this.started && !this.closed) {
      this.started = true;
      this.firstRound = this.refresh();
      void this.firstRound.then(() => this.loop.start());
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

  acquire(id: string): void {
    this.own.add(id, 1);
  }

  release(id: string): void {
    this.own.add(id, -1);
  }

  /** Scrapes every target once (the loop calls it; tests may too). Never rejects. */
  async refresh(): Promise<void> {
    await Promise.all([...this.targets].map(([id, s]) => this.scrape(id, s)));
    this.settle(true);
  }

  stats(): LoadViewStats & { kvCacheUsage: Record<string, number | null> } {
    const others: Record<string, number | null> = {};
    const kv: Record<string, number | null> = {};
    let healthy = this.targets.size > 0;
    for (const [id, s] of this.targets) {
      others[id] = s.fresh ? s.others : null;
      kv[id] = s.fresh ? (s.figures?.kvCacheUsage ?? null) : null;
      if (!s.fresh) healthy = false;
    }
    return { source: this.source, healthy, lastRefreshAtMs: this.lastRefreshAtMs, errors: this.errors, refreshes: this.refreshes, lastError: this.lastError, others, kvCacheUsage: kv };
  }

  /** Stops polling; the figures stop counting at once (the router is back on its local view). */
  async close(): Promise<void> {
    this.closed = true;
    this.loop.stop();
    this.settle(false);
  }

  private async scrape(id: string, s: Scraped): Promise<void> {
    let figures: EngineFigures;
    try {
      const { status, text } = await getText(s.url, this.config.headers, this.config.timeoutMs);
      if (status !== 200) throw new Error(`HTTP ${status} from ${s.url}`);
      figures = readEngineFigures(this.parse, text, this.config.metrics);
    } catch (e) {
      if (this.closed) return;
      this.errors++;
      this.lastError = `${id}: ${e instanceof Error ? e.message : String(e)}`;
      log(this.host.logger, "debug", "prefix-router: metrics scrape failed", { event: "load-view", target: id, url: s.url, error: this.lastError });
      return;
    }
    if (this.closed || this.targets.get(id) !== s) return;
    const now = this.host.clock.now();
    s.figures = figures;
    s.own = this.own.get(id);
    s.others = Math.max(0, figures.running + figures.waiting - s.own);
    s.atMs = now;
    this.refreshes++;
    this.lastRefreshAtMs = now;
  }

  /** Marks figures fresh or stale by age (logging changes after a scrape round); bumps the version. */
  private settle(afterScrape: boolean): void {
    const now = this.host.clock.now();
    let anyFresh = false;
    for (const [id, s] of this.targets) {
      s.fresh = !this.closed && s.figures !== null && now - s.atMs <= this.config.staleAfterMs;
      if (!s.fresh) s.others = Number.NaN;
      anyFresh ||= s.fresh;
      if (!afterScrape || this.closed) continue;
      if (!s.fresh && !s.warned) {
        s.warned = true;
        log(this.host.logger, "warn", "prefix-router: no fresh engine metrics for target; counting this router's requests only", { event: "load-view", target: id, url: s.url, error: this.lastError });
      } else if (s.fresh && s.warned) {
        s.warned = false;
        log(this.host.logger, "info", "prefix-router: engine metrics fresh again for target", { event: "load-view", target: id });
      }
    }
    this.anyFresh = anyFresh;
    this.version++;
  }
}
