/**
 * Router options: their defaults and their validation. Messages name the option, the allowed
 * range and the value received.
 */
import { checkFunction, checkInteger, checkNumber, checkOneOf, describe, orDefault } from "./internal/validate.js";
import { DEFAULT_KEY_SCOPE, type KeyScope, MAX_PREFIX_LENGTH, MIN_PREFIX_LENGTH, type RoutingMode } from "./routing/routing-input.js";
import { type Logger, checkLogger } from "./logger.js";
import { type TelemetryConfig, checkTelemetry } from "./telemetry/load.js";
import type { TelemetryOptions } from "./telemetry/telemetry.js";
import type { EjectionPolicy } from "./router/target-state.js";
import { type ClosedLoopConfig, type ClosedLoopOptions, resolveClosedLoop } from "./router/closed-loop.js";
import {
  type LongestPrefixConfig,
  type LongestPrefixOptions,
  resolveLongestPrefixOptions,
} from "./strategies/longest-prefix/options.js";
import { DEFAULT_STRATEGY, STRATEGIES, checkStrategySpec } from "./strategies/index.js";
import { type PrecisePrefixConfig, type PrecisePrefixOptions, resolvePrecisePrefixOptions } from "./strategies/precise-prefix/options.js"; // precise-prefix registration (to move onto the strategy registry at merge)
import { type PrefixAwareConfig, type PrefixAwareOptions, resolvePrefixAwareOptions } from "./strategies/helpers/prefix-aware-options.js";
import type { RoutingStrategy, StrategySpec } from "./strategies/strategy.js";
import type { Clock, Decision, TargetSpec } from "./types.js";
import { type BackgroundConfig, resolveBackground } from "./background/background.js";
import type { HealthCheckOptions } from "./background/health-check.js";
import type { LoadViewOption } from "./load-view/options.js";
import type { MembershipOptions } from "./background/membership.js";

export { DEFAULT_STRATEGY, STRATEGIES };

/** Passive outlier ejection. */
export interface EjectionOptions {
  /**
   * Consecutive failures (connection errors or 5xx answers) that eject a target.
   * @default 5
   */
  consecutiveFailures?: number;
  /**
   * First ejection length; each further ejection without a success in between doubles it.
   * @default 30000
   */
  baseEjectionMs?: number;
  /**
   * Upper bound of the ejection length.
   * @default 300000
   */
  maxEjectionMs?: number;
}

