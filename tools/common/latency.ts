/**
 * Latency percentiles of the live tools, from an HDR histogram (2 significant digits, as the
 * router's own `stats()` keeps them).
 */
import { type Histogram, build } from "hdr-histogram-js";

/** Percentiles in thousandths of the recorded unit (µs recorded → ms). */
export interface Percentiles {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** An empty histogram of non-negative integers (the caller's unit), auto-resizing. */
export function newHistogram(): Histogram {
  return build({ numberOfSignificantValueDigits: 2, lowestDiscernibleValue: 1, autoResize: true });
}

/** The percentiles of `h`, never above its exact maximum; `null` when it is empty. */
export function summarize(h: Histogram): Percentiles | null {
  if (h.totalCount === 0) return null;
  const at = (p: number) => Math.min(h.getValueAtPercentile(p), h.maxValue) / 1000;
  return { count: h.totalCount, p50: at(50), p90: at(90), p99: at(99), max: h.maxValue / 1000 };
}
