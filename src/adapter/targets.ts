/**
 * Checks of the fields an adapter adds to its targets (a base URL, an endpoint name, …). The
 * list itself and the fields every target has (`id`, `weight`, `models`) are the router's to
 * check, with the router's messages.
 */
import { validateTargets } from "../options.js";
import type { RouterInternals } from "../options.js";
import type { TargetSpec } from "../types.js";
import type { Router, RouterStats } from "../router/types.js";

/** What an adapter adds to its router: figures of its own in `stats()`, resources of its own to release in `close()`. */
export interface AdapterParts {
  stats?(stats: RouterStats): RouterStats;
  close?(): Promise<void>;
}

/**
 * Runs `check` on each target of `targets` that is an object; `check` throws an error naming
 * `targets[i].<field>`. A list that is no array fails with the router's own message; an entry
 * that is no object (a hole in a sparse array included) is left to the router to name.
 */
export function checkTargetFields<T extends TargetSpec>(targets: unknown, check: (target: Partial<T>, index: number) => void): void {
  if (!Array.isArray(targets)) validateTargets(targets);
  const list = targets as unknown[];
  for (let index = 0; index < list.length; index++) {
    const target = list[index];
    if (target !== null && typeof target === "object") check(target as Partial<T>, index);
  }
}

/**
 * The router an adapter exposes: `core`'s methods on a frozen object, with what `core` carries
 * under symbols (its telemetry). `core` checks the adapter's target fields itself (it was
 * created with them under {@link RouterInternals.targetCheck}), for `setTargets` and membership alike. `parts`
 * adds the adapter's own figures to `stats()` and closes its own resources after the router's.
 */
export function adapterRouter<T extends TargetSpec>(core: Router<T>, parts: AdapterParts = {}): Router<T> {
  const { stats: addStats, close: closeOwn } = parts;
  const checked = {
    strategy: core.strategy,
    mode: core.mode,
    prefixLength: core.prefixLength,
    concurrencyThreshold: core.concurrencyThreshold,
    route: core.route.bind(core),
    rank: core.rank.bind(core),
    prepare: core.prepare.bind(core),
    settle: core.settle.bind(core),
    targets: core.targets.bind(core),
    stats: addStats === undefined ? core.stats.bind(core) : () => addStats(core.stats()),
    close:
      closeOwn === undefined
        ? core.close.bind(core)
        : async () => {
            await Promise.all([core.close(), closeOwn()]);
          },
    setTargets: core.setTargets.bind(core),
  };
  // What the router carries under symbols (its telemetry) goes along.
  for (const symbol of Object.getOwnPropertySymbols(core)) {
    (checked as Record<symbol, unknown>)[symbol] = (core as unknown as Record<symbol, unknown>)[symbol];
  }
  return Object.freeze(checked);
}
