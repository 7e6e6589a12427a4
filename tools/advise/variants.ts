/**
 * Is one text a *variant* of another — the same text with a few short values changed? The test
 * behind value-drift findings (a timestamp in a system prompt, a user id near the start).
 *
 * Walk both texts in step: skip their common run, then look for the nearest point where they
 * agree again — a {@link PROBE}-character run of `a` found in `b` within {@link MAX_SPAN}
 * characters on both sides — and record the substitution between; stop at the ends, or fail
 * after {@link MAX_SUBSTITUTIONS} substitutions, or when no resynchronisation point is near.
 * Each substitution is widened to whole value-like runs (letters, digits and `-_:./+`), so the
 * seconds of a timestamp and its whole date count as one value at one position. Cost:
 * O(length + substitutions × MAX_SPAN × (MAX_SPAN + PROBE)) character comparisons.
 */
import type { Substitution } from "./segments.js";

/** Longest changed value, characters. */
export const MAX_SPAN = 96;
/** Characters that must agree after a change for the texts to be in step again. */
export const PROBE = 24;
/** Most changed values in one text. */
export const MAX_SUBSTITUTIONS = 4;
/** Shortest text compared: shorter texts are answers and questions, not templates. */
export const MIN_TEXT = 64;

/** One changed value: where it starts in `a` (and `b`: positions agree up to the first change), and both sides. */
export interface Variant {
  /** Position of the first change in `a`, characters. */
  readonly at: number;
  /** Substitutions that turn `a` into `b`, in order. */
  readonly subs: readonly Substitution[];
  /** The first changed value in `a` and in `b`. */
  readonly seen: string;
  readonly expected: string;
}

const VALUE_CHAR = /[A-Za-z0-9\-_:./+]/;

function commonRun(a: string, i: number, b: string, j: number): number {
  let k = 0;
  while (i + k < a.length && j + k < b.length && a.charCodeAt(i + k) === b.charCodeAt(j + k)) k++;
  return k;
}

/**
 * The changes that turn `a` into `b` when `a` is a variant of `b` (see the file header);
 * `undefined` when it is not, or when the texts are equal.
 */
export function variantOf(a: string, b: string): Variant | undefined {
  if (a.length < MIN_TEXT || b.length < MIN_TEXT || a === b) return undefined;
  const subs: Substitution[] = [];
  let first: { at: number; seen: string; expected: string } | undefined;
  let i = 0;
  let j = 0;
  let changed = 0;
  for (;;) {
    const k = commonRun(a, i, b, j);
    i += k;
    j += k;
    if (i === a.length && j === b.length) break;
    if (subs.length === MAX_SUBSTITUTIONS) return undefined;
    let da = -1;
    let db = -1;
    if (a.length - i <= MAX_SPAN && b.length - j <= MAX_SPAN) {
      // Both end within a value's length: the change runs to the end.
      da = a.length - i;
      db = b.length - j;
    } else {
      const window = b.slice(j, j + MAX_SPAN + PROBE);
      for (let d = 0; d <= MAX_SPAN && i + d + PROBE <= a.length; d++) {
        const at = window.indexOf(a.slice(i + d, i + d + PROBE), d === 0 ? 1 : 0);
        if (at !== -1 && at <= MAX_SPAN) {
          da = d;
          db = at;
          break;
        }
      }
      if (da === -1) return undefined;
    }
    // Widen to whole value-like runs on both sides (the same amount: the texts agree around the change).
    let start = 0;
    while (i - start > 0 && VALUE_CHAR.test(a[i - start - 1]!) && a[i - start - 1] === b[j - start - 1]) start++;
    let end = 0;
    while (i + da + end < a.length && j + db + end < b.length && VALUE_CHAR.test(a[i + da + end]!) && a[i + da + end] === b[j + db + end]) end++;
    // A value does not take the punctuation that ends its sentence.
    while (end > 0 && /[.:,]/.test(a[i + da + end - 1]!) && !VALUE_CHAR.test(a[i + da + end] ?? " ")) end--;
    const from = i - start;
    const seen = a.slice(from, i + da + end);
    const expected = b.slice(j - start, j + db + end);
    const previous = subs[subs.length - 1];
    if (previous !== undefined && from < previous.at + previous.length) return undefined;
    subs.push({ at: from, length: seen.length, text: expected });
    first ??= { at: from, seen, expected };
    changed += Math.max(seen.length, expected.length);
    i += da + end;
    j += db + end;
  }
  // The shared part must dominate: a template, not two different texts.
  if (first === undefined || changed * 4 > Math.min(a.length, b.length)) return undefined;
  return { at: first.at, subs, seen: first.seen, expected: first.expected };
}

/** What a changed value looks like, for findings: "a timestamp", "an id", "a number" or "a value". */
export function describeValue(samples: readonly string[]): string {
  const all = (re: RegExp) => samples.length > 0 && samples.every((s) => re.test(s));
  if (all(/\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}|\b(?:19|20)\d{2}\b|\b1[5-9]\d{8,11}\b/)) return "a timestamp";
  if (all(/^-?\d+(?:\.\d+)?$/)) return "a number";
  if (all(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i) || all(/^(?=.*\d)[A-Za-z0-9\-_:.]{3,}$/)) return "an id";
  return "a value";
}
