/** Option validation shared by every public constructor. Messages name the option, the range and what was received. */

export function describe(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "bigint") return `${value}n`;
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  if (typeof value === "function") return "a function";
  return String(value);
}

/** A value for an error message: a string quoted and cut to `max` characters (saying how long it was), anything else described. */
export function quoteShort(value: unknown, max = 64): string {
  if (typeof value !== "string") return describe(value);
  return value.length <= max ? JSON.stringify(value) : `${JSON.stringify(value.slice(0, max))}… (${value.length} characters)`;
}

export function checkInteger(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isInteger(value)) {
    throw new TypeError(`Expected \`${name}\` to be an integer from ${min} to ${max}, got ${describe(value)}`);
  }
  if (value < min || value > max) {
    throw new RangeError(`Expected \`${name}\` to be an integer from ${min} to ${max}, got ${value}`);
  }
  return value;
}

export function checkNumber(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== "number" || Number.isNaN(value)) {
    throw new TypeError(`Expected \`${name}\` to be a number from ${min} to ${max}, got ${describe(value)}`);
  }
  if (!(value >= min && value <= max)) {
    throw new RangeError(`Expected \`${name}\` to be a number from ${min} to ${max}, got ${value}`);
  }
  return value;
}

export function checkBoolean(name: string, value: unknown): boolean {
  if (typeof value !== "boolean") throw new TypeError(`Expected \`${name}\` to be a boolean, got ${describe(value)}`);
  return value;
}

export function checkOneOf<T extends string>(name: string, value: unknown, allowed: readonly T[]): T {
  if (typeof value !== "string" || !(allowed as readonly string[]).includes(value)) {
    throw new (typeof value === "string" ? RangeError : TypeError)(
      `Expected \`${name}\` to be one of ${allowed.map((a) => JSON.stringify(a)).join(", ")}, got ${describe(value)}`,
    );
  }
  return value as T;
}

export function checkFunction<F>(name: string, value: unknown): F {
  if (typeof value !== "function") {
    throw new TypeError(`Expected \`${name}\` to be a function, got ${describe(value)}`);
  }
  return value as F;
}

/** `value`, or `fallback` when it is absent (`undefined` only: a `null` option is a value, and gets checked). */
export function orDefault<T>(value: T | undefined, fallback: T): T {
  return value === undefined ? fallback : value;
}
