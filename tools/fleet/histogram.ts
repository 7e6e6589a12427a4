/**
 * A cumulative Prometheus histogram with fixed bucket bounds (the shape vLLM exports).
 * Observing is a linear scan over ~20 bounds; no allocation.
 */

/** vLLM's bucket bounds for `vllm:time_to_first_token_seconds`. */
export const TTFT_BUCKETS_SECONDS: readonly number[] = Object.freeze([
  0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0,
  640.0, 2560.0,
]);

/** A histogram of observations with `le` (less-or-equal) buckets plus `+Inf`. */
export class Histogram {
  readonly bounds: readonly number[];
  /** Non-cumulative count per bound; the last slot is `+Inf`. */
  private readonly counts: Float64Array;
  private total = 0;
  private n = 0;

  constructor(bounds: readonly number[]) {
    this.bounds = bounds;
    this.counts = new Float64Array(bounds.length + 1);
  }

  /** Records one observation. */
  observe(value: number): void {
    let i = 0;
    while (i < this.bounds.length && value > this.bounds[i]!) i++;
    this.counts[i]! += 1;
    this.total += value;
    this.n += 1;
  }

  /** Number of observations. */
  get count(): number {
    return this.n;
  }

  /** Sum of observations. */
  get sum(): number {
    return this.total;
  }

  /** Cumulative counts: `[le, count]` per bound, then `[Infinity, count]`. */
  cumulative(): [number, number][] {
    const out: [number, number][] = [];
    let acc = 0;
    for (let i = 0; i <= this.bounds.length; i++) {
      acc += this.counts[i]!;
      out.push([i < this.bounds.length ? this.bounds[i]! : Infinity, acc]);
    }
    return out;
  }
}
