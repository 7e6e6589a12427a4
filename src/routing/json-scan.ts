/**
 * A validating JSON scanner over UTF-8 bytes that records where each value is instead of building
 * it: what bytes-mode routing needs to write the beginning of a body's canonical JSON without
 * parsing the whole body into objects and strings.
 *
 * `scanJson` accepts exactly the texts `JSON.parse(new TextDecoder("utf-8", { fatal: true })
 * .decode(bytes))` accepts (ECMA-404 after strict UTF-8 decoding) and records a *tape*: one entry
 * per value in document order — its kind, its byte span, and for a container the entry after its
 * last descendant, so a reader skips a subtree in O(1). Object members are a key entry followed by
 * the value's entries.
 *
 * Cost: strings are the bulk of real bodies, and their bytes are not looked at one by one: the
 * closing quote and each backslash are found with `Buffer.indexOf` (memchr), control characters
 * (invalid inside JSON strings) sixteen bytes at a time, and UTF-8 validity is checked once for the
 * whole body by Node's native `isUtf8`. Everything outside strings (punctuation, numbers, literals,
 * whitespace) is read byte by byte. Memory: 16 bytes per value. (Finding quotes and backslashes
 * with a word-at-a-time test too — in one pass with control characters, or backslashes only —
 * measured 20–35% slower on chat bodies, whose text has an escaped newline every ~100 bytes.)
 */

// Kinds of tape entries.
/** A string whose bytes are its canonical JSON (no escapes, or only in JSON.stringify's form). */
export const STRING = 1;
/** A string with an escape that is not JSON.stringify's own form: its canonical form differs from its bytes. */
export const ESCAPED = 2;
export const NUMBER = 3;
export const LITERAL = 4;
export const ARRAY = 5;
export const OBJECT = 6;

/** A scanned JSON text: `entries` of 4 int32 each — kind, start, end (exclusive), next entry after the subtree. */
export interface JsonTape {
  readonly entries: Int32Array;
  /** Number of entries. */
  readonly count: number;
  /** Deepest container nesting (a lone scalar: 0; `[]`: 1). */
  readonly depth: number;
}

type Utf8Check = (bytes: Uint8Array) => boolean;
type IndexOf = (bytes: Uint8Array, value: number, from: number) => number;

/** Node's `isUtf8` (simdutf) when the runtime has it; else a strict decode. */
const isUtf8: Utf8Check = (() => {
  const getBuiltin = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process?.getBuiltinModule;
  const native = (getBuiltin?.("node:buffer") as { isUtf8?: Utf8Check } | undefined)?.isUtf8;
  if (native !== undefined) return native;
  const strict = new TextDecoder("utf-8", { fatal: true });
  return (bytes) => {
    try {
      strict.decode(bytes);
      return true;
    } catch {
      return false;
    }
  };
})();

/** memchr: Node's `Buffer.prototype.indexOf` takes any Uint8Array; elsewhere the typed array's own. */
export const indexOf: IndexOf = (() => {
  const bufferIndexOf = (globalThis as { Buffer?: { prototype: { indexOf: (value: number, from: number) => number } } }).Buffer?.prototype.indexOf;
  if (bufferIndexOf !== undefined) return (bytes, value, from) => bufferIndexOf.call(bytes, value, from);
  return (bytes, value, from) => bytes.indexOf(value, from);
})();

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Bytes that may follow a backslash in a JSON string (besides `u`). */
const SHORT_ESCAPE = new Uint8Array(256);
for (const c of '"\\/bfnrt') SHORT_ESCAPE[c.charCodeAt(0)] = 1;

/** Hex digit values + 1 (0: not a hex digit). */
export const HEX = new Uint8Array(256);
for (let i = 0; i < 16; i++) {
  HEX["0123456789abcdef".charCodeAt(i)] = i + 1;
  HEX["0123456789ABCDEF".charCodeAt(i)] = i + 1;
}

/**
 * The tape of `bytes`, or `undefined` when they are not a JSON text `JSON.parse` would accept.
 * `entries` may be the array of an earlier tape the caller no longer needs: it is reused (and
 * grown), so a router scanning body after body allocates it once.
 */
export function scanJson(bytes: Uint8Array, entries?: Int32Array): JsonTape | undefined {
  if (!isUtf8(bytes)) return undefined;
  return new Scanner(bytes, entries ?? new Int32Array(256)).run();
}

class Scanner {
  private count = 0;
  /** Open containers: their entry numbers. */
  private readonly stack: number[] = [];
  private depth = 0;
  /** Positions of the next quote and backslash at or after the last searches (`n`: none left). */
  private nextQuote = -1;
  private nextBackslash = -1;
  /** `bytes` as words from its first 4-aligned byte (`wordBase`): strings are read four bytes at a time. */
  private readonly words: Int32Array;
  private readonly wordBase: number;
  private readonly n: number;

