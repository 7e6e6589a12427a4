/**
 * The handle every routed client carries: the router behind it (found again with
 * {@link getRouter}) and the bounds of its `attempts` option, the same for both adapters.
 */
import { checkInteger } from "../internal/validate.js";
import type { TargetSpec } from "../types.js";
import type { Router } from "../router/types.js";

/** Default number of targets a request may try when connections fail before the request is written. */
export const DEFAULT_ATTEMPTS = 2;
/** Largest accepted `attempts`. */
export const MAX_ATTEMPTS = 16;

/** @internal Where the router is kept on a routed fetch and a routed client; `Symbol.for`, so copies of the package agree. */
export const ROUTER = Symbol.for("prefix-router.router");

/** @internal Checks an adapter's `attempts` option against the bounds both adapters document. */
export function checkAttempts(value: unknown): number {
  return checkInteger("attempts", value, 1, MAX_ATTEMPTS);
}

/** @internal Puts `router` on `holder` (a routed fetch or client) for {@link getRouter}; read-only, not enumerable. */
export function carryRouter<H extends object, T extends TargetSpec>(holder: H, router: Router<T>): H {
  Object.defineProperty(holder, ROUTER, { value: router });
  return holder;
}

/**
 * The router behind a routed OpenAI client (also a copy made from it with `withOptions`, or a
 * client built with a routed `fetch`), a routed fetch itself, or a routed SageMaker client;
 * `undefined` for anything else.
 *
 * @example
 * const { targets, totals } = getRouter(client)!.stats();
 */
export function getRouter<T extends TargetSpec = TargetSpec>(client: unknown): Router<T> | undefined {
  if (client === null || (typeof client !== "object" && typeof client !== "function")) return undefined;
  const direct = (client as Record<symbol, unknown>)[ROUTER];
  if (direct !== undefined) return direct as Router<T>;
  const fetch = (client as { fetch?: unknown }).fetch;
  if (typeof fetch === "function") {
    const viaFetch = (fetch as unknown as Record<symbol, unknown>)[ROUTER];
    if (viaFetch !== undefined) return viaFetch as Router<T>;
  }
  return undefined;
}
