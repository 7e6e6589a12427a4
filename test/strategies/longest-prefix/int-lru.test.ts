import fc from "fast-check";
import { LRUCache } from "lru-cache";
import { describe, expect, it } from "vitest";
import { IntLru } from "../../../src/strategies/longest-prefix/int-lru.js";

type Op = { op: "set"; key: number; value: number } | { op: "delete"; key: number } | { op: "peek"; key: number };

const op = (keys: fc.Arbitrary<number>): fc.Arbitrary<Op> =>
  fc.oneof(
    { weight: 6, arbitrary: fc.record({ op: fc.constant("set" as const), key: keys, value: fc.integer({ min: -5, max: 1000 }) }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant("delete" as const), key: keys }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant("peek" as const), key: keys }) },
  );

describe("IntLru", () => {
  it("holds exactly what lru-cache holds after any sequence of operations", () => {
    // Few distinct keys (many hits and evictions) or int32 keys that collide in the table's low bits.
    const keys = fc.oneof(fc.integer({ min: -20, max: 20 }), fc.integer({ min: 0, max: 40 }).map((k) => k << 24), fc.integer());
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.array(op(keys), { maxLength: 400 }), (capacity, ops) => {
        const lru = new IntLru(capacity);
        const ref = new LRUCache<number, number>({ max: capacity });
        const seen = new Set<number>();
        for (const o of ops) {
          seen.add(o.key);
          if (o.op === "set") {
            lru.set(o.key, o.value);
            ref.set(o.key, o.value);
          } else if (o.op === "delete") {
            expect(lru.delete(o.key)).toBe(ref.delete(o.key));
          } else {
            expect(lru.peek(o.key)).toBe(ref.peek(o.key));
          }
          expect(lru.size).toBe(ref.size);
        }
        for (const k of seen) {
          expect(lru.has(k)).toBe(ref.has(k));
          expect(lru.peek(k)).toBe(ref.peek(k));
        }
        // Same recency order: fresh keys evict the held ones in the same order.
        for (let i = 0; i < capacity; i++) {
          lru.set(2 ** 30 + i, 0);
          ref.set(2 ** 30 + i, 0);
          for (const k of seen) expect(lru.has(k)).toBe(ref.has(k));
        }
      }),
      { numRuns: 1000 },
    );
  });

  it("keeps working as its table grows and shrinks through many distinct keys", () => {
    const lru = new IntLru(5000);
    const ref = new LRUCache<number, number>({ max: 5000 });
    let x = 1;
    for (let i = 0; i < 60_000; i++) {
      x = Math.imul(x ^ (x >>> 13), 0x5bd1e995) | 0;
      const key = x % 9000;
      if (i % 7 === 0) expect(lru.delete(key)).toBe(ref.delete(key));
      else {
        lru.set(key, i);
        ref.set(key, i);
      }
    }
    expect(lru.size).toBe(ref.size);
    for (let k = -9000; k < 9000; k++) expect(lru.peek(k)).toBe(ref.peek(k));
    expect(lru.bytes).toBeLessThanOrEqual(5000 * 16 + 16_384 * 4);
  });
});
