/**
 * `prefix-aware` as the registry knows it: its settings under `RouterOptions.prefixAware` and,
 * with `saturation: "tokens"`, `stats().prefill` (per process: `mergeStats` leaves it out).
 */
import type { StrategyDefinition } from "../definition.js";
import { DEFAULT_PREFIX_AWARE, type PrefixAwareConfig, type PrefixAwareOptions, resolvePrefixAwareOptions } from "./options.js";
import { PrefixAware } from "./strategy.js";

/** `RouterOptions.prefixAware`. */
export interface PrefixAwareRouterOptions {
  /**
   * Settings of the `prefix-aware` strategy (ignored by the others, but validated): when a key's
   * replica counts as saturated — `concurrencyThreshold` requests in flight, or also uncached
   * prefill tokens in flight past its calibrated bound (docs/prefix-aware.md, "Saturation in tokens")
   * — and whether a key already running on its replica spreads ("Running keys").
   * @default { saturation: "requests", ttftPenaltyMs: 250, spreadRunningKeys: "auto" }
   */
  prefixAware?: PrefixAwareOptions;
}

/** `prefix-aware` in the registry. */
export const PREFIX_AWARE: StrategyDefinition<PrefixAwareConfig, "prefixAware"> = {
  name: "prefix-aware",
  options: { key: "prefixAware", defaults: DEFAULT_PREFIX_AWARE, resolve: resolvePrefixAwareOptions },
  stats: { prefill: {} },
  create: (env, config) => new PrefixAware(env, config),
};
