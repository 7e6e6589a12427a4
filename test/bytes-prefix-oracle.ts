/**
 * The bytes-mode routing input as it was computed before the JSON scanner (commit 6159664's
 * `bytesPrefix` and `canonicalPrefix`, copied verbatim and renamed): parse the whole body, then
 * write the beginning of its canonical JSON. The property tests compare the scanner against it.
 * (`parseJson` reads keys spelled with escapes right on every runtime, Node.js 24 included.)
 * Not a test file itself (vitest runs `*.test.ts` only).
 */
import { parseJson } from "../src/routing/canonical-json.js";
import { CANONICAL_MAX_DEPTH, RouterError } from "../src/errors.js";

const encoder = new TextEncoder();

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

const PREFIX_FULL: unique symbol = Symbol("prefix full");

export function oracleCanonicalPrefix(value: unknown, maxUnits: number): string {
  const parts: string[] = [];
  let length = 0;
  const stack: object[] = [];

  const emit = (s: string): void => {
    parts.push(s);
    length += s.length;
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
        emit(`${first ? "" : ","}${JSON.stringify(key)}:`);
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
      const head = JSON.stringify(s.slice(0, cut));
      emit(head.slice(0, -1)); // without the closing quote: a prefix of the full string's JSON
      return;
    }
    emit(JSON.stringify(s));
  };

  try {
    if (!write(resolve(value), 0)) {
      throw new RouterError("ERR_UNSERIALIZABLE", `Cannot canonicalize a top-level ${typeof value}: JSON has no representation for it`);
    }
  } catch (e) {
    if (e !== PREFIX_FULL) throw e;
  }
  return parts.join("");
}

function resolve(node: unknown): unknown {
  return node && typeof (node as { toJSON?: unknown }).toJSON === "function" ? (node as { toJSON(): unknown }).toJSON() : node;
}

export function oracleBytesPrefix(body: unknown, prefixLength: number): Uint8Array {
  let bytes: Uint8Array;
  if (body instanceof Uint8Array || typeof body === "string") {
    const json = tryParseJson(body);
    if (json.ok) bytes = encoder.encode(oracleCanonicalPrefix(json.value, prefixLength));
    else bytes = typeof body === "string" ? encoder.encode(body) : body;
  } else if (body instanceof ArrayBuffer) {
    return oracleBytesPrefix(new Uint8Array(body), prefixLength);
  } else if (ArrayBuffer.isView(body)) {
    return oracleBytesPrefix(new Uint8Array(body.buffer, body.byteOffset, body.byteLength), prefixLength);
  } else {
    // At least `prefixLength` UTF-16 units of canonical JSON make at least that many UTF-8 bytes.
    bytes = encoder.encode(oracleCanonicalPrefix(body, prefixLength));
  }
  return bytes.length > prefixLength ? bytes.subarray(0, prefixLength) : bytes;
}

function tryParseJson(body: string | Uint8Array): { ok: true; value: unknown } | { ok: false } {
  // A JSON text starts (after whitespace) with one of these; anything else is raw data and
  // need not be decoded at all.
  const first = firstNonSpace(body);
  if (first === -1 || !JSON_START.has(first)) return { ok: false };
  try {
    return { ok: true, value: parseJson(body) };
  } catch {
    return { ok: false };
  }
}

const JSON_START = new Set([..."{[\"-0123456789tfn"].map((c) => c.charCodeAt(0)));

function firstNonSpace(body: string | Uint8Array): number {
  const n = body.length;
  for (let i = 0; i < n; i++) {
    const c = typeof body === "string" ? body.charCodeAt(i) : (body[i] as number);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return c;
  }
  return -1;
}