/** Options of {@link createRouter}. */
export interface RouterOptions<T extends TargetSpec = TargetSpec> {
  /** The targets. Ids non-empty and unique. May be empty (filled later by `setTargets`): `route` then throws `ERR_NO_TARGETS`. */
  targets: readonly T[];
  /**
   * How targets are chosen: a built-in strategy's name (`"random"`, `"least-outstanding"`,
   * `"prefix-aware"`, `"longest-prefix"`; see docs/strategies.md), or your own
   * {@link RoutingStrategy} object, or a factory `(env) => RoutingStrategy` called once for this
   * router (for example `boundedLoad("prefix-aware")`).
   * @default "prefix-aware"
   */
  strategy?: StrategySpec<T>;
  /**
   * `"text"` reads the prompt text of OpenAI-style bodies (counted in code points); `"bytes"`
   * reads the canonical JSON bytes (or raw bytes) of any body, as SageMaker's Invoke API does.
   * @default "text"
   */
  mode?: RoutingMode;
  /**
   * How much of the routing input the key covers: code points in text mode, bytes in bytes mode.
   * From 1,024 to 65,536. 4,096 characters is about 1,000 tokens: long enough to reach past a
   * typical system prompt into the document or history that follows, short enough to group
   * requests that share that context.
   * @default 4096
   */
  prefixLength?: number;
  /**
   * Text mode: what the key covers. `"auto"`: a leading system part (tools, instructions, system
   * and developer messages) of 1,024 characters or more that ends within `prefixLength` and makes
   * at least half of the prompt is the key, so requests sharing a short system prompt share a key
   * (docs/prefix-aware.md, "Key scope"); otherwise the first `prefixLength` characters.
   * `"prefix"`: always the first `prefixLength` characters, as SageMaker does. Ignored in bytes mode.
   * @default "auto"
   */
  keyScope?: KeyScope;
  /**
   * In-flight requests at which a target counts as full and a request goes to the key's next
   * choice. From 1 to 1,024. 32 is SGLang's gateway balance threshold; lower spreads a hot
   * prefix sooner, higher keeps affinity longer.
   * @default 32
   */
  concurrencyThreshold?: number;
  /**
   * Seed of the routing-key hash and of the targets' rendezvous hashes. Routers that must agree
   * (several processes, several machines) use the same seed. Integer from 0 to 2^64 − 1.
   * @default 0
   */
  seed?: number | bigint;
  /**
   * Random source in [0, 1) for the `random` strategy and least-outstanding tie-breaks.
   * @default Math.random
   */
  random?: () => number;
  /**
   * Time source in milliseconds, for latency metrics and ejection backoff.
   * @default performance
   */
  clock?: Clock;
  /** Called synchronously for every pick, before the pick is counted. An exception propagates to the caller of `route` and nothing is counted. */
  onDecision?: (decision: Decision<T>) => void;
  /**
   * Passive outlier ejection, or `false` to never eject.
   * @default { consecutiveFailures: 5, baseEjectionMs: 30000, maxEjectionMs: 300000 }
   */
  ejection?: EjectionOptions | false;
  /**
   * Settings of the `longest-prefix` strategy (ignored by the others, but validated).
   * @default DEFAULT_LONGEST_PREFIX — { maxInputLength: 65536, blockSize: 256, capacityBlocks: 16384, ttlMs: 0, loadFactor: 1.25, loadWindow: 4096 }
   */
  longestPrefix?: LongestPrefixOptions;
  /** Settings of the `precise-prefix` strategy (docs/precise.md); its approximate fallback and placement rules read `longestPrefix`. */
  precisePrefix?: PrecisePrefixOptions; // precise-prefix registration (to move onto the strategy registry at merge)
  /**
   * Settings of the `prefix-aware` strategy (ignored by the others, but validated): when a key's
   * replica counts as saturated — `concurrencyThreshold` requests in flight, or also uncached
   * prefill tokens in flight past its calibrated bound (docs/prefix-aware.md, "Saturation in tokens")
   * — and whether a key already running on its replica spreads ("Running keys").
   * @default { saturation: "requests", ttftPenaltyMs: 250, spreadRunningKeys: "auto" }
   */
  prefixAware?: PrefixAwareOptions;
  /**
   * Where the router reports ejections, spill storms, stale cache predictions and settings that
   * do nothing: `console`, a pino logger, anything with `debug`/`info`/`warn`/`error`.
   * @default silent
   */
  logger?: Logger;
  /**
   * The closed loop (docs/observability.md): a target whose responses report far fewer cached
   * tokens than its strategy predicted, `misses` times in a row, is forgotten by the strategy
   * (`longest-prefix` clears its index entries, so its traffic re-spreads at once). `false` turns
   * it off (predictions are still made and reported).
   * @default { misses: 3, ratio: 0.5 }
   */
  closedLoop?: ClosedLoopOptions | false;
  /**
   * OpenTelemetry metrics and spans (docs/observability.md), through `@opentelemetry/api`, an
   * optional peer dependency. By default the application's global providers, which record
   * nothing until it starts an SDK; nothing at all when the API is not installed. Pass providers
   * to report elsewhere (then the API must be installed: `ERR_MISSING_PEER` otherwise), or
   * `false` to never load it.
   * @default {} — the global providers, if `@opentelemetry/api` is installed
   */
  telemetry?: TelemetryOptions | false;
  /**
   * Where each target's in-flight count comes from (docs/load-view.md): `"local"`, this router's
   * own leases; `{ source: "engine", … }`, the engines' `/metrics` (running + waiting requests)
   * plus this router's requests since the last poll; `{ source: "redis", url, … }`, every router
   * process's leases counted in Redis. Shared views refresh in the background; a decision never
   * waits on them, and when their source is down the router uses its local view.
   * @default "local"
   */
  loadView?: LoadViewOption<T>;
  /** Targets from a provider refreshed in the background (see {@link dnsTargets}). @default none: `targets` only */
  membership?: MembershipOptions<T>;
  /**
   * Active health checks: poll each target's health URL, take it out while it fails. `true`
   * for the defaults.
   * @default off
   */
  healthCheck?: HealthCheckOptions<T> | boolean;
  /**
   * A strategy that also picks for every request, with state of its own, and is never acted on
   * (a built-in's name, or like `strategy` an object or a factory; pass a factory, not an object
   * the live router also uses, so that its state is its own): `stats().shadow` reports how often it agrees with the live pick and the hit rate it
   * predicts (docs/observability.md#shadow).
   * @default undefined — no shadow
   */
  shadow?: StrategySpec<T>;
  /**
   * What the shadow's state follows: `"own"`, its own picks (as if it had routed: what a switch
   * would yield), or `"live"`, where requests really went.
   * @default "own"
   */
  shadowPlacement?: "own" | "live";
}

