/**
 * Checks of the arguments of the router's per-call entry points — `route(request, options)` and
 * `lease.release(outcome, info)` — with messages that name the argument, the allowed range and
 * the value, like the constructor's. A call with an invalid argument throws before it changes
 * anything.
 */
import { checkBoolean, checkInteger, checkOneOf, describe } from "../internal/validate.js";
import type { LeaseOutcome, ReleaseInfo, RouteOptions } from "../types.js";

/** Every {@link LeaseOutcome}. */
export const LEASE_OUTCOMES: readonly LeaseOutcome[] = Object.freeze(["success", "cancelled", "client-error", "server-error", "connect-error"]);

/** Largest accepted `RouteOptions.attempt`. */
const MAX_ATTEMPT = 1024;

/** Validated {@link RouteOptions}. */
export interface CheckedRouteOptions {
  exclude: ReadonlySet<string> | undefined;
  attempt: number;
  explain: boolean;
}

/** Validates `route`'s options: `attempt` an integer from 1 to 1024, `exclude` a Set or an array of ids. */
export function checkRouteOptions(options: unknown): CheckedRouteOptions {
  if (options === undefined) return { exclude: undefined, attempt: 1, explain: false };
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new TypeError(`Expected route options to be an object like { exclude?, attempt?, target? }, got ${describe(options)}`);
  }
  const o = options as RouteOptions;
  const attempt = o.attempt === undefined ? 1 : checkInteger("attempt", o.attempt, 1, MAX_ATTEMPT);
  const explain = o.explain === undefined ? false : checkBoolean("explain", o.explain);
  return { exclude: checkExclude(o.exclude), attempt, explain };
}

function checkExclude(exclude: unknown): ReadonlySet<string> | undefined {
  if (exclude === undefined) return undefined;
  if (exclude instanceof Set) {
    for (const id of exclude) if (typeof id !== "string") throw excludeError(id);
    return exclude.size === 0 ? undefined : (exclude as ReadonlySet<string>);
  }
  if (!Array.isArray(exclude)) {
    throw new TypeError(`Expected \`exclude\` to be a Set or an array of target ids, got ${describe(exclude)}`);
  }
  for (let i = 0; i < exclude.length; i++) if (typeof exclude[i] !== "string") throw excludeError(exclude[i]);
  return exclude.length === 0 ? undefined : new Set(exclude as string[]);
}

function excludeError(id: unknown): TypeError {
  return new TypeError(`Expected \`exclude\` to hold target ids (strings), got ${describe(id)}`);
}

/**
 * Validates `release`'s arguments: `outcome` one of {@link LEASE_OUTCOMES}; `info` an object whose
 * `promptTokens` and `cachedTokens` are integers ≥ 0, cached at most prompt when both are given.
 */
export function checkRelease(outcome: unknown, info: unknown): void {
  checkOneOf("outcome", outcome, LEASE_OUTCOMES);
  if (info === undefined) return;
  if (info === null || typeof info !== "object" || Array.isArray(info)) {
    throw new TypeError(`Expected release \`info\` to be an object like { promptTokens?, cachedTokens? }, got ${describe(info)}`);
  }
  const { promptTokens, cachedTokens } = info as ReleaseInfo;
  if (promptTokens !== undefined) checkInteger("promptTokens", promptTokens, 0, Number.MAX_SAFE_INTEGER);
  if (cachedTokens !== undefined) {
    checkInteger("cachedTokens", cachedTokens, 0, promptTokens === undefined ? Number.MAX_SAFE_INTEGER : promptTokens);
  }
}
