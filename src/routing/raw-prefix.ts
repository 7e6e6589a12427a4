/**
 * The raw-prefix fallback: routing is never why a valid request fails. A body whose routing
 * input cannot be canonicalized — it nests deeper than `CANONICAL_MAX_DEPTH` (1,024) inside the part
 * the input covers, as a deep tool schema legitimately may — is routed on its raw prefix instead,
 * and its decision says `input: "raw"`.
 *
 * The router swaps the body strategies read for a stand-in whose routing input is that raw
 * prefix, so every strategy (built-in or custom, key or block chain) routes on it unchanged:
 *
 * - text mode: `{ prompt: <the body's JSON text> }`, the JSON text as `JSON.stringify` writes
 *   it (members in insertion order), cut after what any prefix length needs;
 * - bytes mode: the byte 0x00 followed by the body's bytes — its raw bytes when it came as text
 *   or bytes, else its JSON text as above. No JSON text starts with 0x00, so the stand-in is
 *   never parsed (and never equal to a canonical input).
 *
 * Cost: only on that path, O(prefix): {@link jsonPrefix} writes with an explicit stack and stops
 * once the prefix is full, whatever the body's depth or size.
 */
import { isRouterError } from "../errors.js";
import type { RoutingMode } from "./routing-input.js";
import type { InputKind } from "../types.js";

/** How a decision's routing input was read. */
export type { InputKind };

/** True for the error that sends a body to the raw-prefix fallback. */
export function needsRawPrefix(error: unknown): boolean {
  return isRouterError(error) && error.code === "ERR_TOO_DEEP";
}

const encoder = new TextEncoder();

/**
 * The stand-in body for `body` in `mode`, whose routing input is the body's raw prefix, covering
 * at least `units` code points (text) or bytes (bytes).
 */
export function rawPrefixBody(mode: RoutingMode, body: unknown, units: number): unknown {
  // Text mode reads at most 2 × its length in UTF-16 units of prompt text (routing-input.ts).
  if (mode === "text") return { prompt: jsonPrefix(body, 2 * units + 2) };
  let bytes: Uint8Array;
  if (typeof body === "string") bytes = encoder.encode(body.length > units ? body.slice(0, units + 1) : body);
  else if (body instanceof Uint8Array) bytes = body;
  else if (body instanceof ArrayBuffer) bytes = new Uint8Array(body);
  else if (ArrayBuffer.isView(body)) bytes = new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  else bytes = encoder.encode(jsonPrefix(body, units));
  const kept = Math.min(bytes.length, units);
  const out = new Uint8Array(kept + 1);
  out.set(bytes.subarray(0, kept), 1);
  return out;
}

/** A container being written: its members and how far the writer got. */
type Frame = { items: unknown[]; next: number } | { object: Record<string, unknown>; keys: string[]; next: number; wrote: boolean };

/**
 * The beginning of `value` as `JSON.stringify` writes it — at least `maxUnits` UTF-16 units, or
 * all of it — without recursion, so any depth is fine. Never throws: a value JSON cannot hold is
 * written as JSON.stringify's `null` (a BigInt as its digits), a cycle is written until the prefix
 * is full, a getter or `toJSON` that throws counts as `null`.
 */
export function jsonPrefix(value: unknown, maxUnits: number): string {
  const parts: string[] = [];
  let length = 0;
  const emit = (s: string): void => {
    parts.push(s);
    length += s.length;
  };
  const stack: Frame[] = [];
  /** A string, or — past the budget — the beginning of its JSON without the closing quote. */
  const writeString = (node: string): void => {
    let cut = Math.max(0, maxUnits - length) + 1;
    if (node.length <= cut) {
      emit(JSON.stringify(node));
      return;
    }
    // Never between the halves of a surrogate pair: JSON would escape the lone half.
    const last = node.charCodeAt(cut - 1);
    if (last >= 0xd800 && last <= 0xdbff) cut++;
    emit(JSON.stringify(node.slice(0, cut)).slice(0, -1));
  };
  /** Writes a resolved member; false when JSON leaves it out (undefined, a function, a symbol). */
  const write = (node: unknown): boolean => {
    if (node === undefined || typeof node === "function" || typeof node === "symbol") return false;
    if (node === null) emit("null");
    else if (typeof node === "string") writeString(node);
    else if (typeof node === "number") emit(Number.isFinite(node) ? String(node) : "null");
    else if (typeof node === "bigint" || typeof node === "boolean") emit(String(node));
    else if (Array.isArray(node)) {
      emit("[");
      stack.push({ items: node, next: 0 });
    } else {
      emit("{");
      stack.push({ object: node as Record<string, unknown>, keys: Object.keys(node), next: 0, wrote: false });
    }
    return true;
  };
  if (!write(resolve(value, ""))) return "";
  while (length < maxUnits && stack.length > 0) {
    const top = stack[stack.length - 1] as Frame;
    if ("items" in top) {
      if (top.next >= top.items.length) {
        emit("]");
        stack.pop();
        continue;
      }
      if (top.next > 0) emit(",");
      const i = top.next++;
      if (!write(member(top.items, i))) emit("null");
    } else {
      const key = top.keys[top.next++];
      if (key === undefined) {
        emit("}");
        stack.pop();
        continue;
      }
      const node = member(top.object, key);
      if (node === undefined || typeof node === "function" || typeof node === "symbol") continue;
      emit(`${top.wrote ? "," : ""}${JSON.stringify(key)}:`);
      top.wrote = true;
      write(node);
    }
  }
  return parts.join("");
}

/** `container[key]` with `toJSON` applied, as JSON.stringify reads it; `null` when reading throws. */
function member(container: object, key: string | number): unknown {
  try {
    return resolve((container as Record<string | number, unknown>)[key], String(key));
  } catch {
    return null;
  }
}

function resolve(node: unknown, key: string): unknown {
  if (node !== null && typeof node === "object" && typeof (node as { toJSON?: unknown }).toJSON === "function") {
    try {
      return (node as { toJSON(key: string): unknown }).toJSON(key);
    } catch {
      return null;
    }
  }
  return node;
}