export const DEFAULT_MODE: RoutingMode = "text";
export const DEFAULT_PREFIX_LENGTH = 4096;
export const DEFAULT_CONCURRENCY_THRESHOLD = 32;
/** `concurrencyThreshold`'s range (SageMaker's). */
export const CONCURRENCY_THRESHOLD_RANGE = Object.freeze({ min: 1, max: 1024 });
export const DEFAULT_EJECTION: Readonly<Required<EjectionOptions>> = Object.freeze({
  consecutiveFailures: 5,
  baseEjectionMs: 30_000,
  maxEjectionMs: 300_000,
});


export interface Config<T extends TargetSpec> {
  targets: readonly T[];
  strategy: StrategySpec<T>;
  mode: RoutingMode;
  prefixLength: number;
  keyScope: KeyScope;
  concurrencyThreshold: number;
  seed: bigint;
  random: () => number;
  clock: Clock;
  onDecision: ((decision: Decision<T>) => void) | undefined;
  ejection: EjectionPolicy | undefined;
  longestPrefix: LongestPrefixConfig;
  precisePrefix: PrecisePrefixConfig; // precise-prefix registration (to move onto the strategy registry at merge)
  prefixAware: PrefixAwareConfig;
  logger: Logger;
  closedLoop: ClosedLoopConfig;
  telemetry: TelemetryConfig;
  background: BackgroundConfig<T>;
  shadow: { strategy: StrategySpec<T>; placement: "own" | "live" } | undefined;
  /** An adapter's check of its own target fields, run on every target set however it arrives (`setTargets`, membership). */
  targetCheck: ((targets: unknown) => void) | undefined;
}

/**
 * @internal The option key under which an adapter (openai, sagemaker) gives the router the
 * check of its own target fields: a set from `setTargets` or from membership that the adapter
 * could not send to is never installed.
 */
export const TARGET_CHECK: unique symbol = Symbol("prefix-router.targetCheck");

/** @internal `options` with an adapter's target check (see {@link TARGET_CHECK}). */
export function withTargetCheck<T extends TargetSpec>(options: RouterOptions<T>, check: (targets: unknown) => void): RouterOptions<T> {
  return Object.assign({ ...options }, { [TARGET_CHECK]: check });
}

