/**
 * The two reading passes of the advisor over a request log.
 *
 * Pass 1 ({@link profileLog}) learns the log: its size and time span, the reuse ceiling (one
 * infinite cache that has seen every earlier prompt: the bench's `IdealCache`), the pooled ideal
 * (one LRU paged cache as large as the whole fleet, {@link PooledCache}), the drifts (drift.ts)
 * and key-order differences.
 *
 * Pass 2 ({@link replayFixes}) prices the most costly drifts: every request is replayed through
 * one pooled cache as logged and one per drift with only that drift fixed (plus one with all of
 * them fixed); what a drift costs is the difference in cached tokens. The pooled cache is the
 * fleet's capacity with perfect placement, so the estimate is what a router could win back.
 */
import { BenchError } from "../common/errors.js";
import { IdealCache } from "../bench/metrics.js";
import { traceRequest, traceText, MOONCAKE_BLOCK_TOKENS } from "../bench/trace.js";
import type { ChatBody } from "../bench/workload.js";
import { KvCache } from "../fleet/kv-cache.js";
import { renderPrompt } from "../fleet/template.js";
import { blockKeys, countTokens } from "../fleet/tokenizer.js";
import { type DriftStats, DriftAnalyzer } from "./drift.js";
import type { LineSource } from "./lines.js";
import { type BadLines, type LogEntry, readEntryOr } from "./records.js";
import { type Fix, applyFixes, segmentsOf } from "./segments.js";

/** One paged LRU cache of `blocks` blocks that sees every request in turn (no concurrency). */
export class PooledCache {
  readonly #cache: KvCache;
  #prompt = 0;
  #cached = 0;

  constructor(blocks: number, blockTokens: number) {
    this.#cache = new KvCache(blocks, blockTokens);
  }

  /** Looks up and caches a prompt's block keys; returns its cached tokens. */
  observe(keys: Float64Array, promptTokens: number): number {
    const hit = this.#cache.lookup(keys, promptTokens);
    const blocks = this.#cache.allocate(keys, hit, keys.length);
    if (blocks !== null) this.#cache.release(blocks);
    const cached = hit * this.#cache.blockSize;
    this.#prompt += promptTokens;
    this.#cached += cached;
    return cached;
  }

  /** Σ cached / Σ prompt tokens so far. */
  get hitRate(): number {
    return this.#prompt === 0 ? 0 : this.#cached / this.#prompt;
  }

  /** Σ cached tokens so far. */
  get cachedTokens(): number {
    return this.#cached;
  }
}

/** Distinct blocks the ceiling's infinite cache keeps (67 M tokens of distinct prompt text, ≈ 180 MB); past it the ceiling is a lower bound. */
export const CEILING_MAX_BLOCKS = 1 << 22;
/** Pooled-cache blocks one replay pass holds at most (~230 MB): more drifts to price take more passes. */
export const PASS_MAX_BLOCKS = 1 << 21;

/** Settings of both passes. */
export interface PassSettings {
  readonly blockTokens: number;
  /** Blocks of the pooled cache: instances × blocks per instance. */
  readonly pooledBlocks: number;
  readonly outputTokens: number;
  readonly maxRequests: number;
  /** What a bad line does. */
  readonly badLines: BadLines;
  /** Called with the bytes read so far. */
  readonly onBytes?: (bytes: number) => void;
}

/** A log line left out under `badLines: "skip"`. */
export interface SkippedLine {
  readonly line: number;
  readonly message: string;
}

/** Skipped lines whose reason a profile keeps; the rest are only counted. */
export const SKIPPED_EXAMPLES = 10;

