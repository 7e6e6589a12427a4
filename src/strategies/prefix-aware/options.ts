/**
 * Options of the `prefix-aware` strategy (`RouterOptions.prefixAware`): what counts as a
 * saturated target (saturation.ts) and whether a running key spreads
 * (running-keys.ts).
 */
import { checkKnownKeys, checkNumber, checkOneOf, describe, keysOf, orDefault } from "../../internal/validate.js";

/** What counts as a target's saturation under `prefix-aware`. */
export type SaturationMeasure = "requests" | "tokens";

/** Options of the `prefix-aware` strategy (`RouterOptions.prefixAware`). */
export interface PrefixAwareOptions {
  /**
   * When a key's replica counts as full and a request spills to the key's next choice:
   * `"requests"`, at `concurrencyThreshold` requests in flight (SageMaker's rule); `"tokens"`,
   * also when its uncached prefill tokens in flight, this request's included, would pass its
   * calibrated peak prefill throughput × `ttftPenaltyMs` (docs/prefix-aware.md, "Saturation in
   * tokens").
   * @default "requests"
   */
  saturation?: SaturationMeasure;
  /**
   * With `saturation: "tokens"`: the time to first token a request may lose queued behind other
   * requests' prefill on its cache-warm replica before it goes elsewhere, ms. From 1 to 60,000.
   * @default 250
   */
  ttftPenaltyMs?: number;
  /**
   * Send a request whose first choice is already running a request of its key to the key's next
   * choice that is open and not running it. For engines whose prefix cache is private to each
   * running request (llama.cpp's slots); with shared paged caches (vLLM, SGLang) it only spreads
   * a prefix's traffic over more caches. `"auto"`: only to a target whose responses showed it —
   * requests sent while their key ran there were served mostly cold although predicted warm.
   * @default "auto"
   */
  spreadRunningKeys?: boolean | "auto";
}

/** Defaults of {@link PrefixAwareOptions}. */
export const DEFAULT_PREFIX_AWARE: Readonly<Required<PrefixAwareOptions>> = Object.freeze({
  saturation: "requests",
  ttftPenaltyMs: 250,
  spreadRunningKeys: "auto",
});

/** @internal Validated options. */
export type PrefixAwareConfig = Readonly<Required<PrefixAwareOptions>>;

/** @internal Every key of {@link PrefixAwareOptions}. */
export const PREFIX_AWARE_OPTION_KEYS = keysOf<PrefixAwareOptions>()(["saturation", "ttftPenaltyMs", "spreadRunningKeys"]);

/** @internal Validates `RouterOptions.prefixAware`, naming the option, its range and the value. */
export function resolvePrefixAwareOptions(options: unknown): PrefixAwareConfig {
  if (options === undefined) return DEFAULT_PREFIX_AWARE;
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new TypeError(`Expected \`prefixAware\` to be an object, got ${describe(options)}`);
  }
  checkKnownKeys("prefixAware", options, PREFIX_AWARE_OPTION_KEYS);
  const o = options as PrefixAwareOptions;
  const d = DEFAULT_PREFIX_AWARE;
  return Object.freeze({
    saturation: checkOneOf("prefixAware.saturation", orDefault(o.saturation, d.saturation), ["requests", "tokens"] as const),
    ttftPenaltyMs: checkNumber("prefixAware.ttftPenaltyMs", orDefault(o.ttftPenaltyMs, d.ttftPenaltyMs), 1, 60_000),
    spreadRunningKeys: checkSpread(orDefault(o.spreadRunningKeys, d.spreadRunningKeys)),
  });
}

function checkSpread(spread: unknown): boolean | "auto" {
  if (typeof spread !== "boolean" && spread !== "auto") {
    throw new TypeError(`Expected \`prefixAware.spreadRunningKeys\` to be a boolean or "auto", got ${describe(spread)}`);
  }
  return spread;
}
