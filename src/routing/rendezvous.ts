/**
 * Weighted rendezvous (highest-random-weight) hashing.
 *
 *   score(key, t) = -weight_t / ln(u),   u = unit(fmix64(key XOR hash_t)) in (0, 1)
 *
 * The target with the highest score wins; P(t wins) = weight_t / Σ weight (Schindelhauer &
 * Schomaker, "Weighted distributed hash tables", SPAA 2005; the -w/ln(u) form is the one Envoy
 * and Ceph's straw2 use). Adding a target moves only the keys it now wins, ≈ 1/(n+1) of them,
 * and only onto itself; removing one moves only its own keys. The full descending order of
 * scores is the key's own spillover order.
 *
 * fmix64 is MurmurHash3's 64-bit finalizer, computed on two uint32 halves so that the hot path
 * allocates no BigInt. Cost per target: two 64-bit multiplies and one `Math.log`.
 */

/** An immutable table of per-target hashes and weights, built when the target set changes. */
export class RendezvousTable {
  private readonly hi: Uint32Array;
  private readonly lo: Uint32Array;
  private readonly weights: Float64Array;

  /** `hashes[i]` is target i's 64-bit hash, `weights[i]` its weight (> 0 to ever win). */
  constructor(hashes: readonly bigint[], weights: readonly number[]) {
    const n = hashes.length;
    this.hi = new Uint32Array(n);
    this.lo = new Uint32Array(n);
    this.weights = Float64Array.from(weights);
    for (let i = 0; i < n; i++) {
      const h = hashes[i] as bigint;
      this.hi[i] = Number(h >> 32n);
      this.lo[i] = Number(h & 0xffff_ffffn);
    }
  }

  /** Score of target `i` for the key whose halves are `keyHi`, `keyLo`. Higher wins. */
  score(i: number, keyHi: number, keyLo: number): number {
    const w = this.weights[i] as number;
    if (w <= 0) return 0;
    const u = unitMix(((keyHi ^ (this.hi[i] as number)) >>> 0), ((keyLo ^ (this.lo[i] as number)) >>> 0));
    return -w / Math.log(u);
  }

  /** Scores of `candidates` into `out` (same positions). */
  scores(candidates: ArrayLike<number>, keyHi: number, keyLo: number, out: Float64Array): void {
    for (let j = 0; j < candidates.length; j++) out[j] = this.score(candidates[j] as number, keyHi, keyLo);
  }
}

/** Splits a 64-bit key into [hi, lo] uint32 halves. */
export function splitKey(key: bigint): [number, number] {
  return [Number(key >> 32n), Number(key & 0xffff_ffffn)];
}

/** fmix64 of (hi:lo), mapped to (0, 1) from its top 53 bits. */
export function unitMix(hi: number, lo: number): number {
  // k ^= k >>> 33;  k *= 0xff51afd7ed558ccd
  lo = (lo ^ (hi >>> 1)) >>> 0;
  let h = mulHi(hi, lo, 0xff51afd7, 0xed558ccd);
  let l = mulLo(lo, 0xed558ccd);
  // k ^= k >>> 33;  k *= 0xc4ceb9fe1a85ec53
  l = (l ^ (h >>> 1)) >>> 0;
  hi = mulHi(h, l, 0xc4ceb9fe, 0x1a85ec53);
  lo = mulLo(l, 0x1a85ec53);
  // k ^= k >>> 33
  lo = (lo ^ (hi >>> 1)) >>> 0;
  const u = (hi * 0x20_0000 + (lo >>> 11) + 0.5) / 0x20_0000_0000_0000;
  // 2^53 − 1 + 0.5 rounds up to 2^53, so the top value would be exactly 1 (ln 1 = 0, score −∞:
  // the key's best target ranked last). Keep it just below 1.
  return u < 1 ? u : 1 - 2 ** -53;
}

/** Low 32 bits of al * bl (both uint32). */
function mulLo(al: number, bl: number): number {
  return Math.imul(al, bl) >>> 0;
}

/** High 32 bits of the low 64-bit word of (ah:al) * (bh:bl), all uint32. Exact in doubles. */
function mulHi(ah: number, al: number, bh: number, bl: number): number {
  const a0 = al & 0xffff;
  const a1 = al >>> 16;
  const b0 = bl & 0xffff;
  const b1 = bl >>> 16;
  const mid = a0 * b1 + a1 * b0; // < 2^33
  const low = a0 * b0 + (mid % 0x1_0000) * 0x1_0000; // < 2^33
  const carry = Math.floor(low / 0x1_0000_0000);
  return (a1 * b1 + Math.floor(mid / 0x1_0000) + carry + Math.imul(ah, bl) + Math.imul(al, bh)) >>> 0;
}
