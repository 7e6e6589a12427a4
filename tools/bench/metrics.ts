/**
 * What one simulated run measures, in constant memory per request:
 *
 * - TTFT (`firstTokenMs − arrivalMs`) of every request, exact percentiles by nearest rank (8 bytes a
 *   request, sorted once at the end). Not an HDR histogram: at 3 significant digits its buckets
 *   are 64 µs wide around 70 ms, the size of the differences between good policies at the
 *   cached-TTFT floor, so two policies would tie or differ by one bucket for no real reason;
 * - queueing delay mean; token hit rate = Σ cached prompt tokens / Σ prompt tokens;
 * - the ideal hit rate of the same sequence ({@link IdealCache}: one infinitely large cache that
 *   has seen every earlier request, with the engine's own block hashing and reuse cap);
 * - per-instance request shares, spillover (picks that were not the key's first choice);
 * - hit rate over time in fixed buckets by arrival time, and for each scale event the dip and the
 *   time until the hit rate recovers ({@link analyzeScaleEvent}).
 */

/** A finished request as the virtual fleet reports it (the fields the metrics read). */
export interface CompletedRequest {
  readonly arrivalMs: number;
  readonly firstTokenMs: number;
  readonly finishMs: number;
  readonly queueMs: number;
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly outputTokens: number;
}

/** Percentiles drawn in the TTFT CDF chart (plus 99.9). */
const CDF_PERCENTILES: readonly number[] = [
  ...Array.from({ length: 99 }, (_, i) => i + 1),
  99.5,
  99.9,
];

/** Options of {@link RunRecorder}. */
export interface RunRecorderOptions {
  /** Width of the hit-rate-over-time buckets, ms. */
  bucketMs: number;
}

/** A scale event as applied during a run. */
export interface AppliedScaleEvent {
  /** Simulated time of the event, ms. */
  readonly atMs: number;
  /** Instances added (> 0) or removed (< 0). */
  readonly delta: number;
  /** Instance count after the event. */
  readonly instances: number;
}

/** One bucket of the hit-rate-over-time series. */
export interface HitRatePoint {
  /** Bucket start, simulated ms. */
  readonly tMs: number;
  /** Token hit rate of the requests that arrived in the bucket (`null` if none). */
  readonly hitRate: number | null;
  /** Ideal token hit rate of the same requests (`null` if none or not computed). */
  readonly idealHitRate: number | null;
  /** Requests that arrived in the bucket. */
  readonly requests: number;
}

/** Hit-rate dip and recovery after one scale event; see {@link analyzeScaleEvent}. */
export interface ScaleEventResult extends AppliedScaleEvent {
  /** Token hit rate over the window before the event (fraction of 1), `null` without one. */
  readonly baselineHitRate: number | null;
  /** Lowest smoothed hit rate in the window after the event. */
  readonly minHitRate: number | null;
  /** `baselineHitRate − minHitRate`, at least 0 (fraction of 1). */
  readonly dip: number | null;
  /**
   * Time from the event until the smoothed hit rate is back within {@link RECOVERY_TOLERANCE}
   * of the baseline, ms; 0 when it never left; `null` when it did not recover before the next
   * event or the end of the run.
   */
  readonly recoveryMs: number | null;
}

/** How close to the baseline the hit rate must come back to count as recovered (fraction of 1). */
export const RECOVERY_TOLERANCE = 0.02;

/** The measured values of one run, before they are put into a row. */
export interface RunMetrics {
  /** Requests completed. */
  requests: number;
  ttftP50Ms: number;
  ttftP90Ms: number;
  ttftP99Ms: number;
  ttftMeanMs: number;
  /** Mean time ready but not admitted by the engine's scheduler, ms. */
  queueMeanMs: number;
  /** Σ cached prompt tokens / Σ prompt tokens. */
  tokenHitRate: number;
  /** Completed requests per second, first arrival to last completion. */
  throughput: number;
  /** Output tokens per second over the same span. */
  outputTokensPerSecond: number;
  /** Picks that were not the key's first choice (spillover + fallback). */
  spilloverRate: number;
  /** Smallest and largest share of requests routed to one instance (every instance that existed). */
  minShare: number;
  maxShare: number;
  instanceShares: Record<string, number>;
  /** `[percentile, ttftMs]` pairs (1..99, 99.5, 99.9) for the CDF chart. */
  ttftCdf: [number, number][];
  hitRateSeries: HitRatePoint[];
  /** Width of the hit-rate buckets, ms. */
  bucketMs: number;
}

