/**
 * Per-target bookkeeping: in-flight count, pick counters, outlier-ejection state and latency
 * histograms. One object per target id; it outlives the target's removal while leases on it are
 * still open, so a late `release()` always lands on the object it incremented.
 */
import { build, type Histogram } from "hdr-histogram-js";

/** Consecutive failures, ejection and backoff (Envoy's outlier-detection model, simplified). */
export interface EjectionPolicy {
  consecutiveFailures: number;
  baseEjectionMs: number;
  maxEjectionMs: number;
}

/** Latency percentiles in milliseconds. */
export interface LatencySummary {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
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
  failures = 0;
  consecutiveFailures = 0;
  /** Ejections since the last success; drives the exponential backoff. */
  ejections = 0;
  ejectedUntilMs = Number.NEGATIVE_INFINITY;
  promptTokens = 0;
  cachedTokens = 0;
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

  /** Records a failure that says the target is unhealthy; ejects it when the policy says so. */
  fail(nowMs: number, policy: EjectionPolicy | undefined): void {
    this.failures++;
    this.consecutiveFailures++;
    // Failures of requests sent before the ejection began do not extend it.
    if (policy === undefined || this.isEjected(nowMs)) return;
    // After an ejection has run out, one more failure before any success re-ejects at once.
    if (this.consecutiveFailures >= policy.consecutiveFailures || this.ejections > 0) {
      this.ejections++;
      const backoff = Math.min(policy.baseEjectionMs * 2 ** (this.ejections - 1), policy.maxEjectionMs);
      this.ejectedUntilMs = nowMs + backoff;
      this.consecutiveFailures = 0;
    }
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
  mergeInto(into: { ttft?: Histogram }): void {
    if (this.ttft === undefined) return;
    into.ttft ??= newHistogram();
    into.ttft.add(this.ttft);
  }
}

/** Microsecond resolution, 2 significant digits (≤1% error), auto-resizing: bounded memory. */
export function newHistogram(): Histogram {
  return build({ numberOfSignificantValueDigits: 2, lowestDiscernibleValue: 1, autoResize: true });
}

function toMicros(ms: number): number {
  return Math.max(0, Math.round(ms * 1000));
}

export function summarize(h: Histogram | undefined): LatencySummary | null {
  if (h === undefined || h.totalCount === 0) return null;
  return {
    count: h.totalCount,
    p50: h.getValueAtPercentile(50) / 1000,
    p90: h.getValueAtPercentile(90) / 1000,
    p99: h.getValueAtPercentile(99) / 1000,
    max: h.maxValue / 1000,
  };
}
