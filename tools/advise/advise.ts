/**
 * `advise`: what a request log says about prefix routing, before any router runs.
 *
 * 1. Learn the log (pass 1, analysis.ts): size, span, the reuse ceiling and the pooled ideal, drifts.
 * 2. Price the costliest drifts (pass 2): reuse won back in the pooled cache by fixing each one.
 * 3. Replay the log on the virtual fleet with every strategy and setting (`runBenchmark`), and
 *    recommend one (recommend.ts); then replay it once more with the recommended settings and
 *    every priced drift fixed, to show what the fleet gets after the fixes.
 *
 * Everything but the rows' wall-clock fields is a pure function of the log and the options.
 */
import { BenchError } from "../common/errors.js";
import { runBenchmark } from "../bench/run.js";
import type { BenchRow } from "../bench/simulate.js";
import { DEFAULT_ENGINE_CONFIG } from "../fleet/config.js";
import { type FixGain, type LogProfile, type PassSettings, type SkippedLine, profileLog, replayFixes } from "./analysis.js";
import type { DriftStats } from "./drift.js";
import { type LineSource, fileLines, memoryLines } from "./lines.js";
import { logWorkload } from "./log-workload.js";
import { type BadLines, DEFAULT_BAD_LINES, DEFAULT_OUTPUT_TOKENS, type LogRequest } from "./records.js";
import { type Recommendation, recommend } from "./recommend.js";
import { applyFixes, segmentsOf } from "./segments.js";
import { describeValue } from "./variants.js";
import { DEFAULTS } from "prefix-router";

/** Strategies `advise` compares by default: prefix-router's, the exclusive variant included. */
export const ADVISE_STRATEGIES: readonly string[] = ["random", "least-outstanding", "prefix-aware", "longest-prefix", "longest-prefix:exclusive"];
/** Prefix lengths `advise` tries for `prefix-aware` by default. */
export const ADVISE_PREFIX_LENGTHS: readonly number[] = [1024, 4096, 16384];
/** Drifts priced in pass 2, at most. */
export const MAX_FINDINGS = 8;

/** Options of {@link advise}. */
export interface AdviseOptions {
  /** Replicas of the fleet the log would run on. @default 7 */
  instances?: number;
  /** KV-cache capacity per replica, tokens. @default 1200000 (the emulated engine's) */
  capacityTokens?: number;
  /** Strategies to compare (names, `peer:*` included). @default ADVISE_STRATEGIES */
  strategies?: readonly string[];
  /** Prefix lengths for `prefix-aware`. @default ADVISE_PREFIX_LENGTHS */
  prefixLengths?: readonly number[];
  /** Concurrency thresholds. @default [32] */
  concurrencyThresholds?: readonly number[];
  /** Arrival rate of a log without timestamps, requests per second. @default instances × 1 */
  ratePerSecond?: number;
  /** Multiplies the arrival rate (timestamps are compressed by it). @default 1 */
  rateMultiplier?: number;
  /** Answer length of requests whose line does not say, tokens. @default 200 */
  outputTokens?: number;
  /** Read at most this many requests. @default Infinity */
  maxRequests?: number;
  /** Replay the log on the virtual fleet (strategies, recommendation). `false`: drifts and ceilings only, fast. @default true */
  simulate?: boolean;
  /** Seed of the replay. @default 1 */
  seed?: number;
  /** Independent router processes in front of the fleet (see `prefix-router bench --routers`). @default 1 */
  routers?: number;
  /** Smallest reuse loss reported as a drift finding, a fraction of all prompt tokens. @default 0.002 */
  minLoss?: number;
  /** Longest log line, bytes (1 to 256 MiB); a longer one is a bad line. @default DEFAULT_MAX_LINE_BYTES */
  maxLineBytes?: number;
  /** A bad line stops the run (`ERR_LOG_FORMAT`), or is counted in `skippedLines`. @default "fail" */
  badLines?: BadLines;
  /** Called as the work advances. */
  onProgress?: (progress: AdviseProgress) => void;
}

