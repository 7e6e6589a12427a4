/**
 * A decision's reason (`Decision.reason`, `Lease.reason`): its kind and the figures that decided
 * it, read from the decision's view before the pick is counted. Built only when someone asks
 * (`onDecision`, `RouteOptions.explain`, a recording span, the adapters' `explainHeader`); a
 * pick that missed its first choice costs one more ranking of the key then, nothing otherwise.
 */
import type { PickContext, StrategyPick } from "../strategies/strategy.js";
import type { DecisionReason, TargetSpec } from "../types.js";

/** Kinds that follow a key's ranking; the others (load-based, affinity) have no first choice to report. */
function ranked(kind: DecisionReason["kind"]): boolean {
  return kind === "preferred" || kind === "spillover" || kind === "fallback";
}

/**
 * The reason of `pick` in `view`; `first(view)` gives the index of the key's first choice, called
 * only when the pick is a ranked one that went elsewhere.
 */
export function explainPick<T extends TargetSpec>(view: PickContext<T>, pick: StrategyPick, first: () => number | undefined): DecisionReason {
  const reason: DecisionReason = { kind: pick.kind, rank: pick.rank, inflight: view.inflight(pick.index), threshold: view.concurrencyThreshold };
  if (ranked(pick.kind) && pick.rank > 0) {
    const f = first();
    if (f !== undefined && f !== pick.index) {
      reason.preferred = (view.targets[f] as T).id;
      reason.preferredInflight = view.inflight(f);
      reason.passedOver = view.isExcluded(f) ? "excluded" : view.isEjected(f) ? "ejected" : view.isOpen(f) ? "load" : "full";
    }
  }
  if (pick.predictedCachedTokens !== undefined) reason.predictedCachedTokens = pick.predictedCachedTokens;
  if (pick.matchedBlocks !== undefined) reason.matchedBlocks = pick.matchedBlocks;
  if (pick.longestMatchBlocks !== undefined) reason.longestMatchBlocks = pick.longestMatchBlocks;
  if (pick.blocks !== undefined) reason.blocks = pick.blocks;
  const matchedBy = (pick as { matchedBy?: DecisionReason["matchedBy"] }).matchedBy; // precise-prefix registration (to move onto the strategy registry at merge)
  if (matchedBy !== undefined) reason.matchedBy = matchedBy;
  return reason;
}

/** The order of {@link DecisionReason}'s fields in the header encoding. */
const FIELDS = [
  "kind",
  "rank",
  "inflight",
  "threshold",
  "preferred",
  "preferredInflight",
  "passedOver",
  "predictedCachedTokens",
  "matchedBlocks",
  "longestMatchBlocks",
  "blocks",
  "matchedBy", // precise-prefix registration (to move onto the strategy registry at merge)
] as const satisfies readonly (keyof DecisionReason)[];

/**
 * The compact header form of a reason: `name=value` pairs joined by `;`, in a fixed order, absent
 * figures left out; the target id percent-encoded, so the value is always header-safe ASCII.
 *
 * @example encodeReason(reason) // "kind=spillover;rank=1;inflight=3;threshold=32;preferred=i2;preferredInflight=32;passedOver=full;predictedCachedTokens=0"
 */
export function encodeReason(reason: DecisionReason): string {
  let out = "";
  for (const name of FIELDS) {
    const value = reason[name];
    if (value === undefined) continue;
    out += `${out === "" ? "" : ";"}${name}=${typeof value === "string" ? encodeURIComponent(value) : value}`;
  }
  return out;
}
