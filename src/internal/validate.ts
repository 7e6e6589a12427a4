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

/**
 * Every key of `T`, listed once: `keysOf<Options>()([...])` is a type error naming a key of
 * `Options` the list lacks, so a list kept beside its resolver cannot fall behind the type.
 */
export function keysOf<T>() {
  return <const K extends readonly (keyof T & string)[]>(
    keys: K & ([Exclude<keyof T & string, K[number]>] extends [never] ? unknown : { missing: Exclude<keyof T & string, K[number]> }),
  ): K => Object.freeze([...keys]) as unknown as K;
}

/**
 * Refuses an own key of `options` that is not in `known`: an option this version does not know
 * would otherwise do nothing, silently (a misspelling, an option of another version). `path` is
 * where the object sits (`"prefixAware"`; `""` for the top level). The TypeError names the
 * closest known key by edit distance, or lists the known keys when none is close:
 * ``Unknown option `concurrencyTreshold` — did you mean `concurrencyThreshold`?``
 */
export function checkKnownKeys(path: string, options: object, known: readonly string[]): void {
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) throw new TypeError(unknownOptionMessage(path, key, known));
  }
}

function unknownOptionMessage(path: string, key: string, known: readonly string[]): string {
  const at = (k: string) => (path === "" ? k : `${path}.${k}`);
  const shown = /^[\w$-]{1,64}$/.test(key) ? `\`${at(key)}\`` : `${quoteShort(key)}${path === "" ? "" : ` in \`${path}\``}`;
  const near = closest(key, known);
  if (near !== undefined) return `Unknown option ${shown} — did you mean \`${at(near)}\`?`;
  const list = known.length <= 12 ? known.map((k) => `\`${k}\``).join(", ") : "those in the README's options table";
  return `Unknown option ${shown}: ${path === "" ? "the options are" : `\`${path}\` takes`} ${list}`;
}

/** The known key nearest `key` (case ignored; a transposition counts one edit), if within a third of its length. */
function closest(key: string, known: readonly string[]): string | undefined {
  if (key.length > 256) return undefined;
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const k of known) {
    const d = editDistance(key.toLowerCase(), k.toLowerCase());
    if (d < bestDistance && d <= Math.max(1, Math.floor(k.length / 3))) {
      best = k;
      bestDistance = d;
    }
  }
  return best;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent transpositions. */
function editDistance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        row.push(j);
        continue;
      }
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, row[j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      row.push(d);
    }
    rows.push(row);
  }
  return rows[a.length]![b.length]!;
}
