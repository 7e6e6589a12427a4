/**
 * The routing input as it is produced: an append-only byte buffer that keeps the first `limit`
 * bytes written to it and drops the rest, so producers (canonical JSON, prompt text, raw bytes)
 * write straight into the memory that is hashed, with no intermediate strings, arrays or joins,
 * and can stop as soon as {@link PrefixWriter.full} says the prefix is complete.
 *
 * A subclass may observe the bytes as they arrive: {@link PrefixWriter.reached} runs whenever the
 * length passes {@link PrefixWriter.mark} (the block chain hashes each block once it is complete,
 * while it is still in cache). One writer is reused request after request; it is not shared
 * between routers.
 */

type NodeBufferClass = {
  from(buffer: ArrayBuffer, byteOffset?: number, length?: number): Uint8Array & {
    write(s: string, offset: number, length: number, encoding: "utf16le"): number;
  };
};

/**
 * Node's `Buffer` (also in Bun and Deno) writes a string as UTF-16LE at memory speed, ~20× faster
 * than a JavaScript loop; elsewhere the loop.
 */
const NodeBuffer = (globalThis as { Buffer?: NodeBufferClass }).Buffer;

/** Bytes past `limit` a write may touch (a UTF-8 character cut at the limit), so no write needs a bounds check per byte. */
const SLACK = 8;

