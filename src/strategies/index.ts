/**
 * The strategy registry: strategies by name, each declared by its own folder
 * ({@link StrategyDefinition}: name, settings, stats, reason fields), and the one place that turns
 * what `RouterOptions.strategy` holds (a name, an object or a factory) into a strategy for a router.
 * The router, the options and the defaults read the declarations from here and name no strategy.
 *
 * Adding a strategy: a folder with its definition, and one line in {@link BUILT_IN} (or a call to
 * {@link registerStrategy}).
 */
import { checkOneOf, describe } from "../internal/validate.js";
import type { TargetSpec } from "../types.js";
import type { Strategy } from "./built-in.js";
import { DEFAULT_BOUNDED_LOAD } from "./bounded-load.js";
import type { RegistryEnv, StrategyDefinition, StrategySettings } from "./definition.js";
import { LEAST_OUTSTANDING } from "./least-outstanding/index.js";
import { LONGEST_PREFIX, type LongestPrefixRouterOptions } from "./longest-prefix/index.js";
import { PREFIX_AWARE, type PrefixAwareRouterOptions } from "./prefix-aware/index.js";
import { PRECISE_PREFIX, type PrecisePrefixRouterOptions } from "./precise-prefix/index.js";
import { PrefixAware } from "./prefix-aware/strategy.js";
import { RANDOM } from "./random/index.js";
import type { RoutingStrategy, StrategyRanking, StrategySpec, StrategyStats } from "./strategy.js";

/** The built-in strategies, one line each, in the order the benchmark lists them. */
const BUILT_IN = [RANDOM, LEAST_OUTSTANDING, PREFIX_AWARE, LONGEST_PREFIX, PRECISE_PREFIX] as const;

/** Each built-in's defaults under its option key, as `DEFAULTS` types them. */
type DefaultsOf<D> = D extends StrategyDefinition<infer C, infer K> ? (string extends K ? {} : { readonly [P in K]: C }) : {};
type Intersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;
export type BuiltInDefaults = Intersection<DefaultsOf<(typeof BUILT_IN)[number]>>;

/** The built-in strategies' settings, each under its `RouterOptions` key (`RouterOptions` extends it). */
export interface BuiltInStrategyOptions extends PrefixAwareRouterOptions, LongestPrefixRouterOptions, PrecisePrefixRouterOptions {}

/** @internal A router's strategies by name: the built-ins, then what {@link registerStrategy} added. */
const registry = new Map<string, StrategyDefinition<unknown>>();
for (const definition of BUILT_IN) registry.set(definition.name, definition as StrategyDefinition<unknown>);

/**
 * @internal Offers a strategy by name to every router created afterwards: its settings are
 * validated, defaulted and passed to it, its stats merged into `router.stats()` and `mergeStats`,
 * its reason fields into `Decision.reason`, as a built-in's. Throws for a name already taken.
 */
export function registerStrategy<C>(definition: StrategyDefinition<C>): void {
  if (typeof definition?.name !== "string" || definition.name.length === 0) {
    throw new TypeError(`Expected the strategy definition's \`name\` to be a non-empty string, got ${describe(definition?.name)}`);
  }
  if (registry.has(definition.name)) throw new RangeError(`Expected a new strategy name, got ${JSON.stringify(definition.name)}, already registered`);
  registry.set(definition.name, definition as StrategyDefinition<unknown>);
}

/** The built-in strategies, in the order the benchmark lists them. */
export const STRATEGIES: readonly Strategy[] = Object.freeze(BUILT_IN.map((d) => d.name as Strategy));

/** @default "prefix-aware" */
export const DEFAULT_STRATEGY: Strategy = "prefix-aware";

/** The strategies' defaults by option key, for `DEFAULTS`: the bounded-load decorator's, then each built-in's settings. */
export function strategyDefaults(): { readonly boundedLoad: typeof DEFAULT_BOUNDED_LOAD } & BuiltInDefaults {
  const out: Record<string, unknown> = { boundedLoad: DEFAULT_BOUNDED_LOAD };
  for (const d of withOptions()) out[d.options.key] = d.options.defaults;
  return out as ReturnType<typeof strategyDefaults>;
}

/** Registered definitions that have settings, by option key in alphabetical order (the order they are validated in). */
function withOptions(): Required<Pick<StrategyDefinition<unknown>, "name" | "options" | "create">>[] {
  const list = [...registry.values()].filter((d) => d.options !== undefined) as Required<Pick<StrategyDefinition<unknown>, "name" | "options" | "create">>[];
  return list.sort((a, b) => (a.options.key < b.options.key ? -1 : a.options.key > b.options.key ? 1 : 0));
}