/** Progress of {@link advise}. */
export interface AdviseProgress {
  /** What is being done. */
  readonly stage: "reading" | "pricing drifts" | "replaying" | "replaying with fixes";
  /** Fraction of the stage done, 0..1. */
  readonly fraction: number;
}

/** A place where requests that should share a prefix diverge, and what it costs. */
export interface DriftFinding {
  readonly kind: "value" | "order";
  /** The field: "the system prompt", "message 2 (user)", "tools[1] (search)", "the tools", "the messages". */
  readonly field: string;
  /** Character position in the field (value drifts). */
  readonly position: number | undefined;
  /** What differs: "a timestamp", "an id", "a number", "a value", "the order". */
  readonly what: string;
  /** Up to three examples: the value a request sent, and the one its template had. */
  readonly samples: readonly { readonly seen: string; readonly expected: string }[];
  /** Requests in which it occurs, and their share of the log. */
  readonly requests: number;
  readonly share: number;
  /** Distinct values seen (counted up to 10,000). */
  readonly values: number;
  /** Prompt tokens the pooled cache would serve if only this drift were fixed, and their share of all prompt tokens. */
  readonly lostTokens: number;
  readonly lostShare: number;
  /** Requests that would cache more, their share, and the median tokens each would gain. */
  readonly affectedRequests: number;
  readonly affectedShare: number;
  readonly typicalLostTokens: number;
  /** One line: "a timestamp at character 312 of the system prompt: 38% of requests lose a 2,400-token prefix …". */
  readonly summary: string;
}

/** A difference canonical JSON already removes. */
export interface HandledFinding {
  readonly field: string;
  readonly requests: number;
  readonly summary: string;
}

/** What {@link advise} returns. */
export interface AdviseReport {
  readonly source: string;
  readonly kind: "requests" | "trace";
  readonly requests: number;
  readonly promptTokens: number;
  readonly timestamps: boolean;
  /** Time the log covers (timestamps) or the replay takes (Poisson arrivals), ms. */
  readonly durationMs: number;
  readonly tenants: number;
  readonly instances: number;
  readonly capacityTokens: number;
  /** Token hit rate of one infinite cache that has seen every earlier request: the reuse ceiling. */
  readonly ceilingHitRate: number;
  /** True when the log held more distinct prompt blocks than the ceiling keeps (`CEILING_MAX_BLOCKS`): the ceiling is a lower bound. */
  readonly ceilingCapped: boolean;
  /** Token hit rate of one cache of `instances × capacityTokens`: the best placement on this fleet. */
  readonly pooledHitRate: number;
  /** Pooled hit rate with every finding fixed. */
  readonly pooledHitRateFixed: number;
  readonly findings: readonly DriftFinding[];
  readonly handled: readonly HandledFinding[];
  /** One row per strategy and setting (empty without `simulate`). */
  readonly rows: readonly BenchRow[];
  readonly recommendation: Recommendation | undefined;
  /** The recommended settings on the log with every finding fixed (when there are findings). */
  readonly fixedRow: BenchRow | undefined;
  /** Bad lines left out under `badLines: "skip"`, and the first ten. */
  readonly skippedLines: number;
  readonly skipped: readonly SkippedLine[];
}

/**
 * Advises on a request log: see the file header and docs/advise.md.
 * @throws {BenchError} `ERR_LOG_FORMAT` for a line that is no request, `ERR_LOG_READ`, `ERR_BENCH_OPTION`
 * @example
 * const report = await adviseRequests(fixtures.map((f) => f.body), { simulate: false });
 * expect(report.findings).toEqual([]);
 */
