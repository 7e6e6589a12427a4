/**
 * The `telemetry` option and the lazy load of `@opentelemetry/api`, an optional peer dependency.
 * As OpenTelemetry asks of libraries, prefix-router depends on the API alone: with the API
 * installed it reports to the application's global (or given) providers, which record nothing
 * until the application installs an SDK; without it, nothing is loaded and nothing recorded.
 */
import { RouterError } from "../errors.js";
import { checkKnownKeys, describe, keysOf } from "../internal/validate.js";
import { OtelTelemetry } from "./otel.js";
import { NOOP_TELEMETRY, type Telemetry, type TelemetryOptions } from "./telemetry.js";
import type { Clock } from "../types.js";

/** @internal Validated `telemetry` option: `false` (off), `undefined` (the globals, if the API is installed) or options. */
export type TelemetryConfig = false | TelemetryOptions | undefined;

/** @internal Where a router's telemetry is kept for the adapters; `Symbol.for`, so copies of the package agree. */
export const TELEMETRY = Symbol.for("prefix-router.telemetry");

/** @internal Every key of {@link TelemetryOptions}. */
export const TELEMETRY_OPTION_KEYS = keysOf<TelemetryOptions>()(["meterProvider", "tracerProvider", "propagator"]);

/** @internal Validates `RouterOptions.telemetry`. */
export function checkTelemetry(value: unknown): TelemetryConfig {
  if (value === undefined || value === false) return value;
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new TypeError(`Expected \`telemetry\` to be an object ({ meterProvider?, tracerProvider?, propagator? }) or false, got ${describe(value)}`);
  }
  checkKnownKeys("telemetry", value, TELEMETRY_OPTION_KEYS);
  const o = value as Record<string, unknown>;
  for (const [name, method] of [["meterProvider", "getMeter"], ["tracerProvider", "getTracer"], ["propagator", "inject"]] as const) {
    const v = o[name];
    if (v !== undefined && (v === null || typeof v !== "object" || typeof (v as Record<string, unknown>)[method] !== "function")) {
      throw new TypeError(`Expected \`telemetry.${name}\` to be an object with a ${method}() method, got ${describe(v)}`);
    }
  }
  return value as TelemetryOptions;
}

/** @internal The telemetry of a new router. */
export async function loadTelemetry(config: TelemetryConfig, clock: Clock): Promise<Telemetry> {
  if (config === false) return NOOP_TELEMETRY;
  let api: typeof import("@opentelemetry/api");
  try {
    api = await import("@opentelemetry/api");
  } catch (cause) {
    if (config === undefined) return NOOP_TELEMETRY;
    throw new RouterError(
      "ERR_MISSING_PEER",
      "The `telemetry` option needs the optional peer dependency @opentelemetry/api: npm install @opentelemetry/api",
      { cause },
    );
  }
  return new OtelTelemetry(api, config ?? {}, clock);
}

/** @internal The telemetry of a router (for the adapters); no-op for a router from elsewhere. */
export function telemetryOf(router: object): Telemetry {
  return ((router as Record<symbol, unknown>)[TELEMETRY] as Telemetry | undefined) ?? NOOP_TELEMETRY;
}
