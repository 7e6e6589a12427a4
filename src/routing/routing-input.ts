/**
 * Routing input: exactly the prefix of a request that the routing key hashes. Two modes mirror
 * SageMaker's prefix-aware routing:
 *
 * - `bytes` (native Invoke API): the first `prefixLength` bytes of the body — of its canonical
 *   JSON when the body is JSON (an object, or JSON text / UTF-8 JSON bytes), of the raw bytes
 *   otherwise (CSV, images, anything that does not parse as JSON).
 * - `text` (OpenAI-compatible API): the first `prefixLength` Unicode code points of the prompt
 *   text extracted from an OpenAI-style body: `tools`, `messages`, `prompt` for chat and
 *   completions (the order a chat template renders them); `instructions`, `input`, `tools` for
 *   the Responses API. See {@link promptText}.
 *
 * Key scope (text mode): with `keyScope: "auto"` (the default), a single-turn prompt (one message
 * after the leading system part) whose leading system part — tools, instructions, the system and
 * developer messages before the first other message — is at least {@link MIN_SCOPED_LENGTH} long,
 * ends before the first `prefixLength` code points, and makes at least half of the whole prompt,
 * has that leading part as its routing input: requests
 * that share a system prompt shorter than `prefixLength` share a key, instead of each getting its
 * own from the question that follows. `"prefix"` always keeps the first `prefixLength` code points.
 *
 * Cost: both modes read the body only until the prefix is full, and write it straight into the
 * buffer that is hashed ({@link PrefixWriter}). Bytes mode still sorts the keys of every object it
 * enters; JSON text or bytes are scanned, not parsed: a validating pass over the whole body (its
 * validity decides between canonical JSON and raw bytes) that skips string contents at memchr speed
 * (`internal/json-scan.ts`), then the canonical prefix is written from the scanned spans
 * (`internal/canonical-tape.ts`) — byte for byte what `canonicalize(JSON.parse(text))` begins with.
 */
import { canonicalPrefix, parseJson, writeCanonicalPrefix } from "./canonical-json.js";
import { TextCollector, truncateCodePoints } from "./prompt-collector.js";
import { promptText, renderPrompt } from "./prompt-text.js";
import { measurePrompt } from "./prompt-length.js";
import { writeCanonicalTape } from "./canonical-tape.js";
import { scanJson } from "./json-scan.js";
import { parseJsonText } from "../internal/json-parse.js";
import { PrefixWriter } from "./prefix-writer.js";

/** How the routing input is read from a body. */
export type RoutingMode = "text" | "bytes";

/** Smallest and largest accepted `prefixLength` (SageMaker's `PrefixLength` range). */
export const MIN_PREFIX_LENGTH = 1024;
export const MAX_PREFIX_LENGTH = 65_536;

/**
 * What the text-mode routing key covers: `"auto"`, the leading system part when it is a short
 * system prompt followed by little (see the file header), else the first `prefixLength` code
 * points; `"prefix"`, always the first `prefixLength` code points (SageMaker's rule).
 */
export type KeyScope = "auto" | "prefix";

/** The default {@link KeyScope}. */
export const DEFAULT_KEY_SCOPE: KeyScope = "auto";

/**
 * Shortest leading system part (UTF-16 units) a key is scoped to: shorter ones save too little
 * prefill to be worth one key for everybody who shares them (the smallest `prefixLength`).
 */
export const MIN_SCOPED_LENGTH = 1024;

/** Options of {@link routingInput}. */
export interface RoutingInputOptions {
  /** How to read the body. */
  mode: RoutingMode;
  /** Bytes (`bytes` mode) or code points (`text` mode) kept. From 1,024 to 65,536. */
  prefixLength: number;
  /** Text mode: what the key covers. @default "auto" */
  keyScope?: KeyScope;
}

const encoder = new TextEncoder();

/**
 * Returns the routing input of `body`: a string in text mode, bytes in bytes mode. Print it in
 * your tests to see what two services send to the router.
 *
 * @example
 * routingInput({ messages: [{ role: "user", content: "hi" }] }, { mode: "text", prefixLength: 4096 })
 * // "\u0000muser\u0000c\u0000thi"
 */
export function routingInput(body: unknown, options: { mode: "text"; prefixLength: number; keyScope?: KeyScope }): string;
export function routingInput(body: unknown, options: { mode: "bytes"; prefixLength: number; keyScope?: KeyScope }): Uint8Array;
export function routingInput(body: unknown, options: RoutingInputOptions): string | Uint8Array;
export function routingInput(body: unknown, options: RoutingInputOptions): string | Uint8Array {
  // A copy: the caller owns it (bytesPrefix returns a view of its writer's buffer).
  if (options.mode === "bytes") return new Uint8Array(bytesPrefix(body, options.prefixLength));
  return textRouting(body, options.prefixLength, options.keyScope ?? DEFAULT_KEY_SCOPE).prefix;
}