/** What pass 1 learned. */
export interface LogProfile {
  readonly kind: "requests" | "trace";
  readonly requests: number;
  readonly promptTokens: number;
  /** Whether every request had a timestamp. */
  readonly timestamps: boolean;
  readonly firstMs: number;
  readonly lastMs: number;
  /** Distinct tenants (counted up to 100,000). */
  readonly tenants: number;
  readonly ceilingHitRate: number;
  /** True when the ceiling's cache reached {@link CEILING_MAX_BLOCKS}: `ceilingHitRate` is a lower bound. */
  readonly ceilingCapped: boolean;
  readonly pooledHitRate: number;
  readonly analyzer: DriftAnalyzer;
  /** Requests whose JSON differed from an earlier one's only in key order, per place. */
  readonly keyOrder: ReadonlyMap<string, number>;
  /** Bad lines left out (`badLines: "skip"`), and the first {@link SKIPPED_EXAMPLES} of them. */
  readonly skippedLines: number;
  readonly skipped: readonly SkippedLine[];
}

/** A request's prompt as the engine sees it: its block keys and token count. */
function promptOf(body: ChatBody, blockTokens: number): { keys: Float64Array; tokens: number } {
  const prompt = renderPrompt(body);
  return { keys: blockKeys(prompt, blockTokens, body.model), tokens: countTokens(prompt) };
}

/** The entries of `source`, at most `max` requests; one trace text source per pass. `onSkip` sees each bad line skipped. */
function* entries(source: LineSource, settings: PassSettings, onSkip?: (error: BenchError) => void): Generator<{ entry: LogEntry; body: ChatBody }> {
  const text = traceText(1);
  let n = 0;
  for (const line of source.lines(settings.onBytes)) {
    if (n >= settings.maxRequests) return;
    const entry = readEntryOr(settings.badLines, line, source.name, settings.outputTokens, onSkip);
    if (entry === undefined) continue;
    const body = entry.kind === "trace" ? traceRequest(entry.record, "", 0, text, MOONCAKE_BLOCK_TOKENS).body : entry.body;
    n++;
    yield { entry, body };
  }
}

/** Pass 1; see the file header. */
export function profileLog(source: LineSource, settings: PassSettings): LogProfile {
  const ceiling = new IdealCache(settings.blockTokens, CEILING_MAX_BLOCKS);
  const pooled = new PooledCache(settings.pooledBlocks, settings.blockTokens);
  const analyzer = new DriftAnalyzer();
  const keyOrderSeen = new Map<string, string>();
  const keyOrder = new Map<string, number>();
  const tenants = new Set<string>();
  let kind: "requests" | "trace" | undefined;
  let requests = 0;
  let promptTokens = 0;
  let stamped = 0;
  let firstMs = Infinity;
  let lastMs = -Infinity;
  let skippedLines = 0;
  const skipped: SkippedLine[] = [];
  const onSkip = (e: BenchError): void => {
    skippedLines++;
    if (skipped.length < SKIPPED_EXAMPLES) skipped.push({ line: e.line ?? 0, message: e.message });
  };
  for (const { entry, body } of entries(source, settings, onSkip)) {
    const k = entry.kind === "trace" ? "trace" : "requests";
    if (kind !== undefined && kind !== k) throw mixed(source, entry.line);
    kind = k;
    requests++;
    const stamp = entry.kind === "trace" ? entry.record.timestampMs : entry.timestampMs;
    if (stamp !== undefined) {
      stamped++;
      firstMs = Math.min(firstMs, stamp);
      lastMs = Math.max(lastMs, stamp);
    }
    const { keys, tokens } = promptOf(body, settings.blockTokens);
    promptTokens += tokens;
    ceiling.observe(keys, tokens);
    pooled.observe(keys, tokens);
    if (entry.kind === "trace") continue;
    if (entry.tenant !== undefined && tenants.size < 100_000) tenants.add(entry.tenant);
    analyzer.walk(segmentsOf(body), true);
    const differs = new Set<string>();
    for (const o of entry.keyOrders) {
      const key = `${o.field}\u0000${o.canonical}`;
      const first = keyOrderSeen.get(key);
      if (first === undefined) {
        if (keyOrderSeen.size < 200_000) keyOrderSeen.set(key, o.sent);
      } else if (first !== o.sent && !differs.has(o.field)) {
        differs.add(o.field);
        keyOrder.set(o.field, (keyOrder.get(o.field) ?? 0) + 1);
      }
    }
  }
  const timestamps = requests > 0 && stamped === requests;
  return {
    kind: kind ?? "requests",
    requests,
    promptTokens,
    timestamps,
    firstMs: timestamps ? firstMs : 0,
    lastMs: timestamps ? lastMs : 0,
    tenants: tenants.size,
    ceilingHitRate: ceiling.hitRate,
    ceilingCapped: ceiling.capped,
    pooledHitRate: pooled.hitRate,
    analyzer,
    keyOrder,
    skippedLines,
    skipped,
  };
}

