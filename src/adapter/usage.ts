/**
 * Token usage read from a response body while it streams past, without buffering it: one reader
 * for the OpenAI adapter's response bodies and the SageMaker adapter's responses and response
 * streams.
 *
 * - Server-sent events ({@link SseUsageScanner}, framed by `eventsource-parser`, see sse.ts): an
 *   event is parsed only when its data contains `"usage"` followed by an object (OpenAI and vLLM
 *   send `usage` in the last chunk when `stream_options.include_usage` is set; the Responses API
 *   sends it in `response.completed`). An `{"error": …}` event, or an `error` /
 *   `response.failed` event, marks the stream as a server error.
 * - JSON lines, or one JSON object per part, however the parts are cut (TGI-style servers put
 *   usage in their last JSON line): lines are split incrementally and parsed on the same rule.
 * - {@link StreamUsageScanner} reads either, by the first byte (a SageMaker stream may carry
 *   either). Cost: one UTF-8 decode and one substring search per event or line; memory: one
 *   partial event or line, at most {@link MAX_LINE} characters.
 * - Whole JSON bodies ({@link JsonUsageScanner}, {@link usageOfBody}): the last
 *   {@link JSON_TAIL_BYTES} bytes are kept (OpenAI-style bodies put `usage` after the choices /
 *   data / output), and the last `"usage": {…}` object in them is parsed.
 *
 * Usage is reported only when the server sends `cached_tokens`
 * (`usage.prompt_tokens_details.cached_tokens`, or `usage.input_tokens_details.cached_tokens` on
 * the Responses API): a server that does not report cached tokens leaves the cached-token ratio
 * `null` instead of pretending nothing was cached.
 */
import type { ReleaseInfo } from "../types.js";
import { firstNonSpace, isJsonSpace } from "./json.js";
import { type SseEvent, SseReader } from "./sse.js";

/** Bytes of a JSON body kept to find its `usage`. */
export const JSON_TAIL_BYTES = 64 * 1024;
/** Longest streamed line or event scanned; a longer one (say, a huge `response.completed`) is skipped. */
export const MAX_LINE = 8 * 1024 * 1024;

/** Reads usage out of a body chunk by chunk. */
export interface UsageScanner {
  push(chunk: Uint8Array): void;
  /** Usage found, once the body has ended (call it once). */
  result(): ReleaseInfo | undefined;
  /** True when the stream carried an error event. */
  readonly sawError: boolean;
  /** True once the stream delivered its usage report or `[DONE]`: nothing that matters is left. */
  readonly completed: boolean;
}

/** Picks the scanner for a response's content type; `undefined` for bodies that carry no usage. */
export function scannerFor(contentType: string | null): UsageScanner | undefined {
  if (contentType === null) return undefined;
  const type = contentType.toLowerCase();
  if (type.includes("text/event-stream")) return new SseUsageScanner();
  if (type.includes("json")) return new JsonUsageScanner();
  return undefined;
}

/** Extracts {@link ReleaseInfo} from a parsed response object, an SSE chunk or a Responses API event. */
export function usageOf(value: unknown): ReleaseInfo | undefined {
  if (value === null || typeof value !== "object") return undefined;
  const v = value as { usage?: unknown; response?: { usage?: unknown } };
  const usage = v.usage ?? (v.response !== null && typeof v.response === "object" ? v.response.usage : undefined);
  return readUsage(usage);
}

function readUsage(usage: unknown): ReleaseInfo | undefined {
  if (usage === null || typeof usage !== "object") return undefined;
  const u = usage as Record<string, unknown>;
  const prompt = typeof u.prompt_tokens === "number" ? u.prompt_tokens : u.input_tokens;
  const details = (u.prompt_tokens_details ?? u.input_tokens_details) as Record<string, unknown> | null | undefined;
  const cached = details !== null && typeof details === "object" ? details.cached_tokens : undefined;
  if (typeof prompt !== "number" || typeof cached !== "number") return undefined;
  // Counts a server could not mean (negative, fractional, more cached than prompt) are dropped.
  if (!Number.isSafeInteger(prompt) || !Number.isSafeInteger(cached) || cached < 0 || cached > prompt) return undefined;
  return { promptTokens: prompt, cachedTokens: cached };
}

