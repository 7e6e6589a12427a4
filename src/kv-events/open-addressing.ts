/**
 * What the KV-event index's tables share: open addressing over typed arrays of entry ids, linear
 * probing, deletion by backward shift (no tombstones), pools grown by doubling.
 */

/** No entry: an empty table slot, the end of a list, an unused pool entry. */
export const EMPTY = -1;
/** The smallest pool a table grows to. */
export const MIN_POOL = 1024;

/** Mixes three uint32 into a table position (a murmur3 finaliser over their sum of products). */
export function mix(a: number, b: number, c: number): number {
  let h = (Math.imul(a, 0x9e3779b1) ^ Math.imul(b, 0x85ebca77) ^ Math.imul(c, 0xc2b2ae3d)) | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x846ca68b);
  return (h ^ (h >>> 16)) >>> 0;
}

/** Removes table slot i under linear probing by backward shift (no tombstones). */
export function deleteAt(t: Int32Array, i: number, home: (id: number) => number): void {
  const mask = t.length - 1;
  let hole = i;
  let j = i;
  for (;;) {
    j = (j + 1) & mask;
    const x = t[j] as number;
    if (x === EMPTY) break;
    const h = home(x) & mask;
    // x may move into the hole when its home is not cyclically in (hole, j].
    if (hole <= j ? h <= hole || h > j : h <= hole && h > j) {
      t[hole] = x;
      hole = j;
    }
  }
  t[hole] = EMPTY;
}

/** The smallest power of two ≥ n. */
export function pow2(n: number): number {
  let p = 1;
  while (p < n) p *= 2;
  return p;
}

/** A copy of `a` of `size` entries (an Int32Array's new entries EMPTY). */
export function grow<A extends Uint32Array | Int32Array | Uint16Array | Uint8Array>(a: A, size: number): A {
  const b = new (a.constructor as new (n: number) => A)(size);
  b.set(a);
  if (b instanceof Int32Array) b.fill(EMPTY, a.length);
  return b;
}