function mixed(source: LineSource, line: number): BenchError {
  return new BenchError("ERR_LOG_FORMAT", `${source.name}:${line}: a log holds either request bodies or Mooncake records, not both`, { line });
}

/** What fixing one drift (or all of them) wins back in the pooled cache. */
export interface FixGain {
  /** Σ cached tokens with the fix − as logged. */
  readonly tokens: number;
  /** Requests that cache more with the fix. */
  readonly requests: number;
  /** Median extra cached tokens of those requests. */
  readonly medianTokens: number;
}

/**
 * Pass 2 for `drifts`; see the file header. Returns the gain per drift id and of all fixed
 * together (`"*"`). Holds at most {@link PASS_MAX_BLOCKS} cache blocks: when the drifts need more
 * caches than that, the log is replayed once per group of them.
 */
export function replayFixes(source: LineSource, profile: LogProfile, drifts: readonly DriftStats[], settings: PassSettings): Map<string, FixGain> {
  const ids = [...drifts.map((d) => d.id), "*"];
  const perPass = Math.max(1, Math.floor(PASS_MAX_BLOCKS / settings.pooledBlocks) - 1);
  const out = new Map<string, FixGain>();
  for (let from = 0; from < ids.length; from += perPass) {
    for (const [id, gain] of replayGroup(source, profile, ids.slice(from, from + perPass), new Set(ids), settings)) out.set(id, gain);
  }
  return out;
}

/** One replay for the drift ids `group` (fixes of every id in `all` count for `"*"`). */
function replayGroup(source: LineSource, profile: LogProfile, group: readonly string[], all: ReadonlySet<string>, settings: PassSettings): Map<string, FixGain> {
  const base = new PooledCache(settings.pooledBlocks, settings.blockTokens);
  const caches = group.map(() => new PooledCache(settings.pooledBlocks, settings.blockTokens));
  const gains = group.map(() => [] as number[]);
  for (const { entry, body } of entries(source, settings)) {
    const prompt = promptOf(body, settings.blockTokens);
    const cachedBase = base.observe(prompt.keys, prompt.tokens);
    const segments = entry.kind === "trace" ? [] : segmentsOf(body);
    const fixes = entry.kind === "trace" ? [] : profile.analyzer.walk(segments, false).fixes.filter((f) => all.has(f.finding));
    group.forEach((id, k) => {
      const mine: Fix[] = id === "*" ? fixes : fixes.filter((f) => f.finding === id);
      const p = mine.length === 0 ? prompt : promptOf(applyFixes(body, segments, mine), settings.blockTokens);
      // Counted against the prompt as logged: a fix that shortens a value does not count as reuse.
      const gain = Math.min(caches[k]!.observe(p.keys, p.tokens), prompt.tokens) - cachedBase;
      if (gain > 0 && gains[k]!.length < 1_000_000) gains[k]!.push(gain);
    });
  }
  const out = new Map<string, FixGain>();
  group.forEach((id, k) => {
    const g = gains[k]!.sort((a, b) => a - b);
    out.set(id, { tokens: caches[k]!.cachedTokens - base.cachedTokens, requests: g.length, medianTokens: g.length === 0 ? 0 : g[g.length >> 1]! });
  });
  return out;
}
