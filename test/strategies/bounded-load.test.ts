import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { boundedLoad, createRouter, type Lease, DEFAULTS } from "prefix-router";
import { ShareTracker } from "../../src/strategies/bounded-load.js";

const ids = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `t${i}` }));
const hot = { model: "m", messages: [{ role: "system", content: "hot prefix ".repeat(500) }, { role: "user", content: "q" }] };

function counts(leases: readonly Lease[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const l of leases) m.set(l.target.id, (m.get(l.target.id) ?? 0) + 1);
  return m;
}

describe("ShareTracker.clearlyBelow", () => {
  it("is below the factor by more than chance: a shortfall over two standard deviations of the count owed (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 2 }), { maxLength: 200 }), (picks) => {
        const targets = ids(3);
        const shares = new ShareTracker(4096);
        shares.setTargets(targets);
        const ctx = { candidates: [0, 1, 2], weights: [1, 1, 1], isEjected: () => false } as never;
        for (const i of picks) shares.count(ctx, i, 3);
        for (let i = 0; i < 3; i++) {
          const got = picks.filter((p) => p === i).length;
          // Without decay worth speaking of over 200 picks: owed ≈ (picks + 1) / 3.
          const owed = (picks.length + 1) / 3;
          const clearly = shares.clearlyBelow(i, 0.8, 1 / 3);
          if (got >= 0.8 * owed + 0.01) expect(clearly).toBe(false);
          if (clearly) expect(shares.below(i, 0.8, 1 / 3)).toBe(true);
          if (got === 0 && owed > 4.1) expect(clearly).toBe(true);
          if (owed - got < 2 * Math.sqrt(owed) - 0.01) expect(clearly).toBe(false);
        }
      }),
    );
  });
});

describe("boundedLoad", () => {
  it("spreads a hot prefix held in flight: no busy target above loadFactor × its share (plain prefix-aware pins it)", async () => {
    const plain = await createRouter({ targets: ids(4) });
    const bounded = await createRouter({ targets: ids(4), strategy: boundedLoad("prefix-aware", { loadFactor: 1.25 }) });
    expect(bounded.strategy).toBe("prefix-aware");
    const n = 28;
    const pinned = Array.from({ length: n }, () => plain.route({ body: hot }));
    const spread = Array.from({ length: n }, () => bounded.route({ body: hot }));
    expect(Math.max(...counts(pinned).values())).toBe(n);
    // Each pick of a busy target needs its recent picks below 1.25 × its fair share: ≤ ⌈1.25 × 7⌉ + 1.
    expect(Math.max(...counts(spread).values())).toBeLessThanOrEqual(Math.ceil(1.25 * (n / 4)) + 1);
    expect(spread.filter((l) => l.kind === "preferred").length).toBeGreaterThan(n / 4);
    for (const l of [...pinned, ...spread]) l.release("success");
    expect(bounded.stats().totals.inflight).toBe(0);
  });

  it("keeps a prefix on its target at light load (an idle target is not bound)", async () => {
    const router = await createRouter({ targets: ids(4), strategy: boundedLoad("prefix-aware") });
    const first = router.rank({ body: hot }).targets[0]!.id;
    for (let k = 0; k < 50; k++) {
      const lease = router.route({ body: hot });
      expect(lease.target.id).toBe(first);
      lease.release("success");
    }
  });

  it("never picks a full target while another is open, whatever the bound says (property)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 60 }), async (prompts) => {
        const router = await createRouter({ targets: ids(3), concurrencyThreshold: 4, strategy: boundedLoad("prefix-aware", { loadFactor: 1.1, loadWindow: 16 }) });
        const held: Lease[] = [];
        for (const p of prompts) {
          const before = router.stats().targets;
          const lease = router.route({ body: { model: "m", messages: [{ role: "user", content: `prompt ${p} `.repeat(40) }] } });
          const anyOpen = before.some((t) => t.inflight < 4);
          const chosen = before.find((t) => t.id === lease.target.id)!;
          if (anyOpen) expect(chosen.inflight).toBeLessThan(4);
          held.push(lease);
          if (held.length > 9) held.shift()!.release("success");
        }
        for (const l of held) l.release("success");
        expect(router.stats().totals.inflight).toBe(0);
      }),
      { numRuns: 50 },
    );
  });

  it("validates its options, naming the option, the range and the value", () => {
    expect(DEFAULTS.boundedLoad).toEqual({ loadFactor: 1.25, loadWindow: 4096 });
    expect(() => boundedLoad("prefix-aware", { loadFactor: 0.5 })).toThrow("Expected `boundedLoad options.loadFactor` to be a number from 1 to 100, got 0.5");
    expect(() => boundedLoad("prefix-aware", { loadWindow: 0 })).toThrow("Expected `boundedLoad options.loadWindow` to be an integer from 1 to 1000000, got 0");
    expect(() => boundedLoad("prefix-aware", null as never)).toThrow("Expected `boundedLoad options` to be an object, got null");
  });
});