/** `"usage"` followed by an object (not `null`): the only lines worth parsing. */
const USAGE_OBJECT = /"usage"\s*:\s*\{/;

/** True for the data of an event or line that may hold usage: parse only those. */
function mayHoldUsage(text: string): boolean {
  return text.startsWith("{") && USAGE_OBJECT.test(text);
}

/** The usage in JSON text, or `undefined` when it holds none or is not JSON. */
function parseUsage(text: string): ReleaseInfo | undefined {
  try {
    return usageOf(JSON.parse(text));
  } catch {
    return undefined;
  }
}

/**
 * Finds the last usage report in a stream of server-sent events. `onEvent`, when given, sees
 * every event first (the OpenAI adapter reads the Responses API's events through it).
 */
export class SseUsageScanner implements UsageScanner {
  private readonly reader: SseReader;
  private found: ReleaseInfo | undefined;
  private sawDone = false;
  sawError = false;

  get completed(): boolean {
    return this.sawDone || this.found !== undefined;
  }

  constructor(onEvent?: (event: SseEvent) => void) {
    this.reader = new SseReader((event) => {
      onEvent?.(event);
      this.event(event);
    }, MAX_LINE);
  }

  push(chunk: Uint8Array): void {
    this.reader.push(chunk);
  }

  result(): ReleaseInfo | undefined {
    this.reader.end();
    return this.found;
  }

  private event({ event, data }: SseEvent): void {
    if (data === "[DONE]") this.sawDone = true;
    else if (event === "error" || event === "response.failed" || data.startsWith('{"error"')) this.sawError = true;
    else if (mayHoldUsage(data)) this.found = parseUsage(data) ?? this.found;
  }
}

/** Finds the last usage report in JSON lines, or in parts that are each one JSON object. */
class JsonLinesUsageScanner implements UsageScanner {
  private readonly decoder = new TextDecoder();
  private line = "";
  /** The current line outgrew {@link MAX_LINE}: it is dropped up to its newline. */
  private overflow = false;
  private found: ReleaseInfo | undefined;
  private sawDone = false;
  sawError = false;

  get completed(): boolean {
    return this.sawDone || this.found !== undefined;
  }

  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    const text = this.decoder.decode(chunk, { stream: true });
    let start = 0;
    for (let nl = text.indexOf("\n"); nl !== -1; nl = text.indexOf("\n", start)) {
      this.append(text.slice(start, nl));
      this.endLine();
      start = nl + 1;
    }
    this.append(text.slice(start));
    // A part that is one whole JSON object without newline framing (a SageMaker payload part)
    // is complete on its own; kept, it would run into the next part and never parse.
    if (!this.overflow && this.line.endsWith("}") && this.line.trimStart().startsWith("{") && this.parse(this.line)) {
      this.line = "";
    }
  }

  result(): ReleaseInfo | undefined {
    this.append(this.decoder.decode());
    this.endLine();
    return this.found;
  }

  private append(s: string): void {
    if (this.overflow || s.length === 0) return;
    if (this.line.length + s.length > MAX_LINE) {
      this.overflow = true;
      this.line = "";
      return;
    }
    this.line += s;
  }

  private endLine(): void {
    const line = this.line.trim();
    const overflow = this.overflow;
    this.line = "";
    this.overflow = false;
    if (overflow) return;
    if (line === "[DONE]") this.sawDone = true;
    else if (line.startsWith('{"error"')) this.sawError = true;
    else if (mayHoldUsage(line)) this.parse(line);
  }

  /** Parses `text` as JSON and keeps the usage it reports; false when it is not JSON. */
  private parse(text: string): boolean {
    try {
      const info = usageOf(JSON.parse(text));
      if (info !== undefined) this.found = info;
      return true;
    } catch {
      return false;
    }
  }
}