/** @internal A text-mode routing input and the length of the whole prompt it comes from. */
export interface TextRouting {
  /** What the key hashes. */
  readonly prefix: string;
  /** UTF-16 units of the whole prompt text (structure markers included), `undefined` when not known exactly. */
  readonly units: number | undefined;
}

/** @internal The text-mode routing input of `body` under `scope` (see the file header). */
export function textRouting(body: unknown, prefixLength: number, scope: KeyScope): TextRouting {
  const out = new TextCollector(prefixLength * 2);
  renderPrompt(body, out);
  const text = out.text();
  const prefix = truncateCodePoints(text, prefixLength);
  const units = measurePrompt("text", body, { length: prefix.length, limit: prefixLength }, "exact");
  const lead = out.leadEnd;
  if (scope === "auto" && lead !== undefined && lead >= MIN_SCOPED_LENGTH && lead < prefix.length && units !== undefined && 2 * lead >= units) {
    // The lead ends at a message boundary: no surrogate pair is cut.
    return { prefix: text.slice(0, lead), units };
  }
  return { prefix, units };
}

/** @internal The first `prefixLength` bytes of the body's canonical JSON, or of its raw bytes (a view of `out`'s buffer). */
export function bytesPrefix(body: unknown, prefixLength: number, out: PrefixWriter = new PrefixWriter()): Uint8Array {
  // A body's toJSON may route another request through the same router while this one is written.
  const w = out.busy ? new PrefixWriter() : out;
  w.busy = true;
  try {
    w.begin(prefixLength);
    writeBytesInput(body, w);
  } finally {
    w.busy = false;
  }
  return w.bytes.subarray(0, w.length);
}

/**
 * @internal Writes the bytes-mode routing input of `body` into `out` (begun with the prefix length
 * as its limit): the beginning of its canonical JSON when it is a value, or JSON text or bytes that
 * parse; else its raw bytes (CSV, images, anything that does not parse as JSON).
 */
export function writeBytesInput(body: unknown, out: PrefixWriter): void {
  if (body instanceof Uint8Array) writeJsonBytes(body, out);
  else if (typeof body === "string") writeJsonText(body, out);
  else if (body instanceof ArrayBuffer) writeJsonBytes(new Uint8Array(body), out);
  else if (ArrayBuffer.isView(body)) writeJsonBytes(new Uint8Array(body.buffer, body.byteOffset, body.byteLength), out);
  // At least `limit` UTF-16 units of canonical JSON make at least that many UTF-8 bytes.
  else writeCanonicalPrefix(body, out.limit, out);
}

/**
 * Nesting from which JSON bytes go through `JSON.parse` and {@link canonicalPrefix} instead of the
 * scanner: that walk rejects nesting deeper than `CANONICAL_MAX_DEPTH` (1,024) with `ERR_TOO_DEEP`
 * when it reaches it, and keeping it there keeps exactly those errors.
 */
const DEEP = 1000;

function writeJsonBytes(bytes: Uint8Array, out: PrefixWriter): void {
  const first = firstNonSpace(bytes);
  const tape = first !== -1 && JSON_START.has(first) ? scanJson(bytes, out.tape) : undefined;
  if (tape !== undefined) out.tape = tape.entries;
  if (tape === undefined) out.copy(bytes, 0, bytes.length);
  else if (tape.depth < DEEP) writeCanonicalTape(bytes, tape, out);
  else out.utf8(canonicalPrefix(parseJson(bytes), out.limit));
}

function writeJsonText(text: string, out: PrefixWriter): void {
  const first = firstNonSpace(text);
  if (first === -1 || !JSON_START.has(first)) {
    out.utf8(text);
  } else if ((text as { isWellFormed?: () => boolean }).isWellFormed?.() === true) {
    // Well-formed text parses as its UTF-8 does, and if it is not JSON, those are its raw bytes.
    writeJsonBytes(encoder.encode(text), out);
  } else {
    // A lone surrogate: JSON.parse keeps it in a string (canonical JSON escapes it), UTF-8 cannot.
    let value: unknown;
    try {
      value = parseJsonText(text);
    } catch {
      out.utf8(text);
      return;
    }
    out.utf8(canonicalPrefix(value, out.limit));
  }
}

// A JSON text starts (after whitespace) with one of these; anything else is raw data and need not
// be scanned at all.
const JSON_START = new Set([..."{[\"-0123456789tfn"].map((c) => c.charCodeAt(0)));

function firstNonSpace(body: string | Uint8Array): number {
  const n = body.length;
  for (let i = 0; i < n; i++) {
    const c = typeof body === "string" ? body.charCodeAt(i) : (body[i] as number);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return c;
  }
  return -1;
}

/** @internal The first `prefixLength` code points of the body's prompt text. */
export function textPrefix(body: unknown, prefixLength: number): string {
  const text = promptText(body, prefixLength * 2);
  return truncateCodePoints(text, prefixLength);
}

export { truncateCodePoints };
