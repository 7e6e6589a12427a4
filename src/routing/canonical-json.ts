/**
 * Canonical JSON: one text per JSON value, so that equivalent request bodies give identical
 * routing input (and identical bytes on the wire, for servers that route on raw bytes).
 *
 * Semantics are fast-json-stable-stringify's (which serializes): object keys sorted by UTF-16
 * code units at every depth, no insignificant whitespace, `undefined` members, functions and
 * symbols dropped as `JSON.stringify` drops them (`null` inside arrays), `toJSON` honoured,
 * non-finite numbers as `null`, `-0` as `0`, lone surrogates escaped as `\uDXXX`.
 * Before serializing, one walk rejects what fast-json-stable-stringify would crash or loop on:
 * cycles (`ERR_CYCLE`, arrays included), BigInt (`ERR_UNSERIALIZABLE`) and nesting deeper than
 * {@link CANONICAL_MAX_DEPTH} (`ERR_TOO_DEEP`), so no input can overflow the stack.
 * Cost: O(size of the value), two passes over its containers, one over its strings.
 */
import stableStringify from "fast-json-stable-stringify";
import { CANONICAL_MAX_DEPTH, RouterError } from "../errors.js";
import { parseJsonText } from "../internal/json-parse.js";
import type { PrefixWriter } from "./prefix-writer.js";

/**
 * The canonical JSON text of a JavaScript value.
 *
 * @throws {RouterError} `ERR_CYCLE`, `ERR_UNSERIALIZABLE` or `ERR_TOO_DEEP`.
 * @example
 * canonicalize({ b: 1, a: [true, undefined] }) // '{"a":[true,null],"b":1}'
 */
export function canonicalize(value: unknown): string {
  check(value, 0, []);
  const text = stableStringify(value);
  if (text === undefined) {
    throw new RouterError("ERR_UNSERIALIZABLE", `Cannot canonicalize a top-level ${typeof value}: JSON has no representation for it`);
  }
  return text;
}

/**
 * Parses JSON text (a string, or UTF-8 bytes) and returns its canonical form. A `"__proto__"`
 * key stays an ordinary data member and never touches a prototype.
 *
 * @throws {RouterError} `ERR_INVALID_JSON` (with `position` when the parser reports one), or
 * any error of {@link canonicalize}.
 * @example
 * canonicalizeJson('{ "b": 1,\n  "a": 2 }') // '{"a":2,"b":1}'
 */
export function canonicalizeJson(text: string | Uint8Array): string {
  return canonicalize(parseJson(text));
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * `JSON.parse` as prefix-router reads bodies: JSON text as a string or UTF-8 bytes, errors typed,
 * and object keys written with escapes read as written on every runtime (Node.js 24's
 * `JSON.parse` can misread them). A `"__proto__"` key stays an ordinary data member.
 *
 * @throws {RouterError} `ERR_INVALID_JSON` (with `position` when the parser reports one); bytes
 * must be valid UTF-8.
 * @example
 * parseJson('{"a":[1,2]}') // { a: [1, 2] }
 */
export function parseJson(text: string | Uint8Array): unknown {
  let source: string;
  if (typeof text === "string") {
    source = text;
  } else if (text instanceof Uint8Array) {
    try {
      source = strictUtf8.decode(text);
    } catch (cause) {
      throw new RouterError("ERR_INVALID_JSON", "Invalid JSON: the bytes are not valid UTF-8", { cause });
    }
  } else {
    throw new TypeError(`Expected JSON text as a string or Uint8Array, got ${typeof text}`);
  }
  try {
    return parseJsonText(source);
  } catch (cause) {
    const message = cause instanceof Error ? cause.message : String(cause);
    const match = /position (\d+)/.exec(message);
    // V8 names no position when the text ends early; the error is then at its end.
    const position = match ? Number(match[1]) : /Unexpected end of JSON input/.test(message) ? source.length : undefined;
    throw new RouterError("ERR_INVALID_JSON", `Invalid JSON: ${message}`, {
      cause,
      ...(position === undefined ? {} : { position }),
    });
  }
}

function check(node: unknown, depth: number, stack: object[]): void {
  node = resolve(node);
  if (typeof node === "bigint") throw bigIntError();
  if (node === null || typeof node !== "object") return;
  enter(node, depth, stack);
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) check(node[i], depth + 1, stack);
  } else {
    for (const key of Object.keys(node)) check((node as Record<string, unknown>)[key], depth + 1, stack);
  }
  stack.pop();
}

/** Pushes a container on the ancestor stack, rejecting nesting too deep and cycles. */
function enter(node: object, depth: number, stack: object[]): void {
  if (depth >= CANONICAL_MAX_DEPTH) {
    throw new RouterError("ERR_TOO_DEEP", `Cannot canonicalize a value nested deeper than ${CANONICAL_MAX_DEPTH} levels`);
  }
  // The ancestor stack is as deep as the nesting (≤ CANONICAL_MAX_DEPTH), so a linear scan is cheap.
  if (stack.includes(node)) {
    throw new RouterError("ERR_CYCLE", "Cannot canonicalize a value that contains a reference cycle");
  }
  stack.push(node);
}

function bigIntError(): RouterError {
  return new RouterError("ERR_UNSERIALIZABLE", "Cannot canonicalize a BigInt: JSON has no representation for it");
}

