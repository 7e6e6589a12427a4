/**
 * Token usage read from a response body while it streams past, without buffering it.
 *
 * - Server-sent events (`text/event-stream`): lines are split incrementally; only a `data:` line
 *   that contains `"usage"` followed by an object is parsed (OpenAI and vLLM send `usage` in the
 *   last chunk when `stream_options.include_usage` is set; the Responses API sends it in
 *   `response.completed`). A data line that is an `{"error": …}` object marks the stream as a
 *   server error. Cost: one UTF-8 decode and one substring search per chunk; memory: one
 *   partial line.
 * - JSON: the last {@link JSON_TAIL_BYTES} bytes are kept (OpenAI-style bodies put `usage` after
 *   the choices / data / output), and the last `"usage": {…}` object in them is parsed.
 *
 * Usage is reported only when the server sends `cached_tokens`
 * (`usage.prompt_tokens_details.cached_tokens`, or `usage.input_tokens_details.cached_tokens` on
 * the Responses API): a server that does not report cached tokens leaves the cached-token ratio
 * `null` instead of pretending nothing was cached.
 */
import type { ReleaseInfo } from "../types.js";
import { isJsonSpace } from "./json.js";

/** Bytes of a JSON body kept to find its `usage`. */
export const JSON_TAIL_BYTES = 64 * 1024;
/** Longest SSE line scanned; a longer line (say, a huge `response.completed`) is skipped. */
export const MAX_SSE_LINE = 8 * 1024 * 1024;

/** Reads usage out of a body chunk by chunk. */
export interface UsageScanner {
  push(chunk: Uint8Array): void;
  /** Usage found so far (call once the body has ended). */
  result(): ReleaseInfo | undefined;
  /** True when the stream carried an error event. */
  readonly sawError: boolean;
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
  if (!(prompt >= 0) || !(cached >= 0)) return undefined;
  return { promptTokens: prompt, cachedTokens: cached };
}

/** `"usage"` followed by an object (not `null`): the only lines worth parsing. */
const USAGE_OBJECT = /"usage"\s*:\s*\{/;

class SseUsageScanner implements UsageScanner {
  private readonly decoder = new TextDecoder();
  private carry = "";
  private skipping = false;
  private found: ReleaseInfo | undefined;
  sawError = false;

  push(chunk: Uint8Array): void {
    const text = this.decoder.decode(chunk, { stream: true });
    let start = 0;
    for (;;) {
      const nl = text.indexOf("\n", start);
      if (nl === -1) break;
      const piece = text.slice(start, nl);
      start = nl + 1;
      if (this.skipping) {
        this.skipping = false;
        this.carry = "";
        continue;
      }
      const line = this.carry.length === 0 ? piece : this.carry + piece;
      this.carry = "";
      this.line(line);
    }
    if (start < text.length && !this.skipping) {
      this.carry += text.slice(start);
      if (this.carry.length > MAX_SSE_LINE) {
        this.carry = "";
        this.skipping = true;
      }
    }
  }

  private line(line: string): void {
    if (!line.startsWith("data:")) return;
    let i = 5;
    while (line.charCodeAt(i) === 0x20) i++;
    if (line.startsWith('{"error"', i)) {
      this.sawError = true;
      return;
    }
    if (!USAGE_OBJECT.test(line)) return;
    try {
      const info = usageOf(JSON.parse(line.slice(i)));
      if (info !== undefined) this.found = info;
    } catch {
      // Not JSON: nothing to learn from this line.
    }
  }

  result(): ReleaseInfo | undefined {
    if (this.carry.length > 0 && !this.skipping) {
      const line = this.carry;
      this.carry = "";
      this.line(line.endsWith("\r") ? line.slice(0, -1) : line);
    }
    return this.found;
  }
}

class JsonUsageScanner implements UsageScanner {
  private chunks: Uint8Array[] = [];
  private bytes = 0;
  readonly sawError = false;

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
    const tail = all.length > JSON_TAIL_BYTES ? all.subarray(all.length - JSON_TAIL_BYTES) : all;
    return findUsage(new TextDecoder().decode(tail));
  }
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