export async function advise(source: LineSource, options: AdviseOptions = {}): Promise<AdviseReport> {
  const instances = positiveInt("instances", options.instances ?? 7);
  const blockTokens = DEFAULT_ENGINE_CONFIG.blockSizeTokens;
  const capacityTokens = positiveInt("capacityTokens", options.capacityTokens ?? DEFAULT_ENGINE_CONFIG.numGpuBlocks * blockTokens);
  const outputTokens = positiveInt("outputTokens", options.outputTokens ?? DEFAULT_OUTPUT_TOKENS);
  const maxRequests = options.maxRequests ?? Infinity;
  if (!(maxRequests >= 1)) throw optionError("maxRequests", "a number ≥ 1", maxRequests);
  const ratePerSecond = options.ratePerSecond ?? instances;
  if (!(ratePerSecond > 0 && Number.isFinite(ratePerSecond))) throw optionError("ratePerSecond", "a number > 0", ratePerSecond);
  const minLoss = options.minLoss ?? 0.002;
  const badLines = options.badLines ?? DEFAULT_BAD_LINES;
  if (badLines !== "fail" && badLines !== "skip") throw optionError("badLines", '"fail" or "skip"', badLines);
  const progress = options.onProgress;
  const bytes = source.bytes;
  const settings = (stage: AdviseProgress["stage"]): PassSettings => ({
    blockTokens,
    pooledBlocks: instances * Math.floor(capacityTokens / blockTokens),
    outputTokens,
    maxRequests,
    badLines,
    ...(progress !== undefined && bytes !== undefined && bytes > 0 ? { onBytes: (b: number) => progress({ stage, fraction: b / bytes }) } : {}),
  });

  const profile = profileLog(source, settings("reading"));
  if (profile.requests === 0) throw new BenchError("ERR_LOG_FORMAT", `${source.name}: no requests`);
  const candidates = [...profile.analyzer.drifts.values()]
    .filter((d) => d.requests >= 2)
    .sort((a, b) => b.blockedChars - a.blockedChars || a.id.localeCompare(b.id))
    .slice(0, MAX_FINDINGS);
  let gains = candidates.length === 0 ? new Map<string, FixGain>() : replayFixes(source, profile, candidates, settings("pricing drifts"));
  // Findings are the drifts that cost at least `minLoss`; "all fixed" is priced over them alone.
  const kept = candidates.filter((d) => gains.get(d.id)!.tokens >= minLoss * profile.promptTokens);
  if (kept.length > 0 && kept.length < candidates.length) gains = replayFixes(source, profile, kept, settings("pricing drifts"));
  const findings = kept.map((d) => finding(d, gains.get(d.id)!, profile)).sort((a, b) => b.lostTokens - a.lostTokens);
  const priced = new Set(kept.map((d) => d.id));
  const allGain = kept.length === 0 ? 0 : gains.get("*")!.tokens;

  const durationMs = profile.timestamps
    ? Math.floor((profile.lastMs - profile.firstMs) / (options.rateMultiplier ?? 1)) + 1
    : // Poisson arrivals: room for ten standard deviations of the last arrival, and a minute.
      Math.ceil((1000 * (profile.requests + 10 * Math.sqrt(profile.requests))) / (ratePerSecond * (options.rateMultiplier ?? 1))) + 60_000;
  const replay = {
    name: "log",
    timestamps: profile.timestamps,
    firstMs: profile.firstMs,
    durationMs,
    ratePerSecond,
    outputTokens,
    maxRequests,
    badLines,
  };
  let rows: BenchRow[] = [];
  let recommendation: Recommendation | undefined;
  let fixedRow: BenchRow | undefined;
  if (options.simulate !== false) {
    const bench = {
      instances: [instances],
      capacityTokens: [capacityTokens],
      rateMultipliers: [options.rateMultiplier ?? 1],
      durationsMs: [durationMs],
      seeds: [options.seed ?? 1],
      routers: [options.routers ?? 1],
      concurrencyThresholds: options.concurrencyThresholds ?? [DEFAULTS.concurrencyThreshold],
    };
    rows = await runBenchmark({
      ...bench,
      workloads: [logWorkload(source, replay)],
      strategies: options.strategies ?? ADVISE_STRATEGIES,
      prefixLengths: options.prefixLengths ?? ADVISE_PREFIX_LENGTHS,
      ...(progress && { onProgress: (p) => progress({ stage: "replaying", fraction: p.fraction }) }),
    });
    recommendation = recommend(rows);
    if (recommendation !== undefined && priced.size > 0) {
      const r = recommendation.row;
      const bodyOf = (req: LogRequest) => {
        const segments = segmentsOf(req.body);
        return applyFixes(req.body, segments, profile.analyzer.walk(segments, false).fixes.filter((f) => priced.has(f.finding)));
      };
      [fixedRow] = await runBenchmark({
        ...bench,
        workloads: [logWorkload(source, { ...replay, name: "log, drift fixed", bodyOf })],
        strategies: [r.strategy],
        prefixLengths: [r.prefixLength ?? ADVISE_PREFIX_LENGTHS[0]!],
        concurrencyThresholds: [r.concurrencyThreshold ?? DEFAULTS.concurrencyThreshold],
        ...(progress && { onProgress: (p) => progress({ stage: "replaying with fixes", fraction: p.fraction }) }),
      });
    }
  }
  return {
    source: source.name,
    kind: profile.kind,
    requests: profile.requests,
    promptTokens: profile.promptTokens,
    timestamps: profile.timestamps,
    durationMs,
    tenants: profile.tenants,
    instances,
    capacityTokens,
    ceilingHitRate: profile.ceilingHitRate,
    ceilingCapped: profile.ceilingCapped,
    pooledHitRate: profile.pooledHitRate,
    pooledHitRateFixed: profile.pooledHitRate + allGain / profile.promptTokens,
    findings,
    handled: handled(profile),
    rows,
    recommendation,
    fixedRow,
    skippedLines: profile.skippedLines,
    skipped: profile.skipped,
  };
}

