/**
 * Request and response bodies of the SageMaker adapter: the request body read once into memory
 * (so every attempt can resend it), its canonical JSON form for the wire, and the token usage a
 * response reports.
 */
import { canonicalize, parseJson } from "../canonical-json.js";
import type { ReleaseInfo } from "../types.js";
import { describe } from "../internal/validate.js";
import { mayBeJson } from "../adapter/json.js";
import { JSON_TAIL_BYTES, findUsage, usageOf } from "../adapter/usage.js";

const encoder = new TextEncoder();

/**
 * Reads an `InvokeEndpoint` `Body` (any of the SDK's `BlobPayloadInputTypes`) into a string or
 * bytes. Strings and byte arrays are kept as they are (no copy); a Blob is read; a Node.js
 * `Readable` or web `ReadableStream` is drained, because a stream can be neither hashed nor sent
 * twice.
 */
export async function readBody(body: unknown): Promise<string | Uint8Array | undefined> {
  if (body === undefined || body === null) return undefined;
  if (typeof body === "string" || body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  if (typeof body !== "object") {
    throw new TypeError(`Expected the command's \`Body\` to be a string, bytes, a Blob or a stream, got ${describe(body)}`);
  }
  const blob = body as { arrayBuffer?: unknown; size?: unknown };
  if (typeof blob.arrayBuffer === "function" && typeof blob.size === "number") {
    return new Uint8Array(await (blob as Blob).arrayBuffer());
  }
  if (typeof (body as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === "function") {
    const chunks: Uint8Array[] = [];
    let length = 0;
    for await (const chunk of body as AsyncIterable<unknown>) {
      const bytes =
        typeof chunk === "string"
          ? encoder.encode(chunk)
          : chunk instanceof Uint8Array
            ? chunk
            : ArrayBuffer.isView(chunk)
              ? new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength)
              : undefined;
      if (bytes === undefined) {
        throw new TypeError(`Expected the command's \`Body\` stream to yield strings or bytes, got ${describe(chunk)}`);
      }
      chunks.push(bytes);
      length += bytes.length;
    }
    const out = new Uint8Array(length);
    let offset = 0;
    for (const c of chunks) {
      out.set(c, offset);
      offset += c.length;
    }
    return out;
  }
  throw new TypeError(`Expected the command's \`Body\` to be a string, bytes, a Blob or a stream, got ${describe(body)}`);
}

/** A request body as the router reads it and as it goes on the wire. */
export interface PreparedBody {
  /** What the router hashes: the parsed JSON value (it canonicalizes it), or the raw body. */
  routing: unknown;
  /** What is sent. */
  wire: string | Uint8Array | undefined;
}

/**
 * JSON media types: `application/json`, `text/json` and any `…/…+json`, parameters allowed.
 * Anything else (CSV, images, `text/plain`) is never rewritten, even when it happens to parse as
 * JSON: `1.50` in a CSV body must not become `1.5`.
 */
const JSON_MEDIA_TYPE = /^\s*(?:application\/json|text\/json|[\w.+-]+\/[\w.+-]+\+json)\s*(?:;|$)/i;

/**
 * Prepares a request body. With `canonicalize` on, a body whose content type is JSON (or absent)
 * and that parses as JSON is sent as the UTF-8 bytes of its canonical JSON; everything else is
 * sent untouched. The routing input is the same either way (bytes mode canonicalizes JSON).
 */
export function prepareBody(body: string | Uint8Array | undefined, contentType: unknown, canonicalizeBody: boolean): PreparedBody {
  if (body === undefined || !canonicalizeBody) return { routing: body, wire: body };
  if (contentType !== undefined && contentType !== null && !(typeof contentType === "string" && JSON_MEDIA_TYPE.test(contentType))) {
    return { routing: body, wire: body };
  }
  if (!mayBeJson(body)) return { routing: body, wire: body };
  let value: unknown;
  try {
    value = parseJson(body);
  } catch {
    return { routing: body, wire: body };
  }
  return { routing: value, wire: encoder.encode(canonicalize(value)) };
}

/**
 * Usage of a whole response body (the OpenAI adapter's reading: the last `"usage": {…}` in the
 * body's tail, reported only when it carries `cached_tokens`); `undefined` for other bodies.
 */
export function usageOfBody(body: unknown): ReleaseInfo | undefined {
  if (!(body instanceof Uint8Array) || body.length === 0) return undefined;
  const tail = body.length > JSON_TAIL_BYTES ? body.subarray(body.length - JSON_TAIL_BYTES) : body;
  return findUsage(decoder.decode(tail));
}

/** A streamed line longer than this is not kept for usage parsing. */
const MAX_LINE_BYTES = 1024 * 1024;
const decoder = new TextDecoder();

/**
 * Finds the last usage report in a streamed response, whatever way its payload parts are cut:
 * server-sent events (`data: {…}`), JSON lines, or one JSON object per part. Only lines that
 * mention `"usage"` are parsed; memory is bounded by one line.
 */
export class StreamUsage {
  private readonly decoder = new TextDecoder();
  private line = "";
  private overflow = false;
  private found: ReleaseInfo | undefined;

  feed(bytes: Uint8Array | undefined): void {
    if (bytes === undefined || bytes.length === 0) return;
    const text = this.decoder.decode(bytes, { stream: true });
    let start = 0;
    for (let nl = text.indexOf("\n", start); nl !== -1; nl = text.indexOf("\n", start)) {
      this.append(text.slice(start, nl));
      this.flush();
      start = nl + 1;
    }
    this.append(text.slice(start));
    // A part that is one whole JSON object (no newline framing) is complete on its own.
    if (!this.overflow && this.line.endsWith("}") && this.line.trimStart().startsWith("{")) {
      if (this.tryParse(this.line, false)) this.line = "";
    }
  }

  /** The last usage seen, after reading what is left of the stream. */
  finish(): ReleaseInfo | undefined {
    this.append(this.decoder.decode());
    this.flush();
    return this.found;
  }

  private append(s: string): void {
    if (this.overflow || s.length === 0) return;
    if (this.line.length + s.length > MAX_LINE_BYTES) {
      this.overflow = true;
      this.line = "";
      return;
    }
    this.line += s;
  }

  private flush(): void {
    if (!this.overflow) this.tryParse(this.line, true);
    this.line = "";
    this.overflow = false;
  }

  /** True when `raw` was one whole JSON object (its usage, if any, recorded). */
  private tryParse(raw: string, onlyWithUsage: boolean): boolean {
    let s = raw.trim();
    if (s.startsWith("data:")) s = s.slice(5).trimStart();
    if (!s.startsWith("{") || (onlyWithUsage && !s.includes('"usage"'))) return false;
    try {
      const info = usageOf(JSON.parse(s));
      if (info !== undefined) this.found = info;
      return true;
    } catch {
      return false;
    }
  }
}
