/**
 * Request bodies of the SageMaker adapter: read once into memory (so every attempt can resend
 * it), and their canonical JSON form for the wire.
 */
import { canonicalize, parseJson } from "../routing/canonical-json.js";
import { isRouterError } from "../errors.js";
import { describe } from "../internal/validate.js";
import { isJsonMediaType, mayBeJson } from "../adapter/json.js";
import { appendMembers } from "../adapter/tenant.js";

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
  /**
   * The parsed JSON value when the body was read as JSON, also when it is nested too deep to be
   * canonicalized (then `routing` and `wire` are the raw body); `undefined` otherwise.
   */
  json?: unknown;
}

/**
 * Prepares a request body. With `canonicalize` on, a body whose content type is JSON (or absent)
 * and that parses as JSON is sent as the UTF-8 bytes of its canonical JSON; everything else — a
 * body nested deeper than `canonicalize` goes included — is sent untouched. The routing input is the same either way (bytes mode canonicalizes JSON).
 */
export function prepareBody(body: string | Uint8Array | undefined, contentType: unknown, canonicalizeBody: boolean): PreparedBody {
  if (body === undefined || !canonicalizeBody) return { routing: body, wire: body };
  if (contentType !== undefined && contentType !== null && !isJsonMediaType(contentType)) {
    return { routing: body, wire: body };
  }
  if (!mayBeJson(body)) return { routing: body, wire: body };
  let value: unknown;
  try {
    value = parseJson(body);
  } catch {
    return { routing: body, wire: body };
  }
  let canonical: string;
  try {
    canonical = canonicalize(value);
  } catch (error) {
    // Nested deeper than the canonicalizer goes (a deep tool schema is valid JSON): sent as it
    // came, and routed on its raw bytes.
    if (isRouterError(error) && error.code === "ERR_TOO_DEEP") return { routing: body, wire: body, json: value };
    throw error;
  }
  return { routing: value, wire: encoder.encode(canonical), json: value };
}

/** The JSON object a prepared body holds, if it holds one. */
export function objectOf(prepared: PreparedBody): Record<string, unknown> | undefined {
  const { json } = prepared;
  return json !== null && typeof json === "object" && !Array.isArray(json) ? (json as Record<string, unknown>) : undefined;
}

/**
 * The wire body with vLLM's `cache_salt` added: only for a JSON object body that carries no
 * `cache_salt` of its own (anything else is sent as prepared). A canonicalized body stays
 * canonical; one nested too deep to be canonicalized is sent as it came with the salt appended.
 */
export function saltBody(prepared: PreparedBody, salt: string | undefined): string | Uint8Array | undefined {
  const { routing, wire } = prepared;
  const object = objectOf(prepared);
  if (salt === undefined || wire === undefined || object === undefined || object["cache_salt"] !== undefined) return wire;
  if (routing !== object) return appendMembers(wire, object, [["cache_salt", salt]]);
  return encoder.encode(canonicalize({ ...object, cache_salt: salt }));
}