/** @internal Validates every registered strategy's settings in `options` (an absent key: its defaults). */
export function resolveStrategySettings(options: object): StrategySettings {
  const settings = new Map<string, unknown>();
  for (const d of withOptions()) settings.set(d.name, d.options.resolve((options as Record<string, unknown>)[d.options.key]));
  return settings;
}

/** @internal The settings keys set in `options` that a strategy named `name` does not read. */
export function ignoredSettings(options: object, name: string): string[] {
  const reads = new Set([name, ...(registry.get(name)?.uses ?? [])]);
  return withOptions()
    .filter((d) => (options as Record<string, unknown>)[d.options.key] !== undefined && !reads.has(d.name))
    .map((d) => d.options.key);
}

/** The built-ins' option keys (`RouterOptions` keys their settings stand under), as the option lists type them. */
export const BUILT_IN_OPTION_KEYS = BUILT_IN.flatMap((d) => ("options" in d && d.options !== undefined ? [d.options.key] : [])) as unknown as readonly (keyof BuiltInStrategyOptions & string)[];

/** @internal The option keys of every registered strategy (built-ins and {@link registerStrategy}'s): known `RouterOptions` keys. */
export function strategyOptionKeys(): string[] {
  return withOptions().map((d) => d.options.key);
}

/** @internal How much routing input a raw-prefix stand-in covers: as much as any strategy reads, `prefixLength` at least. */
export function rawInputLength(prefixLength: number, settings: StrategySettings): number {
  let units = prefixLength;
  for (const d of withOptions()) if (d.options.inputLength !== undefined) units = Math.max(units, d.options.inputLength(settings.get(d.name)));
  return units;
}

/** @internal The figures of a strategy's `stats()` that registered strategies declare, for `router.stats()`. */
export function strategyStats(stats: StrategyStats | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (stats === undefined) return out;
  for (const d of registry.values()) for (const key of Object.keys(d.stats ?? {})) {
      const figure = (stats as Readonly<Record<string, unknown>>)[key];
      if (figure !== undefined) out[key] = figure;
    }
  return out;
}

/** @internal The strategy figures of several processes' stats as one's: each figure that declares a merge, merged. */
export function mergeStrategyStats(parts: readonly Readonly<Record<string, unknown>>[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const d of registry.values()) {
    for (const [key, figure] of Object.entries(d.stats ?? {})) {
      const present = parts.map((p) => p[key]).filter((v) => v !== undefined);
      if (figure.merge !== undefined && present.length > 0) out[key] = figure.merge(present);
    }
  }
  return out;
}

/** @internal The reason fields registered strategies declare, in order. */
export function reasonFields(): string[] {
  return [...registry.values()].flatMap((d) => d.reasonFields ?? []);
}

/** @internal Validates `RouterOptions.strategy` (or the option `name`): a registered name, a strategy object or a factory. */
export function checkStrategySpec<T extends TargetSpec>(spec: unknown, name = "strategy"): StrategySpec<T> {
  if (spec === undefined) return DEFAULT_STRATEGY;
  if (typeof spec === "function") return spec as StrategySpec<T>;
  if (spec !== null && typeof spec === "object") return checkStrategyObject(name, spec) as RoutingStrategy<T>;
  return checkOneOf(name, spec, [...registry.keys()]) as Strategy;
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
export function createStrategy<T extends TargetSpec>(spec: StrategySpec<T>, env: RegistryEnv): RoutingStrategy<T> {
  if (typeof spec === "string") {
    const definition = registry.get(spec) as StrategyDefinition<unknown>;
    return definition.create(env, env.settings.get(definition.name)) as unknown as RoutingStrategy<T>;
  }
  if (typeof spec === "function") {
    const made: unknown = spec(env);
    if (made === null || typeof made !== "object") throw new TypeError(`Expected the \`strategy\` factory to return a strategy object, got ${describe(made)}`);
    return checkStrategyObject("strategy (from the factory)", made) as unknown as RoutingStrategy<T>;
  }
  return spec;
}

/** @internal The ranking `router.rank()` reports for a strategy that defines none: rendezvous over the routing key. */
export function defaultRanking(env: RegistryEnv): { read: PrefixAware["read"]; rank(ctx: Parameters<PrefixAware["rank"]>[0], input: ReturnType<PrefixAware["read"]>): StrategyRanking } {
  return new PrefixAware(env);
}
