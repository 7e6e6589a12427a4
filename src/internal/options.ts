/**
 * Validation of the background features' options (load views, membership, health checks): the
 * checks of validate.ts with a default, and the shapes those options need (TypeError for a wrong
 * type, RangeError for a value out of range, like every router option). Only an absent value
 * (undefined) takes the default: `null` is a value, and an invalid one.
 */
import { type Timers, UNREF_TIMERS } from "./timers.js";
import { checkFunction, checkInteger, checkNumber, describe } from "./validate.js";

export function optionInteger(name: string, value: unknown, fallback: number, min: number, max: number): number {
  return checkInteger(name, value === undefined ? fallback : value, min, max);
}

export function optionNumber(name: string, value: unknown, fallback: number, min: number, max: number): number {
  return checkNumber(name, value === undefined ? fallback : value, min, max);
}

export function optionFunction<F>(name: string, value: unknown): F {
  return checkFunction<F>(name, value);
}

export function optionObject(name: string, value: unknown): Record<string, unknown> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new TypeError(`Expected \`${name}\` to be an object, got ${describe(value)}`);
  }
  return value as Record<string, unknown>;
}

export function optionString(name: string, value: unknown, fallback?: string): string {
  const v = value === undefined ? fallback : value;
  if (typeof v !== "string" || v.length === 0) {
    throw new TypeError(`Expected \`${name}\` to be a non-empty string, got ${describe(v)}`);
  }
  return v;
}

export function optionStrings(name: string, value: unknown, fallback: readonly string[]): readonly string[] {
  const v = value === undefined ? fallback : value;
  if (!Array.isArray(v) || v.length === 0 || !v.every((s) => typeof s === "string" && s.length > 0)) {
    throw new TypeError(`Expected \`${name}\` to be a non-empty array of non-empty strings, got ${describe(v)}`);
  }
  return Object.freeze([...v]);
}

export function optionTimers(name: string, value: unknown): Timers {
  if (value === undefined) return UNREF_TIMERS;
  const t = optionObject(name, value);
  if (typeof t["setTimeout"] !== "function" || typeof t["clearTimeout"] !== "function") {
    throw new TypeError(`Expected \`${name}\` to have setTimeout and clearTimeout methods, got ${describe(value)}`);
  }
  return t as unknown as Timers;
}

/**
 * An absolute http(s) URL, or a TypeError naming `name` (an option name, or a description that
 * closes the name's backtick itself) and what was received.
 */
export function checkHttpURL(name: string, value: unknown): string {
  let url: URL | undefined;
  if (typeof value === "string" || value instanceof URL) {
    try {
      url = new URL(String(value));
    } catch {
      url = undefined;
    }
  }
  if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:")) {
    throw new TypeError(`Expected \`${name.includes("`") ? name : `${name}\``} to be an absolute http: or https: URL, got ${describe(value)}`);
  }
  return url.href;
}
