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
import { canonicalPrefix, canonicalize, parseJson, writeCanonicalPrefix } from "./canonical-json.js";
import { type Collector, LengthCollector, TextCollector, Utf16Collector, truncateCodePoints } from "./prompt-collector.js";
import { RouterError } from "../errors.js";
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

/** Canonical JSON past the routing prefix counted towards a prompt's length, at most (units). */
const LENGTH_JSON_CAP = 1 << 20;

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
  const units = promptUnits(body);
  const lead = out.leadEnd;
  if (scope === "auto" && lead !== undefined && lead >= MIN_SCOPED_LENGTH && lead < prefix.length && units !== undefined && 2 * lead >= units) {
    // The lead ends at a message boundary: no surrogate pair is cut.
    return { prefix: text.slice(0, lead), units };
  }
  return { prefix, units };
}

/** @internal UTF-16 units of the whole prompt text of `body` (text mode), `undefined` when not known exactly. */
export function promptUnits(body: unknown): number | undefined {
  const out = new LengthCollector(LENGTH_JSON_CAP);
  renderPrompt(body, out);
  return out.exact ? out.units : undefined;
}

/** @internal Bytes of a raw body (bytes mode): its length when it is bytes or text, `undefined` for a value. */
export function bodyBytes(body: unknown): number | undefined {
  if (typeof body === "string") return body.length;
  if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) return body.byteLength;
  return undefined;
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

/**
 * Structure markers. Each is U+0000 followed by one ASCII letter. Content has every U+0000
 * doubled, so a single U+0000 followed by a letter can only be a marker: two bodies with
 * different message structure can never produce the same text.
 */
const M = {
  tools: "\u0000T",
  instructions: "\u0000S",
  message: "\u0000m",
  name: "\u0000n",
  content: "\u0000c",
  toolCalls: "\u0000F",
  toolCallId: "\u0000I",
  prompt: "\u0000p",
  input: "\u0000i",
  text: "\u0000t",
  image: "\u0000g",
  audio: "\u0000a",
  file: "\u0000f",
  other: "\u0000o",
} as const;

/**
 * The prompt text of an OpenAI-style body, in rendering order, with structure markers. Stops
 * once at least `budget` UTF-16 units are collected (the caller keeps a prefix of it).
 *
 * - `tools`: marker + canonical JSON of the array. First in chat and completions bodies (chat
 *   templates render tools before the messages); last in Responses API bodies (no `messages`,
 *   no `prompt`), which read `instructions`, then `input` items, then `tools`: message text
 *   first, as SageMaker's OpenAI-compatible routing reads it.
 * - `instructions` (responses): marker + the text.
 * - `messages` (chat) and `input` items with a `role` (responses): per message, a marker, the
 *   role, optionally a name marker and the name, then a content marker and the content. String
 *   content counts as one text part (chat templates render `"hi"` and
 *   `[{ type: "text", text: "hi" }]` alike); array content part by part: text parts (`text`, `input_text`, `output_text`,
 *   `refusal`) by their text, images by their URL (`image_url.url` or `image_url`), audio by its
 *   data, files by `file_id`, else `filename` + `file_data`; any other part by its canonical JSON.
 *   Assistant `tool_calls` and a tool message's `tool_call_id` follow as canonical JSON / text.
 * - `prompt` (completions) and `input` (embeddings, responses): a string as is; an array of
 *   strings one by one; token arrays as canonical JSON.
 * @internal
 */
export function promptText(body: unknown, budget = Number.POSITIVE_INFINITY): string {
  const out = new TextCollector(budget);
  renderPrompt(body, out);
  return out.text();
}

/**
 * @internal Writes the text-mode routing input of `body` — the first `maxPoints` code points of its
 * prompt text — into `out` (begun with a limit of at least 4 × `maxPoints` bytes) as UTF-16LE, the
 * pieces straight from the body: equal to the UTF-16LE bytes of `textPrefix(body, maxPoints)`.
 */
export function writeTextInput(body: unknown, maxPoints: number, out: PrefixWriter): void {
  renderPrompt(body, new Utf16Collector(maxPoints, out));
}

/** The walk of {@link promptText}: the body's prompt pieces, in rendering order, into `out` until it is full. */
function renderPrompt(body: unknown, out: Collector): void {
  const obj = asObject(body);
  // A Responses API body (no `messages`, no `prompt`): instructions, input items, then tools.
  if (obj.messages === undefined && obj.prompt === undefined) {
    const instructions = typeof obj.instructions === "string";
    if (instructions) out.field(M.instructions, obj.instructions as string);
    if (Array.isArray(obj.input)) pushItems(out, obj.input, instructions);
    else {
      if (instructions) out.markLead();
      if (obj.input !== undefined) pushPromptLike(out, M.input, obj.input);
    }
    if (obj.tools !== undefined) out.json(M.tools, obj.tools);
    return;
  }
  if (obj.tools !== undefined) out.json(M.tools, obj.tools);
  if (typeof obj.instructions === "string") out.field(M.instructions, obj.instructions);
  if (Array.isArray(obj.messages)) {
    let leading = true;
    let system = false;
    const single = oneAfterLead(obj.messages);
    for (const message of obj.messages) {
      if (out.full) break;
      if (leading && !isSystem(message)) {
        leading = false;
        if (system && single) out.markLead();
      }
      system ||= leading;
      pushMessage(out, message);
    }
  }
  if (obj.prompt !== undefined) pushPromptLike(out, M.prompt, obj.prompt);
  if (obj.input !== undefined) pushPromptLike(out, M.input, obj.input);
}