export function validateOptions<T extends TargetSpec>(options: RouterOptions<T>): Config<T> {
  if (options === null || typeof options !== "object") {
    throw new TypeError(`Expected router options to be an object, got ${describe(options)}`);
  }
  const o = options;
  validateTargets(o.targets);
  // Only an absent option (undefined) takes its default: `null` is a value, and an invalid one.
  const seed = orDefault(o.seed, 0);
  let seedBig: bigint;
  if (typeof seed === "bigint") {
    if (seed < 0n || seed > 0xffff_ffff_ffff_ffffn) {
      throw new RangeError(`Expected \`seed\` to be an integer from 0 to 2^64 - 1, got ${seed}n`);
    }
    seedBig = seed;
  } else {
    seedBig = BigInt(checkInteger("seed", seed, 0, Number.MAX_SAFE_INTEGER));
  }
  let ejection: EjectionPolicy | undefined;
  if (o.ejection !== false) {
    const e = orDefault<EjectionOptions | null>(o.ejection, {});
    if (e === null || typeof e !== "object" || Array.isArray(e)) {
      throw new TypeError(`Expected \`ejection\` to be an object or false, got ${describe(e)}`);
    }
    ejection = {
      consecutiveFailures: checkInteger(
        "ejection.consecutiveFailures",
        orDefault(e.consecutiveFailures, DEFAULT_EJECTION.consecutiveFailures),
        1,
        1_000_000,
      ),
      baseEjectionMs: checkNumber("ejection.baseEjectionMs", orDefault(e.baseEjectionMs, DEFAULT_EJECTION.baseEjectionMs), 0, 86_400_000),
      maxEjectionMs: 0,
    };
    // The cap defaults to at least the base, so raising only the base stays valid.
    ejection.maxEjectionMs = checkNumber(
      "ejection.maxEjectionMs",
      orDefault(e.maxEjectionMs, Math.max(DEFAULT_EJECTION.maxEjectionMs, ejection.baseEjectionMs)),
      ejection.baseEjectionMs,
      86_400_000,
    );
  }
  const clock = orDefault<Clock | null>(o.clock, performance);
  if (clock === null || typeof clock !== "object" || typeof clock.now !== "function") {
    throw new TypeError(`Expected \`clock\` to be an object with a now() method, got ${describe(clock)}`);
  }
  return {
    targets: o.targets,
    strategy: checkStrategySpec<T>(o.strategy),
    mode: checkOneOf("mode", orDefault(o.mode, DEFAULT_MODE), ["text", "bytes"] as const),
    prefixLength: checkInteger("prefixLength", orDefault(o.prefixLength, DEFAULT_PREFIX_LENGTH), MIN_PREFIX_LENGTH, MAX_PREFIX_LENGTH),
    concurrencyThreshold: checkInteger("concurrencyThreshold", orDefault(o.concurrencyThreshold, DEFAULT_CONCURRENCY_THRESHOLD), CONCURRENCY_THRESHOLD_RANGE.min, CONCURRENCY_THRESHOLD_RANGE.max),
    seed: seedBig,
    random: o.random === undefined ? Math.random : checkFunction<() => number>("random", o.random),
    clock,
    onDecision: o.onDecision === undefined ? undefined : checkFunction("onDecision", o.onDecision),
    ejection,
    keyScope: checkOneOf("keyScope", orDefault(o.keyScope, DEFAULT_KEY_SCOPE), ["auto", "prefix"] as const),
    longestPrefix: resolveLongestPrefixOptions(o.longestPrefix),
    precisePrefix: resolvePrecisePrefixOptions(o.precisePrefix), // precise-prefix registration (to move onto the strategy registry at merge)
    prefixAware: resolvePrefixAwareOptions(o.prefixAware),
    logger: checkLogger(o.logger),
    closedLoop: resolveClosedLoop(o.closedLoop),
    telemetry: checkTelemetry(o.telemetry),
    background: resolveBackground<T>(o),
    shadow: checkShadow<T>(o.shadow, o.shadowPlacement),
    targetCheck: (o as { [TARGET_CHECK]?: (targets: unknown) => void })[TARGET_CHECK],
  };
}

/** `shadow` a built-in strategy's name; `shadowPlacement` (checked even without a shadow) `"own"` or `"live"`. */
function checkShadow<T extends TargetSpec>(shadow: unknown, placement: unknown): Config<T>["shadow"] {
  const where = checkOneOf("shadowPlacement", orDefault(placement, "own"), ["own", "live"] as const);
  return shadow === undefined ? undefined : { strategy: checkStrategySpec<T>(shadow, "shadow"), placement: where };
}

/** @internal Validates a target list; throws TypeError/RangeError naming the offending entry. */
export function validateTargets(targets: unknown): void {
  if (!Array.isArray(targets)) {
    throw new TypeError(`Expected \`targets\` to be an array, got ${describe(targets)}`);
  }
  const seen = new Set<string>();
  // An index loop, not forEach: a hole in a sparse array is an entry too, and must be named.
  for (let i = 0; i < targets.length; i++) {
    const t: unknown = targets[i];
    if (t === null || typeof t !== "object") {
      throw new TypeError(`Expected \`targets[${i}]\` to be an object, got ${describe(t)}`);
    }
    const { id, weight, models } = t as TargetSpec;
    if (typeof id !== "string" || id.length === 0) {
      throw new TypeError(`Expected \`targets[${i}].id\` to be a non-empty string, got ${describe(id)}`);
    }
    if (seen.has(id)) throw new RangeError(`Expected target ids to be unique, got ${JSON.stringify(id)} twice`);
    seen.add(id);
    if (weight !== undefined && (typeof weight !== "number" || !Number.isFinite(weight) || weight < 0)) {
      throw new RangeError(`Expected \`targets[${i}].weight\` to be a finite number >= 0, got ${describe(weight)}`);
    }
    if (models !== undefined && (!Array.isArray(models) || !isStringArray(models))) {
      throw new TypeError(`Expected \`targets[${i}].models\` to be an array of strings, got ${describe(models)}`);
    }
  }
}

/** True when every entry, holes included, is a string. */
function isStringArray(values: readonly unknown[]): boolean {
  for (let i = 0; i < values.length; i++) if (typeof values[i] !== "string") return false;
  return true;
}
