import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { createRouter } from "prefix-router";
import { RendezvousTable, splitKey, unitMix } from "../../src/routing/rendezvous.js";
import { KeyHasher, loadHasher } from "../../src/routing/routing-key.js";

const M64 = (1n << 64n) - 1n;
const C1 = 0xff51afd7ed558ccdn;
const C2 = 0xc4ceb9fe1a85ec53n;

/** MurmurHash3 fmix64, BigInt reference. */
function fmix64(k: bigint): bigint {
  k ^= k >> 33n;
  k = (k * C1) & M64;
  k ^= k >> 33n;
  k = (k * C2) & M64;
  k ^= k >> 33n;
  return k;
}

/** Inverse of odd `a` modulo 2^64 (Newton iteration). */
function inverse64(a: bigint): bigint {
  let x = a; // correct to 3 bits for odd a
  for (let i = 0; i < 6; i++) x = (x * (2n - a * x)) & M64;
  return x;
}

/** fmix64⁻¹: x ^= x >> 33 is its own inverse on 64 bits. */
function unfmix64(k: bigint): bigint {
  k ^= k >> 33n;
  k = (k * inverse64(C2)) & M64;
  k ^= k >> 33n;
  k = (k * inverse64(C1)) & M64;
  k ^= k >> 33n;
  return k;
}

/** A fixed key set: splitmix64 outputs. */
function keys(n: number, seed = 1n): bigint[] {
  const out: bigint[] = [];
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (s + 0x9e3779b97f4a7c15n) & M64;
    let z = s;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & M64;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & M64;
    out.push(z ^ (z >> 31n));
  }
  return out;
}

let hasher: KeyHasher;
beforeAll(async () => {
  hasher = new KeyHasher(await loadHasher(), 0n);
});

interface T {
  id: string;
  weight?: number;
}

/** Builds a table for targets and returns a function key → winning id, plus the full ranking. */
function table(targets: readonly T[]) {
  const t = new RendezvousTable(
    targets.map((x) => hasher.targetHash(x.id)),
    targets.map((x) => x.weight ?? 1),
  );
  const all = Int32Array.from(targets.keys());
  const scores = new Float64Array(targets.length);
  const ranking = (key: bigint): string[] => {
    const [hi, lo] = splitKey(key);
    t.scores(all, hi, lo, scores);
    return [...all].sort((a, b) => (scores[b] as number) - (scores[a] as number) || a - b).map((i) => (targets[i] as T).id);
  };
  const winner = (key: bigint): string => {
    const [hi, lo] = splitKey(key);
    let best = -1;
    let bestScore = -1;
    for (let i = 0; i < targets.length; i++) {
      const s = t.score(i, hi, lo);
      if (s > bestScore) {
        best = i;
        bestScore = s;
      }
    }
    return (targets[best] as T).id;
  };
  return { winner, ranking };
}

const ids = (n: number, from = 0): T[] => Array.from({ length: n }, (_, i) => ({ id: `replica-${i + from}` }));
const KEYS = keys(10_000);

describe("unitMix", () => {
  it("equals MurmurHash3 fmix64 (BigInt reference) mapped to (0, 1) from its top 53 bits (property)", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: M64 }), (k) => {
        const [hi, lo] = splitKey(k);
        const m = fmix64(k);
        expect(unitMix(hi, lo)).toBe(Math.min((Number(m >> 11n) + 0.5) / 2 ** 53, 1 - 2 ** -53));
      }),
      { numRuns: 2000 },
    );
  });

  it("matches at the edges", () => {
    for (const k of [0n, 1n, M64, 1n << 63n, 0xffff_ffffn, 0xffff_ffff_0000_0000n]) {
      const [hi, lo] = splitKey(k);
      expect(unitMix(hi, lo)).toBe(Math.min((Number(fmix64(k) >> 11n) + 0.5) / 2 ** 53, 1 - 2 ** -53));
    }
    expect(fmix64(unfmix64(0x0123_4567_89ab_cdefn))).toBe(0x0123_4567_89ab_cdefn);
  });

  it("stays strictly inside (0, 1), also where fmix64 is all ones or all zeros", () => {
    for (const m of [M64, 0n, M64 - 0x7ffn, 0x7ffn]) {
      const [hi, lo] = splitKey(unfmix64(m));
      const u = unitMix(hi, lo);
      expect(u).toBeGreaterThan(0);
      expect(u).toBeLessThan(1);
    }
    // The key whose mix is all ones is that target's best possible score: it must win, not lose.
    const key = unfmix64(M64) ^ hasher.targetHash("top");
    const t = table([{ id: "top" }, ...ids(6)]);
    expect(t.winner(key)).toBe("top");
    expect(t.ranking(key)[0]).toBe("top");
  });
});

