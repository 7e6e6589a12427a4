/**
 * Sniffing request bodies that may be JSON, for both adapters. Whether a body can be JSON text is
 * decided from its content type, else from its first non-whitespace character, so CSV, images
 * and other raw bodies are never decoded, let alone parsed.
 */
import { parseJson } from "../routing/canonical-json.js";
import { RouterError } from "../errors.js";

/** True for the four characters JSON allows between tokens (space, tab, LF, CR). */
export function isJsonSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** The first code unit (of a string) or byte that is not JSON whitespace; -1 when there is none. */
export function firstNonSpace(body: string | Uint8Array): number {
  for (let i = 0; i < body.length; i++) {
    const c = typeof body === "string" ? body.charCodeAt(i) : (body[i] as number);
    if (!isJsonSpace(c)) return c;
  }
  return -1;
}

/** Characters a JSON text can start with: `{ [ "`, a digit or `-`, and `true` / `false` / `null`. */
const JSON_START: ReadonlySet<number> = new Set([..."{[\"-0123456789tfn"].map((c) => c.charCodeAt(0)));

/** True when `body` may be JSON text: its first non-whitespace character can open a JSON value. */
export function mayBeJson(body: string | Uint8Array): boolean {
  return JSON_START.has(firstNonSpace(body));
}

/**
 * JSON media types: `application/json`, `text/json` and any `…/…+json`, parameters allowed.
 * Anything else (CSV, images, `text/plain`) is not JSON, even when it happens to parse as JSON.
 */
const JSON_MEDIA_TYPE = /^\s*(?:application\/json|text\/json|[\w.+-]+\/[\w.+-]+\+json)\s*(?:;|$)/i;

/** True when `contentType` is a string naming a JSON media type. */
export function isJsonMediaType(contentType: unknown): boolean {
  return typeof contentType === "string" && JSON_MEDIA_TYPE.test(contentType);
}

/** `text/plain`, which `fetch` gives a string body sent without a content type. */
const TEXT_PLAIN = /^\s*text\/plain\s*(?:;|$)/i;

/**
 * Whether a request body is meant as JSON: a JSON content type says yes; none, or the
 * `text/plain` that `fetch` puts on a string body, leaves it to the first character
 * ({@link mayBeJson}); any other content type (a form, an upload) says no.
 */
export function isJsonBody(body: string | Uint8Array, contentType: unknown): boolean {
  if (isJsonMediaType(contentType)) return true;
  const sniff = contentType === undefined || contentType === null || (typeof contentType === "string" && TEXT_PLAIN.test(contentType));
  return sniff && mayBeJson(body);
}

/**
 * The JSON object a request body spells, parsed once.
 *
 * @throws {RouterError} `ERR_INVALID_JSON` for text that does not parse or bytes that are not
 * UTF-8 (with `position`), `ERR_INVALID_BODY` for JSON that is no object.
 */
export function parseObject(body: string | Uint8Array): Record<string, unknown> {
  const value = parseJson(body);
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new RouterError(
      "ERR_INVALID_BODY",
      `Expected a JSON object request body, got ${value === null ? "null" : Array.isArray(value) ? "an array" : typeof value}`,
    );
  }
  return value as Record<string, unknown>;
}