  constructor(
    private readonly bytes: Uint8Array,
    private entries: Int32Array,
  ) {
    this.n = bytes.length;
    const misalign = (4 - (bytes.byteOffset & 3)) & 3;
    this.wordBase = misalign;
    this.words = misalign >= this.n ? new Int32Array(0) : new Int32Array(bytes.buffer, bytes.byteOffset + misalign, (this.n - misalign) >>> 2);
  }

  run(): JsonTape | undefined {
    const { bytes, n, stack } = this;
    let i = this.ws(0);
    for (;;) {
      // A value starts at i.
      const c = bytes[i];
      if (c === 0x7b || c === 0x5b) {
        stack.push(this.open(c === 0x7b ? OBJECT : ARRAY, i));
        if (stack.length > this.depth) this.depth = stack.length;
        i = this.ws(i + 1);
        if (bytes[i] === (c === 0x7b ? 0x7d : 0x5d)) {
          this.close(stack.pop() as number, i + 1);
          i = this.ws(i + 1);
        } else if (c === 0x7b) {
          i = this.key(i);
          if (i < 0) return undefined;
          continue;
        } else {
          continue;
        }
      } else {
        i = this.scalar(i);
        if (i < 0) return undefined;
        i = this.ws(i);
      }
      // After a value: a separator, the end of containers, or the end of the text.
      for (;;) {
        if (stack.length === 0) return i === n ? { entries: this.entries, count: this.count, depth: this.depth } : undefined;
        const top = stack[stack.length - 1] as number;
        const object = this.entries[4 * top] === OBJECT;
        const d = bytes[i];
        if (d === 0x2c) {
          i = this.ws(i + 1);
          if (object) {
            i = this.key(i);
            if (i < 0) return undefined;
          }
          break;
        }
        if (d !== (object ? 0x7d : 0x5d)) return undefined;
        this.close(stack.pop() as number, i + 1);
        i = this.ws(i + 1);
      }
    }
  }

  /** A member's key string, its colon and the whitespace after; returns where the value starts, or −1. */
  private key(i: number): number {
    if (this.bytes[i] !== QUOTE) return -1;
    const end = this.string(i);
    if (end < 0) return -1;
    const j = this.ws(end);
    return this.bytes[j] === 0x3a ? this.ws(j + 1) : -1;
  }

  /** A string, number or literal at i; returns its end, or −1. */
  private scalar(i: number): number {
    const c = this.bytes[i];
    if (c === QUOTE) return this.string(i);
    if (c === 0x2d || (c !== undefined && c >= 0x30 && c <= 0x39)) return this.number(i);
    for (const word of LITERALS) {
      if (c === word[0] && this.matches(i, word)) {
        this.leaf(LITERAL, i, i + word.length);
        return i + word.length;
      }
    }
    return -1;
  }

  /**
   * The string opening at `q`: records it and returns its end (after the closing quote), or −1. A
   * string whose escapes are all in JSON.stringify's own form (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`,
   * `\t`, lowercase `\u00xx` for other control characters) is canonical as it is: `STRING`; any
   * other escape makes it `ESCAPED`.
   */
  private string(q: number): number {
    const { bytes, n } = this;
    let from = q + 1;
    let rewrite = false;
    for (;;) {
      if (this.nextQuote < from) {
        const at = indexOf(bytes, QUOTE, from);
        this.nextQuote = at < 0 ? n : at;
      }
      if (this.nextBackslash < from) {
        // Escapes come in runs ("\n\n"): look at the next byte before calling out.
        const at = bytes[from] === BACKSLASH ? from : indexOf(bytes, BACKSLASH, from);
        this.nextBackslash = at < 0 ? n : at;
      }
      const close = this.nextQuote;
      if (close >= n) return -1;
      const b = this.nextBackslash;
      if (b > close) {
        if (this.hasControl(q + 1, close)) return -1;
        this.leaf(rewrite ? ESCAPED : STRING, q, close + 1);
        return close + 1;
      }
      // An escape before the quote (perhaps escaping it): check it, search on after it.
      const e = bytes[b + 1] as number;
      if (e === 0x75) {
        if (!(HEX[bytes[b + 2] as number] && HEX[bytes[b + 3] as number] && HEX[bytes[b + 4] as number] && HEX[bytes[b + 5] as number])) return -1;
        if (!canonicalControl(bytes, b)) rewrite = true;
        from = b + 6;
      } else if (SHORT_ESCAPE[e] === 1) {
        if (e === 0x2f) rewrite = true;
        from = b + 2;
      } else {
        return -1;
      }
    }
  }

