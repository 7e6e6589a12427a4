/**
 * Spillover and fallback under a shared load view, after Mitzenmacher, "How useful is old
 * information?" (IEEE TPDS 2000): with load figures that are one refresh old, every router sees
 * the same target as the least busy and sends it everything until the next refresh (herding);
 * choosing the less loaded of two targets drawn at random keeps most of the benefit of fresh
 * figures.
 *
 * The two are drawn among {@link SPILL_CHOICES} targets of the key's own ranking — for a spill,
 * the first that are open after the first choice; for a fallback (nothing open), the first that
 * are neither excluded nor ejected — so a prefix still lands on few targets (its cache is
 * replicated to at most that many) and every router draws from the same short list. Ties go to
 * the better-ranked. Cost: one pass over the ranking until SPILL_CHOICES targets are found, two
 * random draws.
 *
 * Measured while designing it (hot-prefix, 8 router processes, 5 simulated minutes, where nearly
 * every pick is a fallback): the least loaded of all gave `prefix-aware` a P90 TTFT of 155 ms,
 * two drawn among the whole fleet 139.5 ms, among the key's first three 127.5 ms (one process:
 * 134.4 ms). `longest-prefix` does not draw: its fallback takes the least queued prefill, which
 * moves with each of the router's own picks at once, so routers do not herd on it (hot-prefix, 8
 * processes, 20 minutes: P90 112.6 ms with the redis view against 113.2 ms drawing two; 119.0
 * against 119.8 ms with the engine view).
 */
import type { PickContext, StrategyPick } from "../strategy.js";

/** Targets of the ranking among which two are drawn. */
export const SPILL_CHOICES = 3;

type Ctx = PickContext<{ id: string }>;

/**
 * Of positions `[a, b, c]` of `order` (−1: none), two drawn at random (all when fewer), the
 * one with less `load`; ties to the lower position. −1 when `a` is −1.
 */
function drawTwo(ctx: Ctx, order: ArrayLike<number>, positions: readonly [number, number, number], load: (i: number, position: number) => number): number {
  const [a, b, c] = positions;
  if (b === -1) return a;
  let p = a;
  let q = b;
  if (c !== -1) {
    // Two of three, uniformly: leave one out.
    const out = Math.floor(ctx.random() * 3);
    if (out === 0) p = c;
    else if (out === 1) q = c;
    if (p > q) [p, q] = [q, p];
  }
  return load(order[q] as number, q) < load(order[p] as number, p) ? q : p;
}

/** Load per weight by in-flight requests: the default load measure. */
function inflightLoad(ctx: Ctx): (i: number) => number {
  return (i) => ctx.inflight(i) / (ctx.weights[i] as number);
}

/**
 * The spill position among `order` (candidate indices, best first) from position `from` on, or
 * −1 when none is open: two drawn among the first {@link SPILL_CHOICES} open ones.
 */
export function twoChoiceSpill(ctx: Ctx, order: ArrayLike<number>, from: number, isOpen: (i: number) => boolean = (i) => ctx.isOpen(i)): number {
  let a = -1;
  let b = -1;
  let c = -1;
  for (let r = from; r < order.length && c === -1; r++) {
    if (!isOpen(order[r] as number)) continue;
    if (a === -1) a = r;
    else if (b === -1) b = r;
    else c = r;
  }
  return drawTwo(ctx, order, [a, b, c], inflightLoad(ctx));
}

/**
 * The fallback when nothing of `order` is open: two drawn among the first {@link SPILL_CHOICES}
 * positions that are neither excluded nor ejected — below the threshold if some are — the less
 * loaded (in flight per weight) as a `fallback` pick; `undefined` when there
 * are none (the caller's own last resort applies).
 */
export function twoChoiceFallback(ctx: Ctx, order: ArrayLike<number>): StrategyPick | undefined {
  // First among targets below the threshold (closed only by this router's share of their
  // headroom, load-view/view.ts), then among all.
  for (let pass = 0; pass < 2; pass++) {
    let a = -1;
    let b = -1;
    let c = -1;
    for (let r = 0; r < order.length && c === -1; r++) {
      const i = order[r] as number;
      if (ctx.isExcluded(i) || ctx.isEjected(i) || (pass === 0 && ctx.inflight(i) >= ctx.concurrencyThreshold)) continue;
      if (a === -1) a = r;
      else if (b === -1) b = r;
      else c = r;
    }
    if (a === -1) continue;
    const r = drawTwo(ctx, order, [a, b, c], inflightLoad(ctx));
    return { index: order[r] as number, kind: "fallback", rank: r };
  }
  return undefined;
}