export class PrefixWriter {
  /** The bytes written so far are `bytes[0..length)`. Its `byteOffset` is 0, so `words` views the same memory. */
  bytes: Uint8Array = new Uint8Array(0);
  /** `bytes` as uint32 words in the platform's byte order (hashing and scanning read four bytes at a time). */
  words: Uint32Array = new Uint32Array(0);
  length = 0;
  limit = 0;
  /** Set while a prefix is being written: a body's `toJSON` that routes another request must not reuse this writer. */
  busy = false;
  /** The entries of the last JSON tape scanned for this writer, reused by the next scan (`json-scan.ts`). */
  tape: Int32Array | undefined;
  /** {@link PrefixWriter.reached} runs when `length` reaches this. */
  protected mark = Number.POSITIVE_INFINITY;
  private readonly encoder = new TextEncoder();
  /**
   * What JSON.stringify escapes in a string — quote, backslash, U+0000–U+001F — and surrogates (a lone one
   * is escaped, a pair is not). Per writer: a global regex carries `lastIndex`.
   */
  private readonly special = /["\\\u0000-\u001f\ud800-\udfff]/g;

  /** Starts a new prefix of at most `limit` bytes. */
  begin(limit: number): void {
    if (this.bytes.length < limit + SLACK) this.allocate(limit + SLACK);
    this.length = 0;
    this.limit = limit;
  }

  private allocate(minimum: number): void {
    let size = Math.max(1024, this.bytes.length);
    while (size < minimum) size *= 2;
    const buffer = new ArrayBuffer(size);
    this.bytes = NodeBuffer === undefined ? new Uint8Array(buffer) : NodeBuffer.from(buffer);
    this.words = new Uint32Array(buffer);
  }

  /** Whether the prefix is complete: later writes are dropped. */
  get full(): boolean {
    return this.length >= this.limit;
  }

  /** Called when `length` ≥ `mark`; subclasses move `mark` on. */
  protected reached(): void {}

  /** Appends `source[from..to)`. */
  copy(source: Uint8Array, from: number, to: number): void {
    const n = Math.min(to - from, this.limit - this.length);
    if (n <= 0) return;
    if (n < 16) {
      for (let i = 0; i < n; i++) this.bytes[this.length + i] = source[from + i] as number;
    } else {
      this.bytes.set(source.subarray(from, from + n), this.length);
    }
    this.advance(n);
  }

  /** Appends one byte. */
  byte(b: number): void {
    if (this.length >= this.limit) return;
    this.bytes[this.length] = b;
    this.advance(1);
  }

  /** Appends `s` as UTF-8. Lone surrogates become U+FFFD (callers pass well-formed text). */
  utf8(s: string): void {
    const room = this.limit - this.length;
    if (room <= 0) return;
    const bytes = this.bytes;
    let at = this.length;
    // Short ASCII pieces (keys, numbers, punctuation) are most writes: no call into the encoder.
    if (s.length <= 32) {
      let i = 0;
      for (; i < s.length; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        bytes[at++] = c;
      }
      if (i === s.length) {
        this.advance(Math.min(s.length, room));
        return;
      }
      at = this.length;
    }
    // At most room + 1 characters matter (each is ≥ 1 byte); the slack takes a character cut at the limit.
    const piece = s.length > room + 1 ? s.slice(0, room + 1) : s;
    const written = this.encoder.encodeInto(piece, bytes.subarray(at, this.limit + 4)).written;
    this.advance(Math.min(written, room));
  }

  /** Appends `s[0..units)` as UTF-16LE code units. */
  utf16(s: string, units: number): void {
    const room = (this.limit - this.length) >>> 1;
    const n = Math.min(units, room);
    if (n <= 0) return;
    const bytes = this.bytes as Uint8Array & { write?: (s: string, offset: number, length: number, encoding: "utf16le") => number };
    if (bytes.write !== undefined && n > 8) bytes.write(s, this.length, 2 * n, "utf16le");
    else writeUtf16le(s, n, bytes, this.length);
    this.advance(2 * n);
  }

  /**
   * Appends `JSON.stringify(s)` as UTF-8 — without its closing quote when `close` is false — and
   * returns its length in UTF-16 units (what the canonical walk measures). Once the writer is full
   * it only counts.
   *
   * A well-formed string is encoded whole (one native call) into scratch space past the prefix,
   * then moved down into place with its escapes inserted: the bytes JSON escapes (quote, backslash,
   * controls) are ASCII, so they are found in the UTF-8 four bytes at a time (`nextSpecial`).
   * Strings with lone surrogates (which UTF-8 cannot carry) and short ones take `jsonStringSlow`.
   */
  jsonString(s: string, close: boolean): number {
    if (this.length >= this.limit) return jsonUnits(s, this.special) + (close ? 2 : 1);
    if (s.length < 24 || (s as { isWellFormed?: () => boolean }).isWellFormed?.() !== true) return this.jsonStringSlow(s, close);
    this.byte(0x22);
    const room = this.limit - this.length;
    // Scratch: 4-aligned, past every byte a write may touch (limit + slack).
    const scratch = (this.limit + SLACK + 3) & ~3;
    this.reserve(scratch + room + 8);
    const bytes = this.bytes;
    // `room` characters make at least `room` bytes, so at most `room + 1` matter (a pair kept whole,
    // so that what is counted below from `read` on starts at a character).
    let cut = Math.min(s.length, room + 1);
    const last = s.charCodeAt(cut - 1);
    if (last >= 0xd800 && last <= 0xdbff && cut < s.length) cut++;
    const piece = cut < s.length ? s.slice(0, cut) : s;
    const { read, written } = this.encoder.encodeInto(piece, bytes.subarray(scratch, scratch + room + 4));
    const end = scratch + written;
    let units = 1 + read;
    let out = this.length;
    let from = scratch;
    for (let p = this.nextSpecial(scratch, end); p < end; p = this.nextSpecial(p + 1, end)) {
      const escape = ESCAPES[bytes[p] as number] as Uint8Array;
      units += escape.length - 1;
      if (out >= this.limit) continue;
      out = move(bytes, out, from, p);
      for (let k = 0; k < escape.length; k++) bytes[out + k] = escape[k] as number;
      out += escape.length;
      from = p + 1;
    }
    if (out < this.limit) out = move(bytes, out, from, end);
    this.advance(Math.min(out, this.limit) - this.length);
    // What the encoder did not reach (the prefix was full before): counted, not written.
    if (read < s.length) units += jsonUnits(s.slice(read), this.special);
    if (close) {
      this.byte(0x22);
      units++;
    }
    return units;
  }

  /** {@link PrefixWriter.jsonString} through the regular expression: runs between escapes go to the encoder one by one. */
  private jsonStringSlow(s: string, close: boolean): number {
    this.byte(0x22);
    let units = 1;
    const special = this.special;
    special.lastIndex = 0;
    let from = 0;
    while (special.test(s)) {
      const at = special.lastIndex - 1;
      if (at > from) this.utf8(s.slice(from, at));
      units += at - from;
      const c = s.charCodeAt(at);
      const d = at + 1 < s.length ? s.charCodeAt(at + 1) : 0;
      if (c >= 0xd800 && c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
        this.utf8(s.slice(at, at + 2));
        units += 2;
        from = at + 2;
        special.lastIndex = from;
        continue;
      }
      const escape = escapeOf(c);
      this.utf8(escape);
      units += escape.length;
      from = at + 1;
    }
    if (from < s.length) this.utf8(from === 0 ? s : s.slice(from));
    units += s.length - from;
    if (close) {
      this.byte(0x22);
      units++;
    }
    return units;
  }

  /**
   * The first position in `[i, end)` holding a quote, a backslash or a control character, or `end`.
   * Four bytes at a time: for a word x, a byte b is below 0x20 when b − 0x20 borrows, equal to 0x22
   * or 0x5C when (b ^ 0x22) − 1 or (b ^ 0x5C) − 1 borrows; a borrow sets bit 7 of its byte, and bit
   * 7 of b itself (UTF-8 beyond ASCII) rules the byte out. A word without such a byte borrows nowhere.
   */
  private nextSpecial(i: number, end: number): number {
    const { bytes, words } = this;
    for (; i < end && (i & 3) !== 0; i++) if (SPECIAL[bytes[i] as number] === 1) return i;
    let w = i >>> 2;
    const last = end >>> 2;
    // Sixteen bytes per test while nothing is found, then word by word.
    for (; w + 4 <= last; w += 4) {
      if ((flags(words[w] as number) | flags(words[w + 1] as number) | flags(words[w + 2] as number) | flags(words[w + 3] as number)) !== 0) break;
    }
    for (; w < last; w++) if (flags(words[w] as number) !== 0) break;
    for (i = Math.max(i, 4 * w); i < end; i++) if (SPECIAL[bytes[i] as number] === 1) return i;
    return end;
  }

  /** Grows the buffer to at least `size` bytes, keeping what is written. */
  private reserve(size: number): void {
    if (this.bytes.length >= size) return;
    const old = this.bytes;
    this.allocate(size);
    this.bytes.set(old.subarray(0, this.length));
  }

  /** The bytes written, as a copy the caller keeps. */
  result(): Uint8Array {
    return this.bytes.slice(0, this.length);
  }

  private advance(n: number): void {
    this.length += n;
    if (this.length >= this.mark) this.reached();
  }
}

/** The bytes JSON.stringify escapes (quote, backslash, controls): 1; all else 0. */
const SPECIAL = new Uint8Array(256);
/** Their escapes, as UTF-8 bytes. */
const ESCAPES: (Uint8Array | undefined)[] = [];
for (let c = 0; c < 0x60; c++) {
  if (c >= 0x20 && c !== 0x22 && c !== 0x5c) continue;
  SPECIAL[c] = 1;
  ESCAPES[c] = Uint8Array.from(escapeOf(c), (ch) => ch.charCodeAt(0));
}

/** Bit 7 of each byte of `x` that may be a quote, a backslash or a control character (see `PrefixWriter.nextSpecial`). */
function flags(x: number): number {
  return (((x - 0x20202020) | ((x ^ 0x22222222) - 0x01010101) | ((x ^ 0x5c5c5c5c) - 0x01010101)) & ~x & 0x80808080) | 0;
}

/** Moves `bytes[from..to)` down to `out` (a short run by hand: no native call); returns the end. */
function move(bytes: Uint8Array, out: number, from: number, to: number): number {
  const n = to - from;
  if (n < 32) for (let k = 0; k < n; k++) bytes[out + k] = bytes[from + k] as number;
  else bytes.copyWithin(out, from, to);
  return out + n;
}

/** UTF-16 length of `JSON.stringify(s)` without its quotes: `s` plus what its escapes add. */
function jsonUnits(s: string, special: RegExp): number {
  let units = s.length;
  special.lastIndex = 0;
  while (special.test(s)) {
    const at = special.lastIndex - 1;
    const c = s.charCodeAt(at);
    const d = at + 1 < s.length ? s.charCodeAt(at + 1) : 0;
    if (c >= 0xd800 && c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) special.lastIndex = at + 2;
    else units += escapeOf(c).length - 1;
  }
  return units;
}

/** @internal Writes `s[0..n)` as UTF-16LE code units (low byte first, on every platform) at `at`. */
export function writeUtf16le(s: string, n: number, out: Uint8Array, at: number): void {
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    out[at + 2 * i] = c & 0xff;
    out[at + 2 * i + 1] = c >>> 8;
  }
}

/** JSON.stringify's escape of `c`: a short escape where JSON has one, else backslash, `u` and four lowercase hex digits. */
function escapeOf(c: number): string {
  switch (c) {
    case 0x22:
      return '\\"';
    case 0x5c:
      return "\\\\";
    case 0x08:
      return "\\b";
    case 0x09:
      return "\\t";
    case 0x0a:
      return "\\n";
    case 0x0c:
      return "\\f";
    case 0x0d:
      return "\\r";
    default:
      return `\\u${c.toString(16).padStart(4, "0")}`;
  }
}
