/**
 * Validation of the background features' options (load views, membership, health checks): the
 * checks of validate.ts with a default, and the shapes those options need (TypeError for a wrong
 * type, RangeError for a value out of range, like every router option). Only an absent value
 * (undefined) takes the default: `null` is a value, and an invalid one.
 */
import { TEST_TIMERS, type Timers, UNREF_TIMERS } from "./timers.js";
import type { TargetSpec } from "../types.js";
import { checkInteger, checkFunction, describe, orDefault } from "./validate.js";

/** The highest `maxBodyBytes` a background feature accepts (1 GiB). */
export const MAX_BODY_BYTES = 1024 * 1024 * 1024;

export function optionInteger(name: string, value: unknown, fallback: number, min: number, max: number): number {
  return checkInteger(name, orDefault(value, fallback), min, max);
}

export function optionObject(name: string, value: unknown): Record<string, unknown> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new TypeError(`Expected \`${name}\` to be an object, got ${describe(value)}`);
  }
  return value as Record<string, unknown>;
}

export function optionString(name: string, value: unknown, fallback?: string): string {
  const v = orDefault(value, fallback);
  if (typeof v !== "string" || v.length === 0) {
    throw new TypeError(`Expected \`${name}\` to be a non-empty string, got ${describe(v)}`);
  }
  return v;
}

export function optionStrings(name: string, value: unknown, fallback: readonly string[]): readonly string[] {
  const v = orDefault(value, fallback);
  if (!Array.isArray(v) || v.length === 0 || !v.every((s) => typeof s === "string" && s.length > 0)) {
    throw new TypeError(`Expected \`${name}\` to be a non-empty array of non-empty strings, got ${describe(v)}`);
  }
  return Object.freeze([...v]);
}

/**
 * The timers a test put under {@link TEST_TIMERS} in the feature's options `o` (`name` is where
 * `o` sits, for the error), else Node's, unref'd.
 */
export function optionTimers(name: string, o: object): Timers {
  const value = (o as { [TEST_TIMERS]?: unknown })[TEST_TIMERS];
  if (value === undefined) return UNREF_TIMERS;
  const at = `${name}[TEST_TIMERS]`;
  const t = optionObject(at, value);
  if (typeof t["setTimeout"] !== "function" || typeof t["clearTimeout"] !== "function") {
    throw new TypeError(`Expected \`${at}\` to have setTimeout and clearTimeout methods, got ${describe(value)}`);
  }
  return t as unknown as Timers;
}

/**
 * An absolute http(s) URL without user name or password, or a TypeError naming `name` (an option
 * name, or a description that closes the name's backtick itself) and what was received — never a
 * password: fetch refuses such URLs, and credentials belong in the feature's `headersOption`.
 */
export function checkHttpURL(name: string, value: unknown, headersOption = "headers"): string {
  let url: URL | undefined;
  if (typeof value === "string" || value instanceof URL) {
    try {
      url = new URL(String(value));
    } catch {
      url = undefined;
    }
  }
  const option = name.includes("`") ? name : `${name}\``;
  if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:")) {
    throw new TypeError(`Expected \`${option} to be an absolute http: or https: URL, got ${describeURL(value)}`);
  }
  if (url.username !== "" || url.password !== "") {
    throw new TypeError(`Expected \`${option} to be an absolute http(s) URL without user name or password, got one with credentials for ${url.host} (send them in \`${headersOption}\`)`);
  }
  return url.href;
}

/** What was received where a URL was expected, for an error message: never a password (before an "@"). */
function describeURL(value: unknown): string {
  return String(value).includes("@") ? 'a value with "@" (not shown: it may hold a password)' : describe(value);
}

/** Headers sent with a background request: an object of strings (absent: none). */
export function optionHeaders(name: string, value: unknown): Readonly<Record<string, string>> {
  if (value === undefined) return Object.freeze({});
  const headers = optionObject(name, value);
  for (const [k, v] of Object.entries(headers)) {
    if (typeof v !== "string") throw new TypeError(`Expected \`${name}.${k}\` to be a string, got ${describe(v)}`);
  }
  return Object.freeze({ ...(headers as Record<string, string>) });
}

/**
 * Where a background feature reaches a target: `custom(target)` when given (option `option`),
 * else the target's own `field`, else `path` at the origin of its `baseURL`
 * (`http://10.0.0.7:8000/v1` → `http://10.0.0.7:8000/metrics`) — checked as an absolute http(s)
 * URL without credentials, a TypeError naming the target otherwise.
 */
export function targetURL<T extends TargetSpec>(option: string, field: string, path: string, custom: unknown): (target: T) => string {
  const own = custom === undefined ? undefined : checkFunction<(target: T) => string | URL>(option, custom);
  const headers = option.replace(/\.[^.]+$/, ".headers");
  return (target) => {
    const id = JSON.stringify(target.id);
    if (own !== undefined) return checkHttpURL(`${option}(target)\` for target ${id}`, own(target), headers);
    return checkHttpURL(`${field}\` of target ${id} (its \`${field}\`, else ${path} at the origin of its \`baseURL\`)`, ownURL(target, field, path), headers);
  };
}

/** The target's `field`, else `path` at the origin of its `baseURL`; `undefined` when it has neither. */
function ownURL(target: TargetSpec, field: string, path: string): unknown {
  const t = target as unknown as Record<string, unknown>;
  if (t[field] !== undefined) return t[field];
  if (typeof t["baseURL"] !== "string") return undefined;
  try {
    return new URL(path, t["baseURL"]).href;
  } catch {
    return t["baseURL"];
  }
}