/** Thrown internally to unwind once a prefix is long enough; never escapes. */
const PREFIX_FULL: unique symbol = Symbol("prefix full");

/**
 * Where {@link walkPrefix} writes: `text` appends JSON text (punctuation, numbers, literals), `string`
 * appends a string as a JSON literal, without its closing quote when `close` is false; both return
 * the UTF-16 length of what they appended, which is what the prefix is measured in.
 */
interface PrefixSink {
  text(s: string): number;
  string(s: string, close: boolean): number;
}

/**
 * @internal The beginning of `canonicalize(value)`: at least `maxUnits` UTF-16 units of it (or
 * all of it when shorter), stopping as soon as that much is written. Equal to
 * `canonicalize(value).slice(0, result.length)` — the property tests pin this. Only the part it
 * writes is checked for cycles, BigInt and depth: the rest of the value is never visited.
 * Cost: O(prefix + keys sorted on the way), not O(body) — bytes-mode routing of a large body.
 */
export function canonicalPrefix(value: unknown, maxUnits: number): string {
  const parts: string[] = [];
  walkPrefix(value, maxUnits, {
    text(s) {
      parts.push(s);
      return s.length;
    },
    string(s, close) {
      const json = JSON.stringify(s);
      parts.push(close ? json : json.slice(0, -1));
      return close ? json.length : json.length - 1;
    },
  });
  return parts.join("");
}

/**
 * @internal {@link canonicalPrefix} written into `out` as UTF-8 — the same walk, so the same values
 * are visited (`toJSON` called, cycles, BigInt and depth checked) and it stops at the same point:
 * `out` receives the first `out.limit` bytes of `UTF-8(canonicalize(value))` whenever that is
 * within the first `maxUnits` units (always, for `maxUnits` ≥ `out.limit`: a unit is ≥ 1 byte).
 * No intermediate strings: string members go straight from the value into `out`.
 */
export function writeCanonicalPrefix(value: unknown, maxUnits: number, out: PrefixWriter): void {
  walkPrefix(value, maxUnits, {
    text(s) {
      out.utf8(s);
      return s.length;
    },
    string(s, close) {
      return out.jsonString(s, close);
    },
  });
}

/** The walk of {@link canonicalPrefix}: canonical JSON of `value` into `sink` until `maxUnits` UTF-16 units are written. */
function walkPrefix(value: unknown, maxUnits: number, sink: PrefixSink): void {
  let length = 0;
  const stack: object[] = [];

  const emit = (s: string): void => {
    length += sink.text(s);
    if (length >= maxUnits) throw PREFIX_FULL;
  };

  /** Writes an already-resolved (toJSON applied) value; false when JSON drops it. */
  const write = (node: unknown, depth: number): boolean => {
    if (node === undefined) return false;
    if (typeof node === "number") {
      emit(Number.isFinite(node) ? `${node}` : "null");
      return true;
    }
    if (typeof node === "bigint") throw bigIntError();
    if (typeof node === "string") {
      writeString(node);
      return true;
    }
    if (typeof node !== "object") {
      const text = JSON.stringify(node) as string | undefined;
      if (text === undefined) return false;
      emit(text);
      return true;
    }
    if (node === null) {
      emit("null");
      return true;
    }
    enter(node, depth, stack);
    if (Array.isArray(node)) {
      emit("[");
      for (let i = 0; i < node.length; i++) {
        if (i > 0) emit(",");
        if (!write(resolve(node[i]), depth + 1)) emit("null");
      }
      emit("]");
    } else {
      emit("{");
      let first = true;
      for (const key of Object.keys(node).sort()) {
        const member = resolve((node as Record<string, unknown>)[key]);
        if (member === undefined || typeof member === "function" || typeof member === "symbol") continue;
        // One piece, as `,"key":`: the prefix is measured after the whole of it.
        length += (first ? 0 : sink.text(",")) + sink.string(key, true) + sink.text(":");
        if (length >= maxUnits) throw PREFIX_FULL;
        first = false;
        write(member, depth + 1);
      }
      emit("}");
    }
    stack.pop();
    return true;
  };

  const writeString = (s: string): void => {
    const room = maxUnits - length;
    // Every character is at least one unit of JSON, so the first `room + 1` characters fill
    // the prefix. Never cut between the two halves of a surrogate pair: JSON would escape the
    // lone half, which the full string does not contain.
    if (s.length > room + 1) {
      let cut = room + 1;
      const last = s.charCodeAt(cut - 1);
      if (last >= 0xd800 && last <= 0xdbff) cut++;
      // Without the closing quote: a prefix of the full string's JSON.
      length += sink.string(s.slice(0, cut), false);
      throw PREFIX_FULL;
    }
    length += sink.string(s, true);
    if (length >= maxUnits) throw PREFIX_FULL;
  };

  try {
    if (!write(resolve(value), 0)) {
      throw new RouterError("ERR_UNSERIALIZABLE", `Cannot canonicalize a top-level ${typeof value}: JSON has no representation for it`);
    }
  } catch (e) {
    if (e !== PREFIX_FULL) throw e;
  }
}

/** fast-json-stable-stringify's toJSON rule: any truthy value with a toJSON method. */
function resolve(node: unknown): unknown {
  return node && typeof (node as { toJSON?: unknown }).toJSON === "function" ? (node as { toJSON(): unknown }).toJSON() : node;
}
