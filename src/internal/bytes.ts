/** Writes `value` as a little-endian uint32 at `at`; returns the offset after it. */
export function writeU32(buf: Uint8Array, at: number, value: number): number {
  buf[at] = value & 0xff;
  buf[at + 1] = (value >>> 8) & 0xff;
  buf[at + 2] = (value >>> 16) & 0xff;
  buf[at + 3] = (value >>> 24) & 0xff;
  return at + 4;
}
