/**
 * What a router's strategies are built with ({@link RegistryEnv}): its settings, every registered
 * strategy's validated settings, the routing key (`routing/prefix-key.ts`), the closed loop's
 * settings and where a strategy reports a target it forgot.
 */
import type { ClosedLoopEnv } from "../closed-loop/closed-loop.js";
import type { Config } from "../options.js";
import type { PrefixKeyReader } from "../routing/prefix-key.js";
import type { XXHashAPI } from "../routing/routing-key.js";
import type { RegistryEnv } from "../strategies/definition.js";
import { createStrategy } from "../strategies/index.js";
import type { StrategySpec } from "../strategies/strategy.js";
import type { TargetSpec } from "../types.js";

/** What the router adds to its settings for its strategies. */
export interface EnvParts {
  readonly xxhash: XXHashAPI;
  readonly keys: PrefixKeyReader;
  readonly forgot: ClosedLoopEnv["forgot"];
}

/** The environment a router's strategies are built in. */
export function registryEnv<T extends TargetSpec>(config: Config<T>, parts: EnvParts): RegistryEnv {
  const env: RegistryEnv = {
    mode: config.mode,
    prefixLength: config.prefixLength,
    concurrencyThreshold: config.concurrencyThreshold,
    seed: config.seed,
    clock: config.clock,
    random: config.random,
    xxhash: parts.xxhash,
    settings: config.strategies,
    logger: config.logger,
    closedLoop: config.closedLoop,
    routingPrefix: (request) => parts.keys.read(request),
    routingKey: (request) => env.routingPrefix(request)?.key,
    forgot: parts.forgot,
    create: <U extends TargetSpec>(spec: StrategySpec<U>) => createStrategy(spec, env),
  };
  return env;
}
