/**
 * Per-target bookkeeping: in-flight count, pick counters, outlier-ejection state and latency
 * histograms. One object per target id; it outlives the target's removal while leases on it are
 * still open, so a late `release()` always lands on the object it incremented.
 */
import { build, encodeIntoCompressedBase64, type Histogram } from "hdr-histogram-js";
import { type PredictionVerdict, judgePrediction } from "../closed-loop/closed-loop.js";
import type { EjectionPolicy } from "../options.js";
import type { LeaseOutcome, ReleaseInfo } from "../types.js";


/**
 * Latency percentiles in milliseconds, and the histogram they come from. Percentiles are within
 * 1% of the exact value and never above `max`, which is exact.
 */
export interface LatencySummary {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /**
   * The samples as an HDR histogram in microseconds (2 significant digits), in HdrHistogram's
   * compressed base64 form (readable by the Java, Go, Python and JavaScript HdrHistogram
   * libraries). Histograms of several processes add up: {@link mergeStats} does it.
   */
  histogram: string;
}

/** @internal */
export class TargetState {
  inflight = 0;
  routed = 0;
  preferred = 0;
  spillover = 0;
  fallback = 0;
  random = 0;
  leastOutstanding = 0;
  affinity = 0;
  failures = 0;
  consecutiveFailures = 0;
  /** Ejections since the last success; drives the exponential backoff. */
  ejections = 0;
  ejectedUntilMs = Number.NEGATIVE_INFINITY;
  promptTokens = 0;
  cachedTokens = 0;
  /** Σ predicted cached tokens of the responses that reported usage (against `cachedTokens`). */
  predictedCachedTokens = 0;
  /** Responses that tested a prediction, and those that missed it (closed-loop.ts). */
  predictions = 0;
  predictionMisses = 0;
  /** Times the strategy forgot what it believed the target caches. */
  indexResets = 0;
  /** True while the id is in the current target set. */
  active = true;
  /** True while active health checks (`health-check.ts`) take the target out, like an ejection. */
  failingHealthCheck = false;
  private ttft: Histogram | undefined;
  private duration: Histogram | undefined;

  constructor(readonly id: string) {}

  isEjected(nowMs: number): boolean {
    return this.ejectedUntilMs > nowMs;
  }

  /**
   * Records a failure that says the target is unhealthy; ejects it when the policy says so.
   * Returns the ejection's length in ms when this failure ejected the target, else 0.
   */
  fail(nowMs: number, policy: EjectionPolicy | undefined): number {
    this.failures++;
    this.consecutiveFailures++;
    // Failures of requests sent before the ejection began do not extend it.
    if (policy === undefined || this.isEjected(nowMs)) return 0;
    // After an ejection has run out, one more failure before any success re-ejects at once.
    if (this.consecutiveFailures >= policy.consecutiveFailures || this.ejections > 0) {
      this.ejections++;
      const backoff = Math.min(policy.baseEjectionMs * 2 ** (this.ejections - 1), policy.maxEjectionMs);
      this.ejectedUntilMs = nowMs + backoff;
      this.consecutiveFailures = 0;
      return backoff;
    }
    return 0;
  }

  succeed(): void {
    this.consecutiveFailures = 0;
    this.ejections = 0;
  }

  recordTtft(ms: number): void {
    this.ttft ??= newHistogram();
    this.ttft.recordValue(toMicros(ms));
  }

  recordDuration(ms: number): void {
    this.duration ??= newHistogram();
    this.duration.recordValue(toMicros(ms));
  }

  ttftSummary(): LatencySummary | null {
    return summarize(this.ttft);
  }

  durationSummary(): LatencySummary | null {
    return summarize(this.duration);
  }

  /** @internal Adds this target's histograms into `into` (for fleet totals). */
  mergeInto(into: MergedLatency): void {
    into.ttft = addInto(into.ttft, this.ttft);
    into.duration = addInto(into.duration, this.duration);
  }

  /**
   * Counts the usage a released lease reported, and judges the prediction its pick made (the
   * closed loop's rule, `closed-loop.ts`, with miss ratio `ratio`). Returns the verdict.
   */
  recordUsage(predicted: number | undefined, outcome: LeaseOutcome, info: ReleaseInfo | undefined, ratio: number): PredictionVerdict {
    let verdict: PredictionVerdict;
    if (typeof info?.promptTokens === "number" && info.promptTokens >= 0) this.promptTokens += info.promptTokens;
    if (info !== undefined && typeof info.cachedTokens === "number" && info.cachedTokens >= 0) {
      this.cachedTokens += info.cachedTokens;
      if (predicted !== undefined) this.predictedCachedTokens += predicted;
      verdict = judgePrediction(predicted, outcome, info, ratio);
      if (verdict !== undefined) this.predictions++;
      if (verdict === "miss") this.predictionMisses++;
    }
    return verdict;
  }
}

/** @internal Every target's state by id: current targets, and removed ones while they have open leases. */
export class TargetStates {
  private readonly byId = new Map<string, TargetState>();

  /** The states of a new target list: ids that stay keep theirs; removed ones leave once idle. */
  install(list: readonly { readonly id: string }[], failing: (id: string) => boolean): TargetState[] {
    const ids = new Set(list.map((t) => t.id));
    for (const [id, state] of this.byId) {
      if (!ids.has(id)) {
        state.active = false;
        if (state.inflight === 0) this.byId.delete(id);
      }
    }
    return list.map((t) => {
      let state = this.byId.get(t.id);
      if (state === undefined) {
        state = new TargetState(t.id);
        this.byId.set(t.id, state);
      }
      state.active = true;
      state.failingHealthCheck = failing(t.id);
      return state;
    });
  }

  get(id: string): TargetState | undefined {
    return this.byId.get(id);
  }

  all(): TargetState[] {
    return [...this.byId.values()];
  }

  /** Drops a removed target's state once its last lease is released. */
  retire(state: TargetState): void {
    if (!state.active && state.inflight === 0 && this.byId.get(state.id) === state) this.byId.delete(state.id);
  }
}

/** Histograms summed over several targets. */
export interface MergedLatency {
  ttft?: Histogram | undefined;
  duration?: Histogram | undefined;
}

/** `into` plus `h` (a new histogram when `into` is undefined); `into` when `h` is undefined. */
export function addInto(into: Histogram | undefined, h: Histogram | undefined): Histogram | undefined {
  if (h === undefined) return into;
  const sum = into ?? newHistogram();
  sum.add(h);
  return sum;
}

/** Microsecond resolution, 2 significant digits (≤1% error), auto-resizing: bounded memory. */
export function newHistogram(): Histogram {
  return build({ numberOfSignificantValueDigits: 2, lowestDiscernibleValue: 1, autoResize: true });
}

function toMicros(ms: number): number {
  return Math.max(0, Math.round(ms * 1000));
}

/**
 * The summary of `h`. `maxMicros` is the exact maximum (an HDR histogram reports a value's bucket,
 * up to 1% above it; a decoded one reports even its maximum that way). Percentiles are capped at
 * it: a bucket's upper end is no sample's value.
 */
export function summarize(h: Histogram | undefined, maxMicros: number = h?.maxValue ?? 0): LatencySummary | null {
  if (h === undefined || h.totalCount === 0) return null;
  const at = (p: number) => Math.min(h.getValueAtPercentile(p), maxMicros) / 1000;
  return {
    count: h.totalCount,
    p50: at(50),
    p90: at(90),
    p99: at(99),
    max: maxMicros / 1000,
    histogram: encodeIntoCompressedBase64(h),
  };
}
