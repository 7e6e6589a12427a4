/**
 * prefix-router — client-side prefix-aware routing for LLM fleets.
 * @packageDocumentation
 */
export { canonicalize, canonicalizeJson } from "./canonical-json.js";
export { CANONICAL_MAX_DEPTH, RouterError, isRouterError } from "./errors.js";
export type { RouterErrorCode } from "./errors.js";
export { MAX_PREFIX_LENGTH, MIN_PREFIX_LENGTH, routingInput } from "./routing-input.js";
export type { RoutingInputOptions, RoutingMode } from "./routing-input.js";
export { validateTenant } from "./routing-key.js";
export { DEFAULT_CONCURRENCY_THRESHOLD, DEFAULT_EJECTION, DEFAULT_MODE, DEFAULT_PREFIX_LENGTH, DEFAULT_STRATEGY, STRATEGIES } from "./options.js";
export { createRouter } from "./router.js";
export { mergeLatency, mergeStats } from "./stats-merge.js";
export { silentLogger } from "./logger.js";
export type { Logger } from "./logger.js";
export { DEFAULT_CLOSED_LOOP } from "./strategies/closed-loop.js";
export type { ClosedLoopOptions } from "./strategies/closed-loop.js";
export type { MeterProviderLike, TelemetryOptions, TextMapPropagatorLike, TracerProviderLike } from "./telemetry/telemetry.js";
export type {
  Clock,
  Decision,
  Lease,
  LeaseOutcome,
  LeaseRecord,
  PickKind,
  PreparedRequest,
  Ranking,
  ReleaseInfo,
  RouteOptions,
  RouteRequest,
  Router,
  RouterStats,
  Strategy,
  StrategyName,
  TargetSpec,
  TargetStats,
} from "./types.js";
export type { EjectionOptions, RouterOptions } from "./options.js";
export type { LatencySummary } from "./target-state.js";
export type { InputKind } from "./raw-prefix.js";
export type {
  Commitment,
  PickContext,
  RoutingStrategy,
  StrategyEnv,
  StrategyFactory,
  StrategyPick,
  StrategyRanking,
  StrategyRequest,
  StrategySpec,
  StrategyStats,
} from "./strategies/strategy.js";
export { DEFAULT_BOUNDED_LOAD, boundedLoad } from "./strategies/bounded-load.js";
export type { BoundedLoadOptions } from "./strategies/bounded-load.js";
export { DEFAULT_LONGEST_PREFIX } from "./strategies/longest-prefix/options.js";
export type { LongestPrefixOptions } from "./strategies/longest-prefix/options.js";
export type { PrefixIndexStats } from "./strategies/longest-prefix/blocks.js";
export { DEFAULT_ENGINE_METRICS, DEFAULT_LOAD_VIEW } from "./load-view/options.js";
export type { EngineLoadViewOptions, EngineMetricNames, LoadViewOption, RedisLoadViewOptions } from "./load-view/options.js";
export type { LoadView, LoadViewStats } from "./load-view/view.js";
export { DEFAULT_MEMBERSHIP } from "./membership.js";
export type { MembershipOptions, MembershipStats } from "./membership.js";
export { dnsTargets } from "./dns-targets.js";
export type { DnsResolver, DnsTarget, DnsTargetsOptions } from "./dns-targets.js";
export { DEFAULT_HEALTH_CHECK } from "./health-check.js";
export type { HealthCheckOptions } from "./health-check.js";
export type { Timers } from "./internal/timers.js";
// The OpenAI adapter needs no optional peer's types; its home is `prefix-router/openai`.
export {
  DEFAULT_ATTEMPTS,
  DEFAULT_REDIRECT,
  DEFAULT_RESPONSE_AFFINITY,
  MAX_ATTEMPTS,
  MAX_REDIRECTS,
  TARGET_HEADER,
  createRoutedFetch,
  getRouter,
  routeOpenAI,
} from "./openai/index.js";
export type {
  FetchLike,
  OpenAITarget,
  OpenAITenantRequest,
  RedirectPolicy,
  ResponseAffinityOptions,
  RoutableClient,
  RouteOpenAIOptions,
  RoutedFetch,
  RoutedFetchOptions,
  RoutedRequestInfo,
} from "./openai/index.js";
// The SageMaker adapter's types need the AWS SDK: they live in `prefix-router/sagemaker`. These
// exports are typed without it (deprecated; see src/sagemaker/deprecated.ts).
export { PREFIX_AWARE_ID_HEADER } from "./sagemaker/target.js";
export { routeSageMaker } from "./sagemaker/deprecated.js";
export type { RouteSageMakerOptions, RoutedSageMakerClient, SageMakerTarget } from "./sagemaker/deprecated.js";
export type { SageMakerTenantRequest } from "./sagemaker/target.js";
export { DEFAULT_ISOLATION } from "./adapter/tenant.js";
export type { TenantIsolation, TenantOptions } from "./adapter/tenant.js";
