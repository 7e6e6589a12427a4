/**
 * What the `engine` load view reads from a target's Prometheus `/metrics` text: the configured
 * families' lines, parsed (with `parse-prometheus-text-format`, an optional peer) into the
 * target's figures — requests running and waiting, uncached tokens waiting, the cache's block
 * size — each summed over label sets.
 */
import { RouterError } from "../errors.js";
import { importPeer } from "../internal/optional-peer.js";
import type { TargetSpec } from "../types.js";
import type { EngineConfig } from "./options.js";

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
  /**
   * Prompt tokens waiting for prefill that the engine's cache does not hold, summed over label
   * sets; `null` when the target exports none of the names or a sample is not a count (not a
   * finite number from 0 to {@link MAX_ENGINE_TOKENS}).
   */
  waitingUncachedTokens: number | null;
  /** The engine's KV cache from its config info metric; `null` when absent or not valid. */
  cache: EngineCacheConfig | null;
}

/** An engine's KV cache, as its config info metric (vLLM's `vllm:cache_config_info`) tells. */
export interface EngineCacheConfig {
  /** Tokens per KV block (`block_size`). */
  blockSize: number;
  /** Tokens the KV cache holds: Σ `num_gpu_blocks` × `block_size` over label sets (data-parallel engines). */
  capacityTokens: number;
}

/**
 * A token gauge above this is not believed (2^40 ≈ 1.1 × 10^12 tokens: far past any engine's
 * queue), like a negative or non-finite one: the target's token figure is unknown.
 */
export const MAX_ENGINE_TOKENS = 2 ** 40;

/**
 * @internal Reads the configured gauges from Prometheus text; throws when neither running nor
 * waiting is there. Only the lines of the configured families reach the parser (see
 * {@link familyLines}): its cost does not grow with the rest of the body.
 */
export function readEngineFigures(parse: PrometheusParser, text: string, names: EngineConfig<TargetSpec>["metrics"]): EngineFigures {
  const wanted = [...names.running, ...names.waiting, ...names.kvCacheUsage, ...names.waitingUncachedTokens, ...names.cacheConfig];
  const families = new Map(parse(familyLines(text, wanted)).map((f) => [f.name, f]));
  const first = (list: readonly string[]): MetricFamily | undefined => {
    for (const name of list) {
      const f = families.get(name);
      if (f !== undefined) return f;
    }
    return undefined;
  };
  const sum = (list: readonly string[]): number | null => {
    const f = first(list);
    if (f === undefined) return null;
    let total = 0;
    for (const m of f.metrics) {
      const v = Number(m.value);
      if (Number.isFinite(v)) total += v;
    }
    return total;
  };
  const running = sum(names.running);
  const waiting = sum(names.waiting);
  if (running === null && waiting === null) {
    throw new Error(`none of the metrics ${[...names.running, ...names.waiting].join(", ")} in the answer`);
  }
  return {
    running: running ?? 0,
    waiting: waiting ?? 0,
    kvCacheUsage: sum(names.kvCacheUsage),
    waitingUncachedTokens: tokens(first(names.waitingUncachedTokens)),
    cache: cacheConfig(first(names.cacheConfig)),
  };
}

/** A token gauge's sum over its label sets, or `null` when any sample is not a count. */
function tokens(f: MetricFamily | undefined): number | null {
  if (f === undefined || f.metrics.length === 0) return null;
  let total = 0;
  for (const m of f.metrics) {
    const v = Number(m.value);
    if (!(v >= 0 && v <= MAX_ENGINE_TOKENS)) return null;
    total += v;
  }
  return total <= MAX_ENGINE_TOKENS ? total : null;
}

/** An integer label from 1 to `max`, else NaN. */
function intLabel(labels: Record<string, string> | undefined, name: string, max: number): number {
  const raw = labels?.[name];
  if (raw === undefined || !/^[0-9]{1,16}$/.test(raw)) return Number.NaN;
  const n = Number(raw);
  return n >= 1 && n <= max ? n : Number.NaN;
}

/** The KV cache a config info family describes, or `null` when a sample lacks a valid `block_size` or `num_gpu_blocks`. */
function cacheConfig(f: MetricFamily | undefined): EngineCacheConfig | null {
  if (f === undefined || f.metrics.length === 0) return null;
  let blockSize = Number.NaN;
  let capacityTokens = 0;
  for (const m of f.metrics) {
    const size = intLabel(m.labels, "block_size", 1 << 20);
    const blocks = intLabel(m.labels, "num_gpu_blocks", 2 ** 32);
    if (Number.isNaN(size) || Number.isNaN(blocks) || (!Number.isNaN(blockSize) && size !== blockSize)) return null;
    blockSize = size;
    capacityTokens += size * blocks;
  }
  return capacityTokens <= MAX_ENGINE_TOKENS ? { blockSize, capacityTokens } : null;
}

/**
 * @internal The lines of the families in `names` — their samples (`name{…} v`, `name v`) and
 * their `# HELP name …` and `# TYPE name …` lines — family after family, each in body order, with
 * a final line break. Cost: one pass of a regular expression over the body (native, linear), then
 * a slice per line found. The rest of the body (histograms, per-adapter series) never reaches the
 * parser, whose cost is then that of the gauges read, not of the body.
 */
export function familyLines(text: string, names: readonly string[]): string {
  const unique = [...new Set(names)];
  if (unique.length === 0) return "";
  const alternatives = unique.map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|");
  const line = new RegExp(`^[ \\t]*(# (?:HELP|TYPE) )?(${alternatives})([ \\t{])[^\\n]*`, "gm");
  const byName = new Map<string, string[]>();
  for (const m of text.matchAll(line)) {
    // A HELP or TYPE line names its family and a space; a sample continues with labels or a value.
    if (m[1] !== undefined && m[3] !== " ") continue;
    const name = m[2] as string;
    let lines = byName.get(name);
    if (lines === undefined) byName.set(name, (lines = []));
    lines.push(m[0].trim());
  }
  let out = "";
  // The parser emits a family when the next one starts: every line ends with a line break.
  for (const lines of byName.values()) out += `${lines.join("\n")}\n`;
  return out;
}
