/**
 * Layout of the HTML report's charts: at most {@link MAX_SERIES_PER_CHART} series per chart, more
 * as small multiples that share their axes and colours (so that two charts side by side compare),
 * and axes fitted to the data rather than fixed decades.
 */
import type { BenchRow } from "./simulate.js";

/** Most series one chart draws; more make small multiples. */
export const MAX_SERIES_PER_CHART = 4;

/** Scales shared by every small multiple of one scenario. */
export interface ChartScales {
  /** Every series label, in row order: the colour domain, so a series keeps its colour across charts. */
  series: string[];
  /** TTFT axis (log scale), ms: the data's range with a margin. */
  ttftMs: [number, number];
  /** Largest share of requests of any instance, %, with a margin: the share axis' top. */
  shareMaxPct: number;
}

/** Splits `items` into the fewest groups of at most `max`, as even as possible (8 → 4 + 4, 5 → 3 + 2). */
export function smallMultiples<T>(items: readonly T[], max = MAX_SERIES_PER_CHART): T[][] {
  const groups = Math.max(1, Math.ceil(items.length / max));
  const out: T[][] = [];
  let from = 0;
  for (let g = 0; g < groups; g++) {
    const size = Math.ceil((items.length - from) / (groups - g));
    out.push(items.slice(from, from + size));
    from += size;
  }
  return out;
}

/** Smallest TTFT drawn, ms: a log axis needs a positive floor. */
export const MIN_TTFT_MS = 0.001;

/**
 * A log axis' domain fitted to `values` (ms): a tenth of a decade beyond the smallest and the
 * largest, so that neither touches the frame. `[MIN_TTFT_MS, 1]` when there is no data.
 */
export function logDomain(values: Iterable<number>): [number, number] {
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  for (const v of values) {
    const x = Math.max(v, MIN_TTFT_MS);
    if (x < lo) lo = x;
    if (x > hi) hi = x;
  }
  if (!Number.isFinite(lo)) return [MIN_TTFT_MS, 1];
  const margin = 10 ** 0.1;
  return [lo / margin, hi * margin];
}

/** The scales every chart of `rows` (one scenario) shares; `label` names a row's series. */
export function chartScales(rows: readonly BenchRow[], label: (r: BenchRow) => string): ChartScales {
  const shares = rows.flatMap((r) => Object.values(r.instanceShares));
  return {
    series: rows.map(label),
    ttftMs: logDomain(rows.flatMap((r) => r.ttftCdf.map(([, ms]) => ms))),
    shareMaxPct: Math.min(100, Math.ceil(105 * Math.max(0, ...shares))),
  };
}