/**
 * Finds the last usage report in a stream whose framing is known only from its first byte: JSON
 * lines or one object per part when it opens with `{` or `[`, server-sent events otherwise
 * (SageMaker streams carry whatever the container writes).
 */
export class StreamUsageScanner implements UsageScanner {
  private inner: UsageScanner | undefined;

  get sawError(): boolean {
    return this.inner?.sawError ?? false;
  }

  get completed(): boolean {
    return this.inner?.completed ?? false;
  }

  push(chunk: Uint8Array): void {
    if (this.inner === undefined) {
      const first = firstNonSpace(chunk);
      if (first === -1) return; // nothing to go by yet; whitespace carries no usage
      this.inner = first === 0x7b /* { */ || first === 0x5b /* [ */ ? new JsonLinesUsageScanner() : new SseUsageScanner();
    }
    this.inner.push(chunk);
  }

  result(): ReleaseInfo | undefined {
    return this.inner?.result();
  }
}

/** Keeps the tail of a JSON body and reads its usage at the end. */
export class JsonUsageScanner implements UsageScanner {
  private chunks: Uint8Array[] = [];
  private bytes = 0;
  readonly sawError = false;
  /** A JSON body is complete only at its end. */
  readonly completed = false;

  push(chunk: Uint8Array): void {
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    while (this.chunks.length > 1 && this.bytes - (this.chunks[0] as Uint8Array).length >= JSON_TAIL_BYTES) {
      this.bytes -= (this.chunks.shift() as Uint8Array).length;
    }
  }

  result(): ReleaseInfo | undefined {
    if (this.bytes === 0) return undefined;
    const all = new Uint8Array(this.bytes);
    let offset = 0;
    for (const c of this.chunks) {
      all.set(c, offset);
      offset += c.length;
    }
    this.chunks = [];
    return usageOfBody(all);
  }
}

const decoder = new TextDecoder();

/**
 * Usage of a whole response body: the last `"usage": {…}` in its last {@link JSON_TAIL_BYTES}
 * bytes; `undefined` for anything but non-empty bytes.
 */
export function usageOfBody(body: unknown): ReleaseInfo | undefined {
  if (!(body instanceof Uint8Array) || body.length === 0) return undefined;
  const tail = body.length > JSON_TAIL_BYTES ? body.subarray(body.length - JSON_TAIL_BYTES) : body;
  return findUsage(decoder.decode(tail));
}

/** The last parseable `"usage": {…}` object in `text` that carries token counts (at most 4 tries). */
export function findUsage(text: string): ReleaseInfo | undefined {
  let end = text.length;
  for (let tries = 0; tries < 4; tries++) {
    const at = text.lastIndexOf('"usage"', end);
    if (at === -1) return undefined;
    end = at - 1;
    if (at > 0 && text.charCodeAt(at - 1) === 0x5c /* \ */) continue;
    let i = at + 7;
    while (isJsonSpace(text.charCodeAt(i))) i++;
    if (text.charCodeAt(i) !== 0x3a /* : */) continue;
    i++;
    while (isJsonSpace(text.charCodeAt(i))) i++;
    if (text.charCodeAt(i) !== 0x7b /* { */) continue;
    const close = matchingBrace(text, i);
    if (close === -1) continue;
    try {
      const info = readUsage(JSON.parse(text.slice(i, close + 1)));
      if (info !== undefined) return info;
    } catch {
      // Not the usage object after all; try an earlier occurrence.
    }
  }
  return undefined;
}

/** Index of the `}` closing the object that opens at `open`, skipping strings; -1 if unclosed. */
function matchingBrace(text: string, open: number): number {
  let depth = 0;
  let inString = false;
  for (let i = open; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b || c === 0x5b) {
      depth++;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
      if (depth === 0) return i;
    }
  }
  return -1;
}
