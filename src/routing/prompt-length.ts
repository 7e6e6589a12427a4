/**
 * A prompt's length: the size of a request's whole routing input in the unit its key counts —
 * UTF-16 units of the prompt text (structure markers included) in text mode, bytes in bytes mode.
 * Predictions turn it into tokens (`TokenRatio` learns characters per token from it) and token
 * saturation estimates a request's prefill from it. Measured here, one way for every reader.
 */
import { LengthCollector } from "./prompt-collector.js";
import { promptText, renderPrompt } from "./prompt-text.js";

/** Canonical JSON past the routing prefix counted towards a prompt's length, at most (units). */
const LENGTH_JSON_CAP = 1 << 20;

/** How the routing input is read (`RoutingMode`, routing-input.ts). */
type Mode = "text" | "bytes";

/** The part of the routing input a routing key covers. */
export interface PrefixSpan {
  /** Its length (characters or bytes). */
  readonly length: number;
  /** The most the key reads (`prefixLength`): a shorter prefix is the whole input. */
  readonly limit: number;
}

/**
 * @internal The length of the whole routing input of `body`, of which the key covers `prefix`.
 * `"exact"`: only when it is known exactly, else `undefined` — text mode counts the rendered
 * prompt (up to 1 MiB of canonical JSON parts), bytes mode knows a prefix shorter than its limit
 * or a raw body's size. `"estimate"`: always a figure, at least the prefix — the whole prompt text,
 * or the body's size (an object body by its JSON text).
 */
export function measurePrompt(mode: Mode, body: unknown, prefix: PrefixSpan, how: "exact"): number | undefined;
export function measurePrompt(mode: Mode, body: unknown, prefix: PrefixSpan, how: "estimate"): number;
export function measurePrompt(mode: Mode, body: unknown, prefix: PrefixSpan, how: "exact" | "estimate"): number | undefined {
  if (how === "exact") {
    if (mode === "text") return promptUnits(body);
    return prefix.length < prefix.limit ? prefix.length : bodyBytes(body);
  }
  let units = prefix.length;
  if (mode === "text") units = promptText(body).length;
  else if (body instanceof Uint8Array || typeof body === "string") units = body.length;
  else if (ArrayBuffer.isView(body)) units = body.byteLength;
  else {
    try {
      units = JSON.stringify(body)?.length ?? prefix.length;
    } catch {
      // A body the key could read but JSON.stringify cannot (a BigInt): the prefix is what is known.
    }
  }
  return Math.max(units, prefix.length);
}

/** @internal UTF-16 units of the whole prompt text of `body` (text mode), `undefined` when not known exactly. */
export function promptUnits(body: unknown): number | undefined {
  const out = new LengthCollector(LENGTH_JSON_CAP);
  renderPrompt(body, out);
  return out.exact ? out.units : undefined;
}

/** Bytes of a raw body (bytes mode): its length when it is bytes or text, `undefined` for a value. */
function bodyBytes(body: unknown): number | undefined {
  if (typeof body === "string") return body.length;
  if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) return body.byteLength;
  return undefined;
}
