/**
 * What a strategy declares to be offered by name — the grpc-js `registerLoadBalancerType(name,
 * class, config)` idea, Envoy's policy config beside its algorithm: its name, its settings (the
 * `RouterOptions` key they stand under, their defaults, their validation), the figures it reports
 * under `router.stats()` and the fields its picks add to a decision's reason. The registry
 * (`index.ts`) keeps the definitions; the router, the options and the defaults read them from
 * there and name no strategy.
 */
import type { ClosedLoopEnv } from "../closed-loop/closed-loop.js";
import type { Logger } from "../logger.js";
import type { PrefixKey } from "../routing/prefix-key.js";
import type { XXHashAPI } from "../routing/routing-key.js";
import type { RoutingStrategy, StrategyEnv, StrategyRequest } from "./strategy.js";

/** @internal What a registered strategy is built with: the router's settings and what the built-ins share. */
export interface RegistryEnv extends StrategyEnv, ClosedLoopEnv {
  /** The xxHash functions the routing key uses (loaded once per process). */
  readonly xxhash: XXHashAPI;
  /** Every registered strategy's validated settings, by strategy name. */
  readonly settings: StrategySettings;
  /** Where strategies report what they cannot do (a tokenizer that disagrees with its engine…). */
  readonly logger: Logger;
  /** The request's routing key and the length it covers, or `undefined` without routing input. */
  routingPrefix(request: StrategyRequest): PrefixKey | undefined;
}

/** @internal Validated settings of the registered strategies that have some, by strategy name. */
export type StrategySettings = ReadonlyMap<string, unknown>;

/** A strategy's settings: one `RouterOptions` key. */
export interface StrategyOptionsDefinition<C, K extends string = string> {
  /** The `RouterOptions` key (`prefixAware`, `longestPrefix`). */
  readonly key: K;
  /** The settings when the key is absent; `DEFAULTS[key]` reports them. */
  readonly defaults: C;
  /** Validates the key's value (`undefined`: the defaults); throws naming the option, its range and the value. */
  resolve(value: unknown): C;
  /**
   * How much of the routing input the strategy reads with these settings (characters or bytes),
   * when it may read more than `prefixLength`: a raw-prefix stand-in covers it.
   */
  inputLength?(settings: C): number;
}

/** A figure a strategy reports under `router.stats()`. */
export interface StrategyStatsDefinition {
  /** How `mergeStats` adds the figure up over processes; absent: it is per process and left out. */
  merge?(parts: readonly unknown[]): unknown;
}

/** A strategy as the registry offers it by name. */
export interface StrategyDefinition<C = unknown, K extends string = string> {
  /** The name `RouterOptions.strategy` gives (and `router.strategy` reports). */
  readonly name: string;
  /** Its settings, if it has any. */
  readonly options?: StrategyOptionsDefinition<C, K>;
  /** Other registered strategies whose settings it reads too (their keys are not "ignored" with it). */
  readonly uses?: readonly string[];
  /** The keys its `stats()` reports, merged into `router.stats()`. */
  readonly stats?: Readonly<Record<string, StrategyStatsDefinition>>;
  /** The fields its picks add to a decision's reason (`Decision.reason`), in the order the header encodes them. */
  readonly reasonFields?: readonly string[];
  /** Builds the strategy for one router; `settings` is what `options.resolve` returned (or `undefined` without options). */
  create(env: RegistryEnv, settings: C): RoutingStrategy;
}
