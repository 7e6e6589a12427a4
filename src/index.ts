/**
 * prefix-router — client-side prefix-aware routing for LLM fleets.
 *
 * The root entry holds the router and what every adapter shares. The adapters live in
 * `prefix-router/openai` and `prefix-router/sagemaker`; the emulated fleet, the benchmark and the
 * log advisor in `prefix-router/fleet`, `/bench` and `/advise`.
 * @packageDocumentation
 */

// The router.
export { createRouter } from "./router/router.js";
export { mergeStats } from "./router/stats-merge.js";
export { DEFAULTS, LIMITS } from "./defaults.js";
export type { EjectionOptions, RouterOptions } from "./options.js";
export type {
  Clock,
  Decision,
  Lease,
  LeaseRecord,
  PickKind,
  PreparedRequest,
  Ranking,
  ReleaseInfo,
  RouteOptions,
  RouteRequest,
  Router,
  RouterStats,
  StrategyName,
  TargetSpec,
  TargetStats,
} from "./types.js";
export type { LatencySummary } from "./router/target-state.js";
export type { ClosedLoopOptions } from "./router/closed-loop.js";

// Routing input: what the key is computed from, for tests that prove two services agree.
export { canonicalize, canonicalizeJson, parseJson } from "./routing/canonical-json.js";
export { routingInput } from "./routing/routing-input.js";
export type { KeyScope, RoutingInputOptions, RoutingMode } from "./routing/routing-input.js";
export { validateTenant } from "./routing/routing-key.js";

// Strategies: the built-ins by name, the bounded-load decorator, and the interface of your own.
export { STRATEGIES } from "./strategies/index.js";
export { boundedLoad } from "./strategies/bounded-load.js";
export type { BoundedLoadOptions } from "./strategies/bounded-load.js";
export type { LongestPrefixOptions } from "./strategies/longest-prefix/options.js";
export type { PrefixAwareOptions } from "./strategies/helpers/prefix-aware-options.js";
export type {
  Commitment,
  PickContext,
  RoutingStrategy,
  StrategyEnv,
  StrategyFactory,
  StrategyPick,
  StrategyRanking,
  StrategyRequest,
  StrategyStats,
} from "./strategies/strategy.js";

// Background work: shared load views, membership, health checks.
export type { EngineLoadViewOptions, LoadViewOption, RedisLoadViewOptions } from "./load-view/options.js";
export type { LoadView } from "./load-view/view.js";
export { dnsTargets } from "./background/dns-targets.js";
export type { DnsTarget, DnsTargetsOptions } from "./background/dns-targets.js";
export type { MembershipOptions } from "./background/membership.js";
export type { HealthCheckOptions } from "./background/health-check.js";

// Errors, logging, telemetry.
export { RouterError, isRouterError } from "./errors.js";
export type { RouterErrorCode } from "./errors.js";
export { silentLogger } from "./logger.js";
export type { Logger } from "./logger.js";
export type { TelemetryOptions } from "./telemetry/telemetry.js";
