/**
 * Sniffing request bodies that may be JSON, for both adapters. Whether a body can be JSON text is
 * decided from its first non-whitespace character, so CSV, images and other raw bodies are never
 * decoded, let alone parsed.
 */

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

const decoder = new TextDecoder();

/**
 * The JSON object `body` spells, or `undefined` when it is no JSON object (another JSON value,
 * or not JSON). Bytes are decoded as UTF-8 with invalid sequences replaced, as `fetch` reads
 * them.
 */
export function parseObject(body: string | Uint8Array): Record<string, unknown> | undefined {
  if (firstNonSpace(body) !== 0x7b /* { */) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(typeof body === "string" ? body : decoder.decode(body));
  } catch {
    return undefined;
  }
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
