/**
 * Canonical JSON (fast-json-stable-stringify's text, as `canonicalize(JSON.parse(text))` gives it)
 * written as UTF-8 straight from the bytes of a scanned JSON text (`json-scan.ts`), stopping once
 * the writer is full: bytes-mode routing of a JSON body without building it.
 *
 * What canonicalization changes, and only that, is rewritten; everything else is copied:
 * - object members in UTF-16 key order, a repeated key once with its last value (as `JSON.parse`
 *   keeps it), insignificant whitespace dropped;
 * - numbers as JavaScript prints them (`1.0` → `1`, `1E3` → `1000`, `-0` → `0`, `1e400` → `null`);
 *   an integer of up to 15 digits is already in that form and is copied;
 * - strings as `JSON.stringify` writes them: a string without a backslash is copied byte for byte
 *   (valid UTF-8 without control characters is already canonical); in a string with escapes, each
 *   escape is rewritten to the form `JSON.stringify` would give (`\/` → `/`, `\u00e9` → `é`,
 *   `\u001F` → `\u001f`, a surrogate pair → its 4 UTF-8 bytes, a lone surrogate → lowercase `\udxxx`)
 *   and the runs between escapes are copied.
 * Cost: O(bytes written + keys of the objects entered); keys are decoded to strings to sort them.
 */
import { ARRAY, ESCAPED, HEX, type JsonTape, LITERAL, NUMBER, OBJECT, STRING, indexOf } from "./json-scan.js";
import type { PrefixWriter } from "./prefix-writer.js";

/** Writes the canonical JSON of the scanned text `bytes` into `out` until it is full. */
export function writeCanonicalTape(bytes: Uint8Array, tape: JsonTape, out: PrefixWriter): void {
  new TapeWriter(bytes, tape.entries, out).value(0);
}

const utf8 = new TextDecoder();

class TapeWriter {
  constructor(
    private readonly bytes: Uint8Array,
    private readonly entries: Int32Array,
    private readonly out: PrefixWriter,
  ) {}

  value(e: number): void {
    const { entries, out, bytes } = this;
    const kind = entries[4 * e];
    const start = entries[4 * e + 1] as number;
    const end = entries[4 * e + 2] as number;
    if (kind === STRING || kind === LITERAL) out.copy(bytes, start, end);
    else if (kind === ESCAPED) this.escaped(start, end);
    else if (kind === NUMBER) this.number(start, end);
    else if (kind === ARRAY) this.array(e);
    else if (kind === OBJECT) this.object(e);
  }

  private array(e: number): void {
    const { entries, out } = this;
    const stop = entries[4 * e + 3] as number;
    out.byte(0x5b);
    for (let c = e + 1; c < stop && !out.full; c = entries[4 * c + 3] as number) {
      if (c !== e + 1) out.byte(0x2c);
      this.value(c);
    }
    out.byte(0x5d);
  }

