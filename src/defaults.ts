/**
 * Every router option's default and every bound the router enforces, in two frozen objects: the
 * values `createRouter` uses when an option is left out, and the ranges it accepts. The adapters'
 * own options (`attempts`, `redirect`, `responseAffinity`, `isolation`) have their defaults in
 * `prefix-router/openai` and `prefix-router/sagemaker`.
 */
import { DEFAULT_HEALTH_CHECK } from "./background/health-check.js";
import { DEFAULT_MEMBERSHIP } from "./background/membership.js";
import { CANONICAL_MAX_DEPTH } from "./errors.js";
import { DEFAULT_ENGINE_METRICS, DEFAULT_LOAD_VIEW } from "./load-view/options.js";
import { CONCURRENCY_THRESHOLD_RANGE, DEFAULT_CONCURRENCY_THRESHOLD, DEFAULT_EJECTION, DEFAULT_MODE, DEFAULT_PREFIX_LENGTH } from "./options.js";
import { DEFAULT_CLOSED_LOOP } from "./closed-loop/closed-loop.js";
import { DEFAULT_KEY_SCOPE, MAX_PREFIX_LENGTH, MIN_PREFIX_LENGTH } from "./routing/routing-input.js";
import { DEFAULT_STRATEGY, strategyDefaults } from "./strategies/index.js";

/**
 * The router's defaults, by option name (`loadView` holds the shared views' settings,
 * `engineMetrics` the metric names the engine view reads; each strategy's settings under the key
 * its folder declares, with the bounded-load decorator's).
 *
 * @example
 * createRouter({ targets, concurrencyThreshold: DEFAULTS.concurrencyThreshold * 2 });
 */
export const DEFAULTS = Object.freeze({
  strategy: DEFAULT_STRATEGY,
  mode: DEFAULT_MODE,
  prefixLength: DEFAULT_PREFIX_LENGTH,
  keyScope: DEFAULT_KEY_SCOPE,
  concurrencyThreshold: DEFAULT_CONCURRENCY_THRESHOLD,
  ejection: DEFAULT_EJECTION,
  closedLoop: DEFAULT_CLOSED_LOOP,
  ...strategyDefaults(),
  loadView: DEFAULT_LOAD_VIEW,
  engineMetrics: DEFAULT_ENGINE_METRICS,
  membership: DEFAULT_MEMBERSHIP,
  healthCheck: DEFAULT_HEALTH_CHECK,
});

/** The ranges the router accepts (inclusive), and the nesting `canonicalize` reads before `ERR_TOO_DEEP`. */
export const LIMITS = Object.freeze({
  /** `prefixLength`, SageMaker's range: code points (text mode) or bytes (bytes mode). */
  prefixLength: Object.freeze({ min: MIN_PREFIX_LENGTH, max: MAX_PREFIX_LENGTH }),
  /** `concurrencyThreshold`, SageMaker's range. */
  concurrencyThreshold: CONCURRENCY_THRESHOLD_RANGE,
  /** A tenant id's length in printable ASCII characters (SageMaker's `PrefixAwareId`). */
  tenantLength: Object.freeze({ min: 1, max: 64 }),
  /** Levels of nesting `canonicalize` reads. */
  canonicalDepth: CANONICAL_MAX_DEPTH,
});
