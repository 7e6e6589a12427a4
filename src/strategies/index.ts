/**
 * The strategy registry: built-in strategies by name, and the one place that turns what
 * `RouterOptions.strategy` holds (a name, an object or a factory) into a strategy for a router.
 * The router knows the {@link RoutingStrategy} interface, never the list.
 */
import { checkOneOf, describe } from "../internal/validate.js";
import type { Strategy, TargetSpec } from "../types.js";
import { LongestPrefix } from "./longest-prefix/strategy.js";
import type { XXHashAPI } from "./longest-prefix/chain.js";
import type { LongestPrefixConfig } from "./longest-prefix/options.js";
import { leastOutstanding } from "./least-outstanding.js";
import { PrefixAware, type PrefixAwareEnv } from "./prefix-aware.js";
import { random } from "./random.js";
import { PrecisePrefix } from "./precise-prefix/strategy.js"; // precise-prefix registration (to move onto the strategy registry at merge)
import type { PrecisePrefixConfig } from "./precise-prefix/options.js"; // precise-prefix registration (to move onto the strategy registry at merge)
import type { Logger } from "../logger.js";
import type { RoutingStrategy, StrategyEnv, StrategySpec } from "./strategy.js";

/** @internal What built-in strategies need beyond {@link StrategyEnv}. */
export interface BuiltInEnv extends StrategyEnv, PrefixAwareEnv {
  readonly xxhash: XXHashAPI;
  readonly longestPrefix: LongestPrefixConfig;
  readonly precisePrefix: PrecisePrefixConfig; // precise-prefix registration (to move onto the strategy registry at merge)
  readonly logger?: Logger; // precise-prefix registration (to move onto the strategy registry at merge)
}

const BUILT_IN: Readonly<Record<Strategy, (env: BuiltInEnv) => RoutingStrategy>> = {
  random: () => random(),
  "least-outstanding": () => leastOutstanding(),
  "prefix-aware": (env) => new PrefixAware(env) as RoutingStrategy,
  "longest-prefix": (env) => new LongestPrefix(env.xxhash, env.seed, env.mode, env.longestPrefix, env.clock, env) as RoutingStrategy,
  "precise-prefix": (env) => new PrecisePrefix(env) as RoutingStrategy, // precise-prefix registration (to move onto the strategy registry at merge)
};

/** The built-in strategies, in the order the benchmark lists them. */
export const STRATEGIES: readonly Strategy[] = Object.freeze(["random", "least-outstanding", "prefix-aware", "longest-prefix"] as Strategy[]);

/** @default "prefix-aware" */
export const DEFAULT_STRATEGY: Strategy = "prefix-aware";

/** @internal Validates `RouterOptions.strategy` (or the option `name`): a built-in name, a strategy object or a factory. */
export function checkStrategySpec<T extends TargetSpec>(spec: unknown, name = "strategy"): StrategySpec<T> {
  if (spec === undefined) return DEFAULT_STRATEGY;
  if (typeof spec === "function") return spec as StrategySpec<T>;
  if (spec !== null && typeof spec === "object") return checkStrategyObject(name, spec) as RoutingStrategy<T>;
  return checkOneOf(name, spec, [...STRATEGIES, "precise-prefix"] as Strategy[]); // precise-prefix registration (to move onto the strategy registry at merge)
}

const OPTIONAL_METHODS = ["read", "rank", "commit", "setTargets", "stats"] as const;

function checkStrategyObject(name: string, value: object): RoutingStrategy<TargetSpec> {
  const s = value as Partial<RoutingStrategy<TargetSpec>>;
  if (typeof s.name !== "string" || s.name.length === 0) {
    throw new TypeError(`Expected \`${name}.name\` to be a non-empty string, got ${describe(s.name)}`);
  }
  if (typeof s.pick !== "function") throw new TypeError(`Expected \`${name}.pick\` to be a function, got ${describe(s.pick)}`);
  for (const method of OPTIONAL_METHODS) {
    const m = s[method];
    if (m !== undefined && typeof m !== "function") throw new TypeError(`Expected \`${name}.${method}\` to be a function, got ${describe(m)}`);
  }
  return s as RoutingStrategy<TargetSpec>;
}

/** @internal The strategy `spec` stands for, built for the router whose settings are `env`. */
export function createStrategy<T extends TargetSpec>(spec: StrategySpec<T>, env: BuiltInEnv): RoutingStrategy<T> {
  if (typeof spec === "string") return BUILT_IN[spec](env) as unknown as RoutingStrategy<T>;
  if (typeof spec === "function") {
    const made: unknown = spec(env);
    if (made === null || typeof made !== "object") throw new TypeError(`Expected the \`strategy\` factory to return a strategy object, got ${describe(made)}`);
    return checkStrategyObject("strategy (from the factory)", made) as unknown as RoutingStrategy<T>;
  }
  return spec;
}
