/** Helpers shared by the test files (not a test file itself: vitest runs `*.test.ts` only). */
import { isRouterError, type RouterErrorCode } from "prefix-router";

/** Runs `fn` and returns the RouterError code it throws (fails the test if it throws something else or nothing). */
export function codeOf(fn: () => unknown): RouterErrorCode {
  try {
    fn();
  } catch (error) {
    if (isRouterError(error)) return error.code;
    throw error;
  }
  throw new Error("expected a RouterError, nothing was thrown");
}

/** A clock the test moves by hand: set `t`. */
export class FakeClock {
  constructor(public t = 0) {}
  now(): number {
    return this.t;
  }
}

/** Splits `bytes` at the given cut points (taken modulo its length + 1, sorted, deduplicated): how a network may cut a body. */
export function splitAt(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let last = 0;
  for (const p of points) {
    out.push(bytes.subarray(last, p));
    last = p;
  }
  out.push(bytes.subarray(last));
  return out;
}

/** A seeded random source (mulberry32): two sources with one seed draw the same sequence. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