describe("rendezvous laws on fixed key sets", () => {
  it("is deterministic", () => {
    const a = table(ids(7));
    const b = table(ids(7));
    for (const k of KEYS) expect(b.winner(k)).toBe(a.winner(k));
  });

  it("does not depend on target order (winner and whole ranking)", () => {
    const targets = ids(7);
    const a = table(targets);
    const b = table([...targets].reverse());
    const c = table([targets[3], targets[0], targets[6], targets[1], targets[5], targets[2], targets[4]] as T[]);
    for (const k of KEYS.slice(0, 2000)) {
      const r = a.ranking(k);
      expect(b.ranking(k)).toEqual(r);
      expect(c.ranking(k)).toEqual(r);
      expect(a.winner(k)).toBe(r[0]);
    }
  });

  for (const n of [2, 7, 16]) {
    it(`adding one target to ${n} moves ≈1/${n + 1} of 10,000 keys, all onto the new target`, () => {
      const before = table(ids(n));
      const after = table([...ids(n), { id: "newcomer" }]);
      let moved = 0;
      for (const k of KEYS) {
        const w = after.winner(k);
        if (w !== before.winner(k)) {
          moved++;
          expect(w).toBe("newcomer");
        }
      }
      expect(moved / KEYS.length).toBeGreaterThan((1 / (n + 1)) * 0.85);
      expect(moved / KEYS.length).toBeLessThan((1 / (n + 1)) * 1.15);
    });
  }

  it("removing one target moves only its keys", () => {
    const all = ids(8);
    const before = table(all);
    const after = table(all.filter((t) => t.id !== "replica-5"));
    let orphaned = 0;
    for (const k of KEYS) {
      const w = before.winner(k);
      if (w === "replica-5") orphaned++;
      else expect(after.winner(k)).toBe(w);
      // The orphaned keys go to their second choice: the ranking minus the removed target.
      expect(after.ranking(k)).toEqual(before.ranking(k).filter((id) => id !== "replica-5"));
    }
    expect(orphaned).toBeGreaterThan(0);
  });

  it("gives weighted shares within a few percent on 100,000 keys (weights 1, 2, 3, 4)", () => {
    const targets: T[] = [
      { id: "w1", weight: 1 },
      { id: "w2", weight: 2 },
      { id: "w3", weight: 3 },
      { id: "w4", weight: 4 },
    ];
    const t = table(targets);
    const counts = new Map<string, number>();
    const many = keys(100_000, 99n);
    for (const k of many) counts.set(t.winner(k), (counts.get(t.winner(k)) ?? 0) + 1);
    for (const x of targets) {
      const share = (counts.get(x.id) ?? 0) / many.length;
      const expected = (x.weight as number) / 10;
      expect(Math.abs(share - expected) / expected, x.id).toBeLessThan(0.05);
    }
  });

  it("gives equal weights equal shares (7 targets: 14.3 % each ± 1 point)", () => {
    const t = table(ids(7));
    const counts = new Map<string, number>();
    for (const k of KEYS) counts.set(t.winner(k), (counts.get(t.winner(k)) ?? 0) + 1);
    for (const c of counts.values()) expect(Math.abs(c / KEYS.length - 1 / 7)).toBeLessThan(0.01);
  });

  it("never picks a weight-0 target", () => {
    const t = table([{ id: "drain", weight: 0 }, ...ids(3)]);
    for (const k of KEYS) expect(t.winner(k)).not.toBe("drain");
    const alone = table([{ id: "drain", weight: 0 }, { id: "tiny", weight: 1e-9 }]);
    for (const k of KEYS.slice(0, 1000)) expect(alone.winner(k)).toBe("tiny");
  });

  it("through the router: setTargets with one more target moves keys only onto it", async () => {
    const router = await createRouter({ targets: ids(5) });
    const bodies = Array.from({ length: 2000 }, (_, i) => ({ messages: [{ role: "user", content: `question ${i}` }] }));
    const before = bodies.map((body) => router.rank({ body }).targets[0]?.id);
    router.setTargets([...ids(5)].reverse().concat({ id: "newcomer" }));
    let moved = 0;
    bodies.forEach((body, i) => {
      const w = router.rank({ body }).targets[0]?.id;
      if (w !== before[i]) {
        moved++;
        expect(w).toBe("newcomer");
      }
    });
    expect(moved / bodies.length).toBeGreaterThan(0.12);
    expect(moved / bodies.length).toBeLessThan(0.22);
  });
});
