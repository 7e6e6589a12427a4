/**
 * A small msgpack encoder that writes what msgspec's `msgspec.msgpack.Encoder` writes for vLLM's
 * KV-event structs (MessagePack spec, https://github.com/msgpack/msgpack/blob/master/spec.md):
 * integers in their smallest format (unsigned formats for non-negative values, signed ones for
 * negative values, as msgspec does), Python floats always as float64 (wrap a JS number in
 * {@link Float64} to say so), strings as UTF-8 `str`, bytes as `bin`, lists as arrays and
 * structs as maps in field order.
 *
 * It is independent of the library's decoder (which reads through `@msgpack/msgpack`), so a
 * round trip through both is a cross-check of the wire format, not a tautology.
 */

/** A number to encode as float64 even when its value is an integer (msgspec encodes a Python float so). */
export class Float64 {
  constructor(readonly value: number) {}
}

/** A value this encoder writes. Plain objects and `Map`s become maps, in insertion order. */
export type MsgpackValue =
  | null
  | undefined
  | boolean
  | number
  | bigint
  | string
  | Uint8Array
  | Float64
  | readonly MsgpackValue[]
  | ReadonlyMap<string, MsgpackValue>
  | { readonly [key: string]: MsgpackValue };

const utf8 = new TextEncoder();

/** Encodes `value` to msgpack bytes. */
export function encodeMsgpack(value: MsgpackValue): Uint8Array {
  const w = new Writer();
  w.value(value);
  return w.bytes();
}

class Writer {
  private buf = new Uint8Array(256);
  private view = new DataView(this.buf.buffer);
  private pos = 0;

  bytes(): Uint8Array {
    return this.buf.slice(0, this.pos);
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }

  private u8(b: number): void {
    this.ensure(1);
    this.buf[this.pos++] = b;
  }

  private head(byte: number, size: 1 | 2 | 4 | 8, v: number | bigint): void {
    this.ensure(1 + size);
    this.buf[this.pos++] = byte;
    if (size === 1) this.view.setUint8(this.pos, Number(v));
    else if (size === 2) this.view.setUint16(this.pos, Number(v));
    else if (size === 4) this.view.setUint32(this.pos, Number(v));
    else this.view.setBigUint64(this.pos, BigInt.asUintN(64, BigInt(v)));
    this.pos += size;
  }

  private raw(bytes: Uint8Array): void {
    this.ensure(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  private int(v: bigint): void {
    if (v >= 0n) {
      if (v > 0xffffffffffffffffn) throw new RangeError(`msgpack: ${v} does not fit in uint64`);
      if (v <= 0x7fn) this.u8(Number(v));
      else if (v <= 0xffn) this.head(0xcc, 1, v);
      else if (v <= 0xffffn) this.head(0xcd, 2, v);
      else if (v <= 0xffffffffn) this.head(0xce, 4, v);
      else this.head(0xcf, 8, v);
      return;
    }
    if (v < -0x8000000000000000n) throw new RangeError(`msgpack: ${v} does not fit in int64`);
    if (v >= -32n) this.u8(Number(v) & 0xff);
    else if (v >= -0x80n) this.head(0xd0, 1, Number(v) & 0xff);
    else if (v >= -0x8000n) this.head(0xd1, 2, Number(v) & 0xffff);
    else if (v >= -0x80000000n) this.head(0xd2, 4, Number(v) >>> 0);
    else this.head(0xd3, 8, v);
  }

  private float64(v: number): void {
    this.ensure(9);
    this.buf[this.pos++] = 0xcb;
    this.view.setFloat64(this.pos, v);
    this.pos += 8;
  }

  private length(n: number, fix: number, fixMax: number, b16: number, b32: number, b8?: number): void {
    if (n <= fixMax) this.u8(fix | n);
    else if (b8 !== undefined && n <= 0xff) this.head(b8, 1, n);
    else if (n <= 0xffff) this.head(b16, 2, n);
    else this.head(b32, 4, n);
  }

  value(v: MsgpackValue): void {
    if (v === null || v === undefined) return this.u8(0xc0);
    if (v === false) return this.u8(0xc2);
    if (v === true) return this.u8(0xc3);
    if (typeof v === "number") return Number.isSafeInteger(v) ? this.int(BigInt(v)) : this.float64(v);
    if (typeof v === "bigint") return this.int(v);
    if (v instanceof Float64) return this.float64(v.value);
    if (typeof v === "string") {
      const b = utf8.encode(v);
      this.length(b.length, 0xa0, 31, 0xda, 0xdb, 0xd9);
      return this.raw(b);
    }
    if (v instanceof Uint8Array) {
      if (v.length <= 0xff) this.head(0xc4, 1, v.length);
      else if (v.length <= 0xffff) this.head(0xc5, 2, v.length);
      else this.head(0xc6, 4, v.length);
      return this.raw(v);
    }
    if (Array.isArray(v)) {
      this.length(v.length, 0x90, 15, 0xdc, 0xdd);
      for (const x of v) this.value(x);
      return;
    }
    const entries = v instanceof Map ? [...(v as ReadonlyMap<string, MsgpackValue>).entries()] : Object.entries(v);
    this.length(entries.length, 0x80, 15, 0xde, 0xdf);
    for (const [k, x] of entries) {
      this.value(k);
      this.value(x);
    }
  }
}