/**
 * Accumulates one run's measurements. Call {@link recordDecision} per routed request,
 * {@link recordCompletion} per finished request, then {@link finish}.
 */
export class RunRecorder {
  readonly #bucketMs: number;
  /** TTFTs in ms, `#completed` of them used; grown by doubling. */
  #ttft = new Float64Array(256);
  readonly #routed = new Map<string, number>();
  #decisions = 0;
  #spilled = 0;
  #completed = 0;
  #queueSum = 0;
  #ttftSum = 0;
  #prompt = 0;
  #cached = 0;
  #output = 0;
  #firstArrival = Infinity;
  #lastFinish = -Infinity;
  readonly #bucketPrompt: number[] = [];
  readonly #bucketCached: number[] = [];
  readonly #bucketIdeal: number[] = [];
  readonly #bucketIdealPrompt: number[] = [];
  readonly #bucketCount: number[] = [];

  constructor(options: RunRecorderOptions) {
    this.#bucketMs = options.bucketMs;
  }

  /** Makes `id` count in the shares even if it never receives a request. */
  registerInstance(id: string): void {
    if (!this.#routed.has(id)) this.#routed.set(id, 0);
  }

  /** One routing decision. `spilled`: the pick was not the key's first choice. */
  recordDecision(targetId: string, spilled: boolean): void {
    this.#decisions++;
    if (spilled) this.#spilled++;
    this.#routed.set(targetId, (this.#routed.get(targetId) ?? 0) + 1);
  }

  /** The ideal cached tokens of a request (from {@link IdealCache}), by arrival. */
  recordIdeal(arrivalMs: number, promptTokens: number, idealCachedTokens: number): void {
    const b = this.#bucket(arrivalMs);
    this.#bucketIdeal[b] = (this.#bucketIdeal[b] ?? 0) + idealCachedTokens;
    this.#bucketIdealPrompt[b] = (this.#bucketIdealPrompt[b] ?? 0) + promptTokens;
  }

  /** One finished request. */
  recordCompletion(r: CompletedRequest): void {
    const ttftMs = r.firstTokenMs - r.arrivalMs;
    if (this.#completed === this.#ttft.length) {
      const grown = new Float64Array(this.#ttft.length * 2);
      grown.set(this.#ttft);
      this.#ttft = grown;
    }
    this.#ttft[this.#completed++] = ttftMs;
    this.#ttftSum += ttftMs;
    this.#queueSum += r.queueMs;
    this.#prompt += r.promptTokens;
    this.#cached += r.cachedTokens;
    this.#output += r.outputTokens;
    if (r.arrivalMs < this.#firstArrival) this.#firstArrival = r.arrivalMs;
    if (r.finishMs > this.#lastFinish) this.#lastFinish = r.finishMs;
    const b = this.#bucket(r.arrivalMs);
    this.#bucketPrompt[b] = (this.#bucketPrompt[b] ?? 0) + r.promptTokens;
    this.#bucketCached[b] = (this.#bucketCached[b] ?? 0) + r.cachedTokens;
    this.#bucketCount[b] = (this.#bucketCount[b] ?? 0) + 1;
  }

  /** Completed requests so far. */
  get completed(): number {
    return this.#completed;
  }

  /** The run's metrics. */
  finish(): RunMetrics {
    const n = this.#completed;
    const sorted = this.#ttft.slice(0, n).sort();
    const pct = (p: number) => nearestRank(sorted, p);
    const spanS = n === 0 ? 0 : (this.#lastFinish - this.#firstArrival) / 1000;
    const total = this.#decisions;
    const instanceShares: Record<string, number> = {};
    let minShare = total === 0 ? 0 : 1;
    let maxShare = 0;
    for (const [id, count] of this.#routed) {
      const share = total === 0 ? 0 : count / total;
      instanceShares[id] = share;
      if (share < minShare) minShare = share;
      if (share > maxShare) maxShare = share;
    }
    const buckets = Math.max(this.#bucketPrompt.length, this.#bucketIdealPrompt.length);
    const hitRateSeries: HitRatePoint[] = [];
    for (let b = 0; b < buckets; b++) {
      const prompt = this.#bucketPrompt[b] ?? 0;
      const idealPrompt = this.#bucketIdealPrompt[b] ?? 0;
      hitRateSeries.push({
        tMs: b * this.#bucketMs,
        hitRate: prompt > 0 ? (this.#bucketCached[b] ?? 0) / prompt : null,
        idealHitRate: idealPrompt > 0 ? (this.#bucketIdeal[b] ?? 0) / idealPrompt : null,
        requests: this.#bucketCount[b] ?? 0,
      });
    }
    return {
      requests: n,
      ttftP50Ms: pct(50),
      ttftP90Ms: pct(90),
      ttftP99Ms: pct(99),
      ttftMeanMs: n === 0 ? 0 : this.#ttftSum / n,
      queueMeanMs: n === 0 ? 0 : this.#queueSum / n,
      tokenHitRate: this.#prompt === 0 ? 0 : this.#cached / this.#prompt,
      throughput: spanS > 0 ? n / spanS : 0,
      outputTokensPerSecond: spanS > 0 ? this.#output / spanS : 0,
      spilloverRate: total === 0 ? 0 : this.#spilled / total,
      minShare,
      maxShare,
      instanceShares,
      ttftCdf: n === 0 ? [] : CDF_PERCENTILES.map((p) => [p, pct(p)]),
      hitRateSeries,
      bucketMs: this.#bucketMs,
    };
  }

  /** Dip and recovery of each event (in time order), see {@link analyzeScaleEvent}. */
  analyzeScaleEvents(events: readonly AppliedScaleEvent[], endMs: number): ScaleEventResult[] {
    const series = Array.from({ length: this.#bucketPrompt.length }, (_, b) => ({
      tMs: b * this.#bucketMs,
      prompt: this.#bucketPrompt[b] ?? 0,
      cached: this.#bucketCached[b] ?? 0,
    }));
    return events.map((e, i) =>
      analyzeScaleEvent(e, series, this.#bucketMs, events[i - 1]?.atMs ?? 0, events[i + 1]?.atMs ?? endMs),
    );
  }

  #bucket(tMs: number): number {
    return Math.max(0, Math.floor(tMs / this.#bucketMs));
  }
}

/**
 * The p-th percentile of ascending `sorted` by nearest rank: the smallest value with at least p%
 * of the values at or below it (0 for none).
 */
function nearestRank(sorted: Float64Array, p: number): number {
  const n = sorted.length;
  if (n === 0) return 0;
  const rank = Math.min(n, Math.max(1, Math.ceil((p / 100) * n)));
  return sorted[rank - 1] as number;
}

/**
 * The ideal prefix cache: one infinitely large cache that has seen every earlier request of the
 * sequence. A request's ideal hit is its longest run of leading block keys already seen, capped
 * like the engine's (at least one prompt token is recomputed). Strategy-independent: computed
 * once per sequence. Memory: one set entry per distinct block.
 */
export class IdealCache {
  readonly #seen = new Set<number>();
  readonly #blockTokens: number;
  readonly #maxBlocks: number;
  #prompt = 0;
  #cached = 0;

  /**
   * @param blockTokens - the engine's block size in tokens
   * @param maxBlocks - distinct blocks kept; past it no new block is added and the hit rate is a
   *   lower bound ({@link capped}). Default: no limit.
   */
  constructor(blockTokens: number, maxBlocks = Infinity) {
    this.#blockTokens = blockTokens;
    this.#maxBlocks = maxBlocks;
  }

  /**
   * Looks up and then inserts the request's block keys; returns its ideal cached tokens.
   * @param keys - the chained block keys of the prompt (the engine's `blockKeys`)
   * @param promptTokens - the prompt's token count
   */
  observe(keys: ArrayLike<number>, promptTokens: number): number {
    // Keys are prefix-chained and every request inserts all of its keys, so the keys of a
    // request already in the set form a prefix of its keys: binary search for its length.
    let lo = 0;
    let hi = keys.length;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.#seen.has(keys[mid - 1]!)) lo = mid;
      else hi = mid - 1;
    }
    // Stopping part-way keeps the set prefix-closed: a request's keys are added in order.
    for (let i = lo; i < keys.length && this.#seen.size < this.#maxBlocks; i++) this.#seen.add(keys[i]!);
    const hit = Math.min(lo, Math.floor((promptTokens - 1) / this.#blockTokens));
    const cached = Math.max(0, hit) * this.#blockTokens;
    this.#prompt += promptTokens;
    this.#cached += cached;
    return cached;
  }

  /** Σ ideal cached tokens / Σ prompt tokens so far (fraction of 1). */
  get hitRate(): number {
    return this.#prompt === 0 ? 0 : this.#cached / this.#prompt;
  }

  /** Distinct blocks seen. */
  get blocks(): number {
    return this.#seen.size;
  }

  /** True once `maxBlocks` was reached: the hit rate is then a lower bound. */
  get capped(): boolean {
    return this.#seen.size >= this.#maxBlocks;
  }
}

/**
 * Hit-rate dip and recovery after a scale event, from a run's hit-rate series.
 *
 * - Baseline: token-weighted hit rate of the buckets in the window before the event (up to 5
 *   minutes, never reaching back before the previous event).
 * - Smoothed series: token-weighted hit rate over 3 consecutive buckets (one bucket is ~1/120
 *   of the run, too noisy on its own).
 * - Dip: baseline minus the lowest smoothed value in the window after the event (up to 5
 *   minutes, never past the next event).
 * - Recovery: time from the event to the end of the first smoothed window, at or after the
 *   lowest one, that is within {@link RECOVERY_TOLERANCE} of the baseline.
 *
 * @param series - the bucketed series (prompt/cached tokens per bucket)
 * @param nextEventMs - time of the next event, or the end of the run
 * @param previousEventMs - time of the previous event, or 0
 */
export function analyzeScaleEvent(
  event: AppliedScaleEvent,
  series: readonly { tMs: number; prompt: number; cached: number }[],
  bucketMs: number,
  previousEventMs: number,
  nextEventMs: number,
): ScaleEventResult {
  const WINDOW = 5 * 60_000;
  const SMOOTH = 3;
  const before = series.filter(
    (p) => p.tMs >= Math.max(previousEventMs, event.atMs - WINDOW) && p.tMs + bucketMs <= event.atMs,
  );
  const sum = (ps: readonly { prompt: number; cached: number }[]) => {
    let prompt = 0;
    let cached = 0;
    for (const p of ps) {
      prompt += p.prompt;
      cached += p.cached;
    }
    return prompt > 0 ? cached / prompt : null;
  };
  const baseline = sum(before);
  const after = series.filter((p) => p.tMs >= event.atMs && p.tMs < nextEventMs);
  const smoothed: { endMs: number; rate: number }[] = [];
  for (let i = 0; i + SMOOTH <= after.length; i++) {
    const w = after.slice(i, i + SMOOTH);
    const rate = sum(w);
    if (rate !== null) smoothed.push({ endMs: w[w.length - 1]!.tMs + bucketMs, rate });
  }
  if (baseline === null || smoothed.length === 0) {
    return { ...event, baselineHitRate: baseline, minHitRate: null, dip: null, recoveryMs: null };
  }
  let minIdx = 0;
  for (let i = 0; i < smoothed.length && smoothed[i]!.endMs <= event.atMs + WINDOW + SMOOTH * bucketMs; i++) {
    if (smoothed[i]!.rate < smoothed[minIdx]!.rate) minIdx = i;
  }
  const min = smoothed[minIdx]!.rate;
  const dip = Math.max(0, baseline - min);
  let recoveryMs: number | null = null;
  if (dip <= RECOVERY_TOLERANCE) recoveryMs = 0;
  else {
    for (let i = minIdx; i < smoothed.length; i++) {
      if (smoothed[i]!.rate >= baseline - RECOVERY_TOLERANCE) {
        recoveryMs = smoothed[i]!.endMs - event.atMs;
        break;
      }
    }
  }
  return { ...event, baselineHitRate: baseline, minHitRate: min, dip, recoveryMs };
}