  /**
   * Whether `bytes[from..to)` holds a byte below 0x20 (invalid in a JSON string). Sixteen bytes at
   * a time: in x − 0x20202020, a byte below 0x20 borrows into its bit 7 while its own bit 7 is
   * clear; bytes ≥ 0x20 never borrow, so words without such a byte never test positive.
   */
  private hasControl(from: number, to: number): boolean {
    const { bytes, words, wordBase } = this;
    let i = from;
    while (i < to && (i < wordBase || ((i - wordBase) & 3) !== 0)) {
      if ((bytes[i] as number) < 0x20) return true;
      i++;
    }
    if (i >= to) return false;
    let w = (i - wordBase) >>> 2;
    const end = (to - wordBase) >>> 2;
    for (; w + 4 <= end; w += 4) {
      const a = words[w] as number;
      const b = words[w + 1] as number;
      const c = words[w + 2] as number;
      const d = words[w + 3] as number;
      if (((((a - 0x20202020) & ~a) | ((b - 0x20202020) & ~b) | ((c - 0x20202020) & ~c) | ((d - 0x20202020) & ~d)) & 0x80808080) !== 0) return true;
    }
    for (; w < end; w++) {
      const a = words[w] as number;
      if (((a - 0x20202020) & ~a & 0x80808080) !== 0) return true;
    }
    for (i = Math.max(i, wordBase + 4 * end); i < to; i++) if ((bytes[i] as number) < 0x20) return true;
    return false;
  }

  /** A number at i (grammar: -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?); returns its end, or −1. */
  private number(i: number): number {
    const bytes = this.bytes;
    const start = i;
    if (bytes[i] === 0x2d) i++;
    if (bytes[i] === 0x30) i++;
    else if (isDigit(bytes[i])) while (isDigit(bytes[i])) i++;
    else return -1;
    if (bytes[i] === 0x2e) {
      i++;
      if (!isDigit(bytes[i])) return -1;
      while (isDigit(bytes[i])) i++;
    }
    if (bytes[i] === 0x65 || bytes[i] === 0x45) {
      i++;
      if (bytes[i] === 0x2b || bytes[i] === 0x2d) i++;
      if (!isDigit(bytes[i])) return -1;
      while (isDigit(bytes[i])) i++;
    }
    this.leaf(NUMBER, start, i);
    return i;
  }

  private matches(i: number, word: Uint8Array): boolean {
    for (let k = 1; k < word.length; k++) if (this.bytes[i + k] !== word[k]) return false;
    return true;
  }

  /** Skips JSON whitespace (space, tab, LF, CR). */
  private ws(i: number): number {
    const bytes = this.bytes;
    for (;;) {
      const c = bytes[i];
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
      i++;
    }
  }

  private leaf(kind: number, start: number, end: number): void {
    const at = this.push(kind, start);
    this.entries[at + 2] = end;
    this.entries[at + 3] = this.count;
  }

  private open(kind: number, start: number): number {
    this.push(kind, start);
    return this.count - 1;
  }

  private close(entry: number, end: number): void {
    this.entries[4 * entry + 2] = end;
    this.entries[4 * entry + 3] = this.count;
  }

  /** Appends an entry; returns its offset in `entries`. */
  private push(kind: number, start: number): number {
    const at = 4 * this.count++;
    if (at + 4 > this.entries.length) {
      const grown = new Int32Array(this.entries.length * 2);
      grown.set(this.entries);
      this.entries = grown;
    }
    this.entries[at] = kind;
    this.entries[at + 1] = start;
    return at;
  }
}

/** Whether the `\u` escape at `at` is JSON.stringify's own: `\u00` and two lowercase hex digits of a control character without a short escape. */
function canonicalControl(bytes: Uint8Array, at: number): boolean {
  if (bytes[at + 2] !== 0x30 || bytes[at + 3] !== 0x30) return false;
  const hi = bytes[at + 4] as number;
  const lo = bytes[at + 5] as number;
  if (hi !== 0x30 && hi !== 0x31) return false;
  if (!((lo >= 0x30 && lo <= 0x39) || (lo >= 0x61 && lo <= 0x66))) return false;
  const c = (hi - 0x30) * 16 + (lo <= 0x39 ? lo - 0x30 : lo - 0x57);
  return c !== 0x08 && c !== 0x09 && c !== 0x0a && c !== 0x0c && c !== 0x0d;
}

const LITERALS = ["true", "false", "null"].map((w) => Uint8Array.from(w, (c) => c.charCodeAt(0)));

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= 0x30 && c <= 0x39;
}
