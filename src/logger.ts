/**
 * The `logger` option: where the router reports what an operator should hear about — a target
 * ejected, a spill storm, a stale cache prediction, a setting that does nothing. Silent unless
 * given.
 */
import { describe } from "./internal/validate.js";

/**
 * A logger: the `debug` / `info` / `warn` / `error` methods that `console`, pino, bunyan and
 * winston share. Each call passes one complete sentence and, second, an object of the same facts
 * for structured loggers (`console` prints it; pino, which reads a first-argument object, ignores
 * it and keeps the sentence).
 *
 * @example
 * const router = await createRouter({ targets, logger: console });
 * const router = await createRouter({ targets, logger: pino({ name: "router" }) });
 */
export interface Logger {
  debug(message: string, ...args: unknown[]): void;
  info(message: string, ...args: unknown[]): void;
  warn(message: string, ...args: unknown[]): void;
  error(message: string, ...args: unknown[]): void;
}

/** A logger that says nothing: the default. */
export const silentLogger: Logger = Object.freeze({
  debug() {},
  info() {},
  warn() {},
  error() {},
});

const LEVELS = ["debug", "info", "warn", "error"] as const;

/** @internal Validates `RouterOptions.logger`: an object with the four methods, or absent (silent). */
export function checkLogger(value: unknown): Logger {
  if (value === undefined) return silentLogger;
  if (value === null || typeof value !== "object") {
    throw new TypeError(`Expected \`logger\` to be an object with debug, info, warn and error methods (console, pino, …), got ${describe(value)}`);
  }
  for (const level of LEVELS) {
    const method = (value as Record<string, unknown>)[level];
    if (typeof method !== "function") throw new TypeError(`Expected \`logger.${level}\` to be a function, got ${describe(method)}`);
  }
  return value as Logger;
}

/** @internal Calls the logger; its exception never reaches routing or a background loop. */
export function log(logger: Logger, level: (typeof LEVELS)[number], message: string, fields: Record<string, unknown>): void {
  try {
    logger[level](message, fields);
  } catch {
    // A broken logger must not break routing or stop a refresh loop.
  }
}