function asObject(body: unknown): Record<string, unknown> {
  let value = body;
  if (typeof body === "string" || body instanceof Uint8Array) {
    value = parseJson(body);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new RouterError(
      "ERR_INVALID_BODY",
      `Text mode reads an OpenAI-style JSON object body (chat, completions, responses or embeddings), got ${
        value === null ? "null" : Array.isArray(value) ? "an array" : typeof value
      }`,
    );
  }
  return value as Record<string, unknown>;
}

function pushMessage(out: Collector, message: unknown): void {
  if (message === null || typeof message !== "object") {
    out.push(M.other, canonicalizeOrString(message));
    return;
  }
  const m = message as Record<string, unknown>;
  out.field(M.message, typeof m.role === "string" ? m.role : "");
  if (typeof m.name === "string") out.field(M.name, m.name);
  out.push(M.content);
  pushContent(out, m.content);
  if (m.tool_calls !== undefined) out.json(M.toolCalls, m.tool_calls);
  if (typeof m.tool_call_id === "string") out.field(M.toolCallId, m.tool_call_id);
}

function pushContent(out: Collector, content: unknown): void {
  if (typeof content === "string") {
    if (content.length > 0) out.field(M.text, content);
    return;
  }
  if (!Array.isArray(content)) {
    if (content !== undefined && content !== null) out.json(M.other, content);
    return;
  }
  for (const part of content) {
    if (out.full) return;
    pushPart(out, part);
  }
}

function pushPart(out: Collector, part: unknown): void {
  if (typeof part === "string") {
    out.field(M.text, part);
    return;
  }
  if (part === null || typeof part !== "object") {
    out.push(M.other, canonicalizeOrString(part));
    return;
  }
  const p = part as Record<string, unknown>;
  const text = typeof p.text === "string" ? p.text : typeof p.refusal === "string" ? p.refusal : undefined;
  if (text !== undefined) {
    out.field(M.text, text);
    return;
  }
  const image = p.image_url;
  if (typeof image === "string") {
    out.field(M.image, image);
    return;
  }
  if (image !== null && typeof image === "object" && typeof (image as { url?: unknown }).url === "string") {
    out.field(M.image, (image as { url: string }).url);
    return;
  }
  const audio = p.input_audio;
  if (audio !== null && typeof audio === "object" && typeof (audio as { data?: unknown }).data === "string") {
    out.field(M.audio, (audio as { data: string }).data);
    return;
  }
  const file = (p.file ?? p) as Record<string, unknown>;
  if (typeof file.file_id === "string") {
    out.field(M.file, file.file_id);
    return;
  }
  if (typeof file.file_data === "string") {
    out.field(M.file, typeof file.filename === "string" ? file.filename : "");
    out.field(M.file, file.file_data);
    return;
  }
  out.json(M.other, part);
}

/**
 * Exactly one message follows the leading system messages: a single-turn request (a question
 * after a system prompt). A conversation's later turns keep their own prefix as key, so a
 * conversation moves at most once, after its first turn, when it has little history to lose.
 */
function oneAfterLead(messages: readonly unknown[]): boolean {
  let i = 0;
  while (i < messages.length && isSystem(messages[i])) i++;
  return messages.length - i === 1;
}

/** A system or developer message: what a leading system part is made of. */
function isSystem(message: unknown): boolean {
  if (message === null || typeof message !== "object") return false;
  const role = (message as { role?: unknown }).role;
  return role === "system" || role === "developer";
}

/** Responses API input items, marking where the leading system part (instructions, system items) ends. */
function pushItems(out: Collector, items: readonly unknown[], instructions: boolean): void {
  let system = instructions;
  let leading = true;
  const single = oneAfterLead(items);
  for (const item of items) {
    if (out.full) return;
    if (leading && !isSystem(item)) {
      leading = false;
      if (system && single) out.markLead();
    }
    system ||= leading;
    pushPromptItem(out, M.input, item);
  }
}

function pushPromptItem(out: Collector, marker: string, item: unknown): void {
  if (typeof item === "string") out.field(marker, item);
  else if (item !== null && typeof item === "object" && !Array.isArray(item) && "role" in item) pushMessage(out, item);
  else if (item !== null && typeof item === "object" && !Array.isArray(item) && "type" in item) pushPart(out, item);
  else out.json(marker, item);
}

function pushPromptLike(out: Collector, marker: string, value: unknown): void {
  if (typeof value === "string") {
    out.field(marker, value);
    return;
  }
  if (Array.isArray(value)) {
    for (const item of value) {
      if (out.full) return;
      pushPromptItem(out, marker, item);
    }
    return;
  }
  out.push(marker, canonicalizeOrString(value));
}

function canonicalizeOrString(value: unknown): string {
  return value === undefined ? "" : canonicalize(value);
}

export { truncateCodePoints };
