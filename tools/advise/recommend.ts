/**
 * From the strategies' rows on a log to one recommendation with router options to paste.
 *
 * Rule: the lowest mean TTFT — it weighs the median and the tail together — among the rows of
 * prefix-router's own strategies; among rows within {@link TIE_TOLERANCE} of it, the one with the
 * highest token hit rate (it keeps more headroom when the load grows); then the first in the
 * order the rows were run. When that row does not beat the best load-based one (`random`,
 * `least-outstanding`) by more than {@link WORTH_IT}, the log gains nothing from prefix routing:
 * the load-based row is recommended, and the recommendation says why, from the rows' figures —
 * the log's reuse ceiling is under {@link LITTLE_REUSE} (its requests share little); the
 * load-based row already reaches {@link NEAR_CEILING} of the ceiling (every replica's cache holds
 * the working set, so any strategy hits); or prefix routing hits more but that does not show in
 * mean TTFT.
 */
import type { BenchRow } from "../bench/simulate.js";

/** Rows within this fraction of the lowest mean TTFT count as ties. */
export const TIE_TOLERANCE = 0.01;
/** Least mean-TTFT gain over load-based routing that makes prefix routing worth it. */
export const WORTH_IT = 0.02;
/** A reuse ceiling (token hit rate of one infinite cache) below this is a log whose requests share little. */
export const LITTLE_REUSE = 0.1;
/** A load-based row whose hit rate reaches this share of the ceiling hits as well as any placement could. */
export const NEAR_CEILING = 0.9;

/** The recommended configuration. */
export interface Recommendation {
  /** The row it is based on. */
  readonly row: BenchRow;
  /** Router options to paste into `createRouter`, `routeOpenAI` or `routeSageMaker`. */
  readonly options: Readonly<Record<string, unknown>>;
  /** Mean TTFT change against `random` on the same log (negative is better), when it ran. */
  readonly vsRandom: number | undefined;
  /** Why, in one or two sentences. */
  readonly why: string;
}

const LOAD_BASED = new Set(["random", "least-outstanding"]);

/** The router options a row stands for. */
export function optionsOf(row: BenchRow): Record<string, unknown> {
  const strategy = row.strategy.replace(/:.*$/, "");
  const options: Record<string, unknown> = { strategy };
  if (row.prefixLength !== null) options["prefixLength"] = row.prefixLength;
  if (row.concurrencyThreshold !== null) options["concurrencyThreshold"] = row.concurrencyThreshold;
  if (row.strategy === "longest-prefix:exclusive") options["longestPrefix"] = { exclusive: true };
  return options;
}

/** The recommendation for `rows` (one scenario); `undefined` when no row is one of prefix-router's strategies. */
export function recommend(rows: readonly BenchRow[]): Recommendation | undefined {
  const ours = rows.filter((r) => !r.strategy.startsWith("peer:"));
  if (ours.length === 0) return undefined;
  const bestMean = Math.min(...ours.map((r) => r.ttftMeanMs));
  let pick: BenchRow | undefined;
  for (const r of ours) {
    if (r.ttftMeanMs > bestMean * (1 + TIE_TOLERANCE)) continue;
    if (pick === undefined || r.tokenHitRate > pick.tokenHitRate) pick = r;
  }
  const loadBased = ours.filter((r) => LOAD_BASED.has(r.strategy));
  const bestLoad = loadBased.length === 0 ? undefined : loadBased.reduce((a, b) => (b.ttftMeanMs < a.ttftMeanMs ? b : a));
  const worthIt = bestLoad === undefined || bestMean < bestLoad.ttftMeanMs * (1 - WORTH_IT);
  const chosen = worthIt || bestLoad === undefined ? pick! : bestLoad;
  const random = ours.find((r) => r.strategy === "random");
  const pct = (v: number) => `${(100 * v).toFixed(1)}%`;
  const vsRandom = random === undefined ? undefined : chosen.ttftMeanMs / random.ttftMeanMs - 1;
  let why: string;
  if (!worthIt) {
    why = `No prefix-reading strategy beats load-based routing by ${pct(WORTH_IT)} of mean TTFT on this log: ${whyNotWorthIt(chosen, ours)}`;
  } else {
    why =
      `Lowest mean TTFT on this log (${chosen.ttftMeanMs.toFixed(1)} ms${vsRandom === undefined ? "" : `, ${vsRandom >= 0 ? "+" : ""}${pct(vsRandom)} vs random`}), ` +
      `hit rate ${pct(chosen.tokenHitRate)} of ${pct(chosen.idealHitRate)} possible.`;
    if (chosen.strategy === "longest-prefix:exclusive") why += " `exclusive` suits one router process that sees all of the fleet's traffic.";
  }
  return { row: chosen, options: optionsOf(chosen), vsRandom, why };
}

/**
 * Why prefix routing gains nothing on these rows, from their figures: `load` is the recommended
 * load-based row, `rows` every row of prefix-router's strategies on the log.
 */
function whyNotWorthIt(load: BenchRow, rows: readonly BenchRow[]): string {
  const pct = (v: number) => `${(100 * v).toFixed(1)}%`;
  const ceiling = load.idealHitRate;
  if (ceiling < LITTLE_REUSE) {
    return `its requests share little — at most ${pct(ceiling)} of prompt tokens could come from a prefix cache (the reuse ceiling).`;
  }
  if (load.tokenHitRate >= NEAR_CEILING * ceiling) {
    return (
      `every replica's cache holds the log's whole working set, so any strategy hits — ${load.strategy} already serves ` +
      `${pct(load.tokenHitRate)} of prompt tokens from cache, against a ceiling of ${pct(ceiling)}. Prefix routing pays off when ` +
      `the distinct prefixes outgrow one replica's cache (here ${load.capacityTokens.toLocaleString("en-US")} tokens).`
    );
  }
  const prefix = rows
    .filter((r) => !LOAD_BASED.has(r.strategy))
    .reduce<BenchRow | undefined>((best, r) => (best === undefined || r.ttftMeanMs < best.ttftMeanMs ? r : best), undefined);
  if (prefix === undefined) return `${load.strategy} serves ${pct(load.tokenHitRate)} of prompt tokens from cache, against a ceiling of ${pct(ceiling)}.`;
  const label = prefix.prefixLength === null ? prefix.strategy : `${prefix.strategy} (${prefix.prefixLength})`;
  const change = prefix.ttftMeanMs / load.ttftMeanMs - 1;
  return (
    `${label} serves ${pct(prefix.tokenHitRate)} of prompt tokens from cache against ${load.strategy}'s ${pct(load.tokenHitRate)} ` +
    `(ceiling ${pct(ceiling)}), but changes mean TTFT by ${change >= 0 ? "+" : ""}${pct(change)}.`
  );
}
