/**
 * The `logger` option: where the router reports what happens in the background (a load view
 * going stale and coming back, a membership refresh that failed, a target failing its health
 * check). The shape pino and `console` share, called pino-style with the fields first and the
 * message second. Silent by default; nothing a request does waits on it.
 */
import { RouterError } from "./errors.js";
import { describe } from "./internal/validate.js";

/**
 * A logger: `console`, a pino logger, or anything with these four methods. Each is called as
 * `(fields, message)`.
 *
 * @example
 * const router = await createRouter({ targets, loadView: { source: "redis", url }, logger: console });
 */
export interface Logger {
  debug(fields: Record<string, unknown>, message: string): void;
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

const noop = (): void => {};

/** The default logger: says nothing. */
export const SILENT_LOGGER: Logger = Object.freeze({ debug: noop, info: noop, warn: noop, error: noop });

const LEVELS = ["debug", "info", "warn", "error"] as const;

/** @internal Validates the `logger` option (absent: silent). */
export function checkLogger(value: unknown): Logger {
  if (value === undefined) return SILENT_LOGGER;
  if (value === null || typeof value !== "object") {
    throw new RouterError("ERR_INVALID_OPTION", `Expected \`logger\` to be an object with debug, info, warn and error methods, got ${describe(value)}`);
  }
  for (const level of LEVELS) {
    if (typeof (value as Record<string, unknown>)[level] !== "function") {
      throw new RouterError("ERR_INVALID_OPTION", `Expected \`logger.${level}\` to be a function, got ${describe((value as Record<string, unknown>)[level])}`);
    }
  }
  return value as Logger;
}

/** @internal Calls the logger, never letting its exception reach a background loop. */
export function log(logger: Logger, level: (typeof LEVELS)[number], fields: Record<string, unknown>, message: string): void {
  try {
    logger[level](fields, message);
  } catch {
    // A broken logger must not stop a refresh loop.
  }
}