  private object(e: number): void {
    const { entries, out } = this;
    const stop = entries[4 * e + 3] as number;
    const members: { key: string; entry: number }[] = [];
    // A member is its key's entry, then its value's entries.
    for (let c = e + 1; c < stop; c = entries[4 * (c + 1) + 3] as number) members.push({ key: this.key(c), entry: c });
    if (members.length > 1) {
      // UTF-16 order (Object.keys(…).sort()); equal keys by position, so the last one is kept below.
      members.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.entry - b.entry));
    }
    out.byte(0x7b);
    let first = true;
    for (let m = 0; m < members.length && !out.full; m++) {
      const { key, entry } = members[m] as { key: string; entry: number };
      if (m + 1 < members.length && (members[m + 1] as { key: string }).key === key) continue;
      if (!first) out.byte(0x2c);
      first = false;
      this.value(entry);
      out.byte(0x3a);
      this.value(entry + 1);
    }
    out.byte(0x7d);
  }

  /** The decoded key of string entry `c`. */
  private key(c: number): string {
    const { entries, bytes } = this;
    const start = (entries[4 * c + 1] as number) + 1;
    const end = (entries[4 * c + 2] as number) - 1;
    if (end - start <= 32 && entries[4 * c] === STRING) {
      let key = "";
      for (let i = start; i < end; i++) {
        const b = bytes[i] as number;
        if (b >= 0x80 || b === 0x5c) return this.decodeKey(start, end);
        key += String.fromCharCode(b);
      }
      return key;
    }
    return this.decodeKey(start, end);
  }

  private decodeKey(start: number, end: number): string {
    const quoted = utf8.decode(this.bytes.subarray(start - 1, end + 1));
    return quoted.includes("\\") ? (JSON.parse(quoted) as string) : quoted.slice(1, -1);
  }

  private number(start: number, end: number): void {
    const { bytes, out } = this;
    const digits = bytes[start] === 0x2d ? start + 1 : start;
    let integer = end - digits <= 15 && !(digits > start && end - digits === 1 && bytes[digits] === 0x30);
    for (let i = digits; integer && i < end; i++) integer = (bytes[i] as number) >= 0x30 && (bytes[i] as number) <= 0x39;
    if (integer) {
      out.copy(bytes, start, end);
      return;
    }
    const value = Number(utf8.decode(bytes.subarray(start, end)));
    out.utf8(Number.isFinite(value) ? `${value}` : "null");
  }

  /** A string with escapes, `bytes[start..end)` with its quotes: runs copied, each escape rewritten to JSON.stringify's form. */
  private escaped(start: number, end: number): void {
    const { bytes, out } = this;
    const last = end - 1;
    // Searches for backslashes stop at the closing quote, not at the next string's escape.
    const within = bytes.subarray(0, last);
    out.byte(0x22);
    let i = start + 1;
    while (i < last && !out.full) {
      let b = indexOf(within, 0x5c, i);
      if (b < 0) b = last;
      out.copy(bytes, i, b);
      if (b === last) break;
      const e = bytes[b + 1] as number;
      if (e !== 0x75) {
        if (e === 0x2f) out.byte(0x2f);
        else out.copy(bytes, b, b + 2);
        i = b + 2;
        continue;
      }
      const c = hex4(bytes, b + 2);
      i = b + 6;
      if (c >= 0xd800 && c <= 0xdbff && bytes[i] === 0x5c && bytes[i + 1] === 0x75) {
        const d = hex4(bytes, i + 2);
        if (d >= 0xdc00 && d <= 0xdfff) {
          this.codePoint(0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00));
          i += 6;
          continue;
        }
      }
      if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) out.utf8(escapeOf(c));
      else this.codePoint(c);
    }
    out.byte(0x22);
  }

  /** UTF-8 of a code point that JSON.stringify writes as itself. */
  private codePoint(c: number): void {
    const out = this.out;
    if (c < 0x80) {
      out.byte(c);
    } else if (c < 0x800) {
      out.byte(0xc0 | (c >> 6));
      out.byte(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
      out.byte(0xe0 | (c >> 12));
      out.byte(0x80 | ((c >> 6) & 0x3f));
      out.byte(0x80 | (c & 0x3f));
    } else {
      out.byte(0xf0 | (c >> 18));
      out.byte(0x80 | ((c >> 12) & 0x3f));
      out.byte(0x80 | ((c >> 6) & 0x3f));
      out.byte(0x80 | (c & 0x3f));
    }
  }
}

function hex4(bytes: Uint8Array, at: number): number {
  return (
    (((HEX[bytes[at] as number] as number) - 1) << 12) |
    (((HEX[bytes[at + 1] as number] as number) - 1) << 8) |
    (((HEX[bytes[at + 2] as number] as number) - 1) << 4) |
    ((HEX[bytes[at + 3] as number] as number) - 1)
  );
}

/** JSON.stringify's escape of a character it escapes (short form where JSON has one, else lowercase `\uXXXX`). */
function escapeOf(c: number): string {
  return JSON.stringify(String.fromCharCode(c)).slice(1, -1);
}