/**
 * Advises on requests in memory: request bodies (or log lines as objects or JSON text, see
 * docs/advise.md), in arrival order. For a test suite: `simulate: false` returns in milliseconds.
 */
export async function adviseRequests(requests: readonly unknown[], options: AdviseOptions = {}): Promise<AdviseReport> {
  return advise(memoryLines(requests, options.maxLineBytes), options);
}

/** Advises on a JSONL request log file, read in constant memory (several passes). */
export async function adviseLog(path: string, options: AdviseOptions = {}): Promise<AdviseReport> {
  return advise(fileLines(path, options.maxLineBytes), options);
}

const pct = (v: number) => `${Math.round(100 * v)}%`;
const tokens = (v: number) => Math.round(v).toLocaleString("en-US");

function finding(d: DriftStats, gain: FixGain, profile: LogProfile): DriftFinding {
  const what = d.kind === "order" ? "the order" : describeValue(d.samples.map((s) => s.seen));
  const lostShare = gain.tokens / profile.promptTokens;
  const affectedShare = gain.requests / profile.requests;
  const where = d.kind === "order" ? `${d.field} in different orders` : `${what} at character ${d.position} of ${d.field}`;
  return {
    kind: d.kind,
    field: d.field,
    position: d.position,
    what,
    samples: d.samples,
    requests: d.requests,
    share: d.requests / profile.requests,
    values: d.values.size,
    lostTokens: gain.tokens,
    lostShare,
    affectedRequests: gain.requests,
    affectedShare,
    typicalLostTokens: gain.medianTokens,
    summary: `${where}: ${pct(affectedShare)} of requests lose a ${tokens(gain.medianTokens)}-token prefix (${(100 * lostShare).toFixed(1)} points of reuse)`,
  };
}

function handled(profile: LogProfile): HandledFinding[] {
  return [...profile.keyOrder].map(([field, requests]) => ({
    field,
    requests,
    summary: `JSON key order differs between requests that otherwise send the same ${field === "the body" ? "top-level fields" : field} (${requests.toLocaleString("en-US")} requests): handled, routing keys read canonical JSON`,
  }));
}

function positiveInt(name: string, v: number): number {
  if (!Number.isSafeInteger(v) || v < 1) throw optionError(name, "an integer ≥ 1", v);
  return v;
}

function optionError(name: string, expected: string, v: unknown): BenchError {
  return new BenchError("ERR_BENCH_OPTION", `Expected \`${name}\` to be ${expected}, got ${JSON.stringify(v)}`);
}
