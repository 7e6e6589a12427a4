/**
 * `JSON.parse`, made right for object keys spelled with escapes.
 *
 * V8 from 12.8 (Node.js 24 and later) can read an escaped object key as the wrong key: when an
 * earlier parse left a map transition whose key matches the raw start of the escaped spelling,
 * the parser takes that transition (`{"h":[],"\\":0}` parsed once, then `{"h":1,"\"":2}` gives the
 * keys `h` and `\`, not `h` and `"`). See https://github.com/nodejs/node/issues/63785. The request
 * bodies prefix-router re-serializes (canonical SageMaker bodies, tenant fields) would then go out
 * with a member renamed, and the routing input would differ between two runs of the same body.
 *
 * So, on V8 12.8 and later (and engines of unknown version): `JSON.parse` first (it validates, and
 * its errors are the errors); a text with no escaped key — nearly every body, and any without a
 * backslash, found in one `indexOf` — returns that value. A text with one is read again by
 * {@link build}, which decodes every key and string on its own (a string *value* in `JSON.parse`
 * is not affected) and never looks up a transition. Older V8 (Node.js 20, 22) skips the check.
 * Cost of the check: it hops with `indexOf` from each string holding an escape to its end, one
 * hop per escaped quote (O(length), no allocation) — nothing measurable on a chat body whose
 * escapes are newlines, about 1.8× `JSON.parse` on a body of tool calls and results (JSON inside
 * strings), 3× on text with an escaped quote every 7 characters (`npm run bench:micro`).
 */

const QUOTE = 0x22;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;

/**
 * Whether a JSON.parse engine of this V8 version may misread escaped keys: from 12.8 (Node.js 24),
 * and any engine whose version is unknown. Node.js 20 (V8 11.3) and 22 (12.4) parse them right and
 * pay nothing for the check.
 */
export function keysNeedCheck(v8Version: string | undefined): boolean {
  const match = v8Version === undefined ? null : /^(\d+)\.(\d+)\./.exec(v8Version);
  if (match === null) return true;
  const major = Number(match[1]);
  return major > 12 || (major === 12 && Number(match[2]) >= 8);
}

/** Whether this runtime's `JSON.parse` gets the check. */
export const CHECK_KEYS: boolean = keysNeedCheck((globalThis as { process?: { versions?: { v8?: string } } }).process?.versions?.v8);

/** `JSON.parse(text)`, with object keys that carry escapes read right on every runtime. Throws what `JSON.parse` throws. */
export function parseJsonText(text: string): unknown {
  return CHECK_KEYS ? parseJsonTextChecked(text) : JSON.parse(text);
}

/** `JSON.parse(text)` checked for escaped keys, whatever the runtime: what {@link parseJsonText} does where the check is on (and what tests compare). */
export function parseJsonTextChecked(text: string): unknown {
  const value: unknown = JSON.parse(text);
  return hasEscapedKey(text) ? build(text) : value;
}

function skipSpace(text: string, i: number): number {
  for (;;) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
    i++;
  }
}

/** Reads the strings of a valid JSON text, keeping the position of the next backslash (found with `indexOf`). */
class Cursor {
  /** The first backslash at or after the string being read (-1: none left). Outside strings valid JSON has none. */
  backslash: number;
  /** Whether the string last read holds an escape. */
  escaped = false;

  constructor(private readonly text: string) {
    this.backslash = text.indexOf("\\");
  }

  /** The index after the closing quote of the string that opens at `open`. */
  stringEnd(open: number): number {
    const quote = closingQuote(this.text, open + 1);
    this.escaped = this.backslash !== -1 && this.backslash < quote;
    if (this.escaped) this.backslash = this.text.indexOf("\\", quote + 1);
    return quote + 1;
  }
}

/** Whether some object key of the valid JSON `text` is spelled with an escape. */
export function hasEscapedKey(text: string): boolean {
  // Valid JSON has backslashes inside strings only, each the first of an escape: hop from one to
  // the end of its string, and on to the first backslash after it. Strings without one are skipped.
  for (let backslash = text.indexOf("\\"); backslash !== -1; ) {
    const end = closingQuote(text, backslash + 2) + 1;
    if (text.charCodeAt(skipSpace(text, end)) === COLON) return true;
    backslash = text.indexOf("\\", end);
  }
  return false;
}

/** The first quote at or after `from` not escaped by an odd run of backslashes: inside a string of valid JSON, its closing quote. */
function closingQuote(text: string, from: number): number {
  for (;;) {
    const quote = text.indexOf('"', from);
    let before = quote - 1;
    while (text.charCodeAt(before) === 0x5c) before--;
    if (((quote - 1 - before) & 1) === 0) return quote;
    from = quote + 1;
  }
}

type Container = unknown[] | Record<string, unknown>;

function define(object: Record<string, unknown>, key: string, value: unknown): void {
  // As JSON.parse does (CreateDataProperty): `__proto__` is an own member, never the prototype.
  if (key === "__proto__") Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
  else object[key] = value;
}

/**
 * The value of the valid JSON `text`, built without `JSON.parse`'s object-key path: strings are
 * decoded one by one (a string value parses right), numbers by `Number` (JSON's number grammar is
 * a subset of its, with the same rounding). Iterative, so nesting of any depth `JSON.parse` took
 * is built without growing the call stack.
 */
function build(text: string): unknown {
  const containers: Container[] = [];
  const keys: string[] = [];
  const cursor = new Cursor(text);
  let i = 0;

  const readString = (): string => {
    const open = i;
    i = cursor.stringEnd(open);
    const quoted = text.slice(open, i);
    return cursor.escaped ? (JSON.parse(quoted) as string) : quoted.slice(1, -1);
  };
  /** Reads `"key" :` of the member starting at `i`. */
  const readKey = (): void => {
    i = skipSpace(text, i);
    keys.push(readString());
    i = skipSpace(text, i) + 1;
  };

  for (;;) {
    i = skipSpace(text, i);
    const c = text.charCodeAt(i);
    let value: unknown;
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      const container: Container = c === OPEN_OBJECT ? {} : [];
      const next = skipSpace(text, i + 1);
      if (text.charCodeAt(next) === c + 2) {
        // `{}` or `[]`: the closing bracket is two code points after the opening one.
        value = container;
        i = next + 1;
      } else {
        containers.push(container);
        i = next;
        if (c === OPEN_OBJECT) readKey();
        continue;
      }
    } else if (c === QUOTE) {
      value = readString();
    } else if (c === 0x74 || c === 0x66 || c === 0x6e) {
      value = c === 0x74 ? true : c === 0x66 ? false : null;
      i += c === 0x66 ? 5 : 4;
    } else {
      const start = i;
      for (let d = c; (d >= 0x30 && d <= 0x39) || d === 0x2d || d === 0x2b || d === 0x2e || d === 0x65 || d === 0x45; d = text.charCodeAt(++i));
      value = Number(text.slice(start, i));
    }
    // Put the value in its container; close the containers it ends.
    for (;;) {
      const parent = containers[containers.length - 1];
      if (parent === undefined) return value;
      if (Array.isArray(parent)) parent.push(value);
      else define(parent, keys[keys.length - 1] as string, value);
      i = skipSpace(text, i);
      const d = text.charCodeAt(i++);
      if (d === COMMA) {
        if (!Array.isArray(parent)) {
          keys.pop();
          readKey();
        }
        break;
      }
      value = containers.pop();
      if (d === CLOSE_OBJECT) keys.pop();
    }
  }
}
