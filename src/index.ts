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
export type {
  Clock,
  Decision,
  Lease,
  LeaseOutcome,
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
export { SILENT_LOGGER } from "./logger.js";
export type { Logger } from "./logger.js";
export { DEFAULT_MEMBERSHIP } from "./membership.js";
export type { MembershipOptions, MembershipStats } from "./membership.js";
export { dnsTargets } from "./dns-targets.js";
export type { DnsResolver, DnsTarget, DnsTargetsOptions } from "./dns-targets.js";
export { DEFAULT_HEALTH_CHECK } from "./health-check.js";
export type { HealthCheckOptions } from "./health-check.js";
export type { Timers } from "./internal/timers.js";
export { DEFAULT_ATTEMPTS, MAX_ATTEMPTS, getRouter } from "./adapter.js";
export { createRoutedFetch } from "./openai/routed-fetch.js";
export type { FetchLike, OpenAITarget, RoutedFetch, RoutedFetchOptions, RoutedRequestInfo } from "./openai/routed-fetch.js";
export { TARGET_HEADER } from "./openai/body.js";
export { routeOpenAI } from "./openai/client.js";
export type { RoutableClient, RouteOpenAIOptions } from "./openai/client.js";
export { PREFIX_AWARE_ID_HEADER, routeSageMaker } from "./sagemaker/route-sagemaker.js";
export type {
  RouteSageMakerOptions,
  RoutedSageMakerClient,
  SageMakerTarget,
} from "./sagemaker/route-sagemaker.js";
