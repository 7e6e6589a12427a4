/**
 * Replica restarts in the benchmark: `--restart-at 10m:i3` empties instance i3's prefix cache at
 * 10 minutes of simulated time (the fleet's `restartInstance`: same id, requests in flight
 * finish), so a router that learned where prefixes live is suddenly wrong about one instance;
 * `--restart-at 10m:i3:1m` also keeps it down for a minute first, refusing requests (the routers
 * retry them on their next choice, which then holds those prefixes too).
 *
 * Each policy run with restarts is compared with the same policy's run of the same request
 * sequence without them (the reference): before the restart the two are identical, after it the
 * gap between their token hit rates is what the restart costs. Hit rates are token-weighted over
 * sliding {@link WINDOW_MS} windows of {@link FINE_BUCKET_MS} buckets, by arrival time.
 *
 * - dip: the largest gap (reference − run) in the {@link HORIZON_MS} after the restart;
 * - recovery: from the restart to the end of the first window, at or after the deepest one, whose
 *   gap is at most {@link RECOVERY_TOLERANCE} (2 points); 0 when the gap never exceeded it;
 *   `null` when it did not recover before the next restart or the end of the run.
 */
import { RECOVERY_TOLERANCE } from "./metrics.js";

/** A restart: `--restart-at 10m:i3`, or `10m:i3:1m` with a minute of downtime. */
export interface RestartEvent {
  /** Simulated time, ms from the start of the run. */
  readonly atMs: number;
  /** The instance restarted (`i0`, `i1`, …). */
  readonly instance: string;
  /**
   * How long it refuses requests before serving again (cold), ms; the routers retry those on
   * their next choice, as the adapters do after a refused connection. @default 0
   */
  readonly downMs?: number;
}

/** Width of a bucket of the restart analysis, ms. */
export const FINE_BUCKET_MS = 5_000;
/** Width of the sliding window hit rates are compared over, ms. */
export const WINDOW_MS = 30_000;
/** How long after a restart its dip is looked for, ms. */
export const HORIZON_MS = 10 * 60_000;
/** The span after the instance serves again over which the run's hit rate is reported, ms. */
export const AFTER_UP_MS = 5 * 60_000;
/** Gaps reported at these delays after the restart (end of the window), ms. */
export const GAP_DELAYS_MS: readonly number[] = [30_000, 60_000, 120_000, 300_000];

/** What a restart cost one policy; rates and gaps are fractions of 1. */
export interface RestartResult extends RestartEvent {
  /** Token hit rate of the reference run (no restart) over the horizon after the restart. */
  readonly referenceHitRate: number | null;
  /** Token hit rate of the run with the restart over the same requests. */
  readonly hitRate: number | null;
  /** Token hit rate of the run over the {@link AFTER_UP_MS} from the moment the instance serves again (`null` past the run). */
  readonly hitRateAfterUp: number | null;
  /** Largest gap (reference − run) of a window after the restart. */
  readonly dip: number | null;
  /** Time from the restart until the gap is back within 2 points, ms (see the file header). */
  readonly recoveryMs: number | null;
  /** The same from the moment the instance serves again (the restart's `downMs` later), ms. */
  readonly recoveryAfterUpMs: number | null;
  /** Gap of the window ending at each of {@link GAP_DELAYS_MS} after the restart (`null` past the run). */
  readonly gaps: readonly { afterMs: number; gap: number | null }[];
}

/** Prompt and cached tokens by arrival, in {@link FINE_BUCKET_MS} buckets. */
export class FineSeries {
  readonly prompt: number[] = [];
  readonly cached: number[] = [];

  record(arrivalMs: number, promptTokens: number, cachedTokens: number): void {
    const b = Math.max(0, Math.floor(arrivalMs / FINE_BUCKET_MS));
    this.prompt[b] = (this.prompt[b] ?? 0) + promptTokens;
    this.cached[b] = (this.cached[b] ?? 0) + cachedTokens;
  }

  /** Token hit rate of the arrivals in [fromMs, toMs), `null` without any. */
  rate(fromMs: number, toMs: number): number | null {
    let prompt = 0;
    let cached = 0;
    for (let b = Math.floor(fromMs / FINE_BUCKET_MS); b * FINE_BUCKET_MS < toMs && b < this.prompt.length; b++) {
      prompt += this.prompt[b] ?? 0;
      cached += this.cached[b] ?? 0;
    }
    return prompt === 0 ? null : cached / prompt;
  }
}

/** The cost of `event` in `run` against `reference` (see the file header); `endMs`: the next restart or the end of the run. */
export function analyzeRestart(event: RestartEvent, run: FineSeries, reference: FineSeries, endMs: number): RestartResult {
  const stop = Math.min(endMs, event.atMs + HORIZON_MS);
  const gapOf = (from: number): number | null => {
    const ref = reference.rate(from, from + WINDOW_MS);
    const got = run.rate(from, from + WINDOW_MS);
    return ref === null || got === null ? null : ref - got;
  };
  const windows: { endMs: number; gap: number }[] = [];
  for (let from = event.atMs; from + WINDOW_MS <= stop; from += FINE_BUCKET_MS) {
    const gap = gapOf(from);
    if (gap !== null) windows.push({ endMs: from + WINDOW_MS, gap });
  }
  let deepest = -1;
  for (let i = 0; i < windows.length; i++) if (deepest === -1 || windows[i]!.gap > windows[deepest]!.gap) deepest = i;
  const dip = deepest === -1 ? null : Math.max(0, windows[deepest]!.gap);
  let recoveryMs: number | null = null;
  if (dip !== null && dip <= RECOVERY_TOLERANCE) recoveryMs = 0;
  else if (dip !== null) {
    const back = windows.slice(deepest).find((w) => w.gap <= RECOVERY_TOLERANCE);
    if (back !== undefined) recoveryMs = back.endMs - event.atMs;
  }
  const gaps = GAP_DELAYS_MS.map((afterMs) => {
    const end = event.atMs + afterMs;
    return { afterMs, gap: end > endMs ? null : gapOf(end - WINDOW_MS) };
  });
  const recoveryAfterUpMs = recoveryMs === null ? null : Math.max(0, recoveryMs - (event.downMs ?? 0));
  const upMs = event.atMs + (event.downMs ?? 0);
  const hitRateAfterUp = upMs + AFTER_UP_MS > endMs ? null : run.rate(upMs, upMs + AFTER_UP_MS);
  return { ...event, referenceHitRate: reference.rate(event.atMs, stop), hitRate: run.rate(event.atMs, stop), hitRateAfterUp, dip, recoveryMs, recoveryAfterUpMs, gaps };
}
