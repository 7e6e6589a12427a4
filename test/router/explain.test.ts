/**
 * Decision reasons (`Decision.reason`, `Lease.reason` with `explain`) and the shadow strategy
 * (`shadow`, `stats().shadow`): the figures that decided, and a second strategy that picks beside
 * the live one without ever changing a pick.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { STRATEGIES, createRouter, type Decision, type Lease, type RoutingStrategy, type Router, type TargetSpec } from "prefix-router";
import { FakeClock, seeded } from "../support.js";

const abc: TargetSpec[] = [{ id: "a" }, { id: "b" }, { id: "c" }];
const ask = (q: string) => ({ messages: [{ role: "user", content: q }] });
/** A long shared document, then a question: `longest-prefix` matches it block by block. */
const doc = (n: number, q: string) => ({ messages: [{ role: "system", content: `Document ${n}. ${"Clause on refunds and returns. ".repeat(150)}` }, { role: "user", content: q }] });


describe("decision reasons", () => {
  it("a spill names the key's first choice, its load against the threshold and why it was passed over", async () => {
    const decisions: Decision[] = [];
    const router = await createRouter({ targets: abc, concurrencyThreshold: 1, onDecision: (d) => decisions.push(d) });
    const body = ask("same question");
    const first = router.route({ body });
    const second = router.route({ body });
    expect(decisions[0]?.reason).toEqual({ kind: "preferred", rank: 0, inflight: 0, threshold: 1, predictedCachedTokens: 0 });
    expect(second.reason).toEqual(decisions[1]?.reason);
    expect(decisions[1]?.reason).toEqual({
      kind: "spillover",
      rank: 1,
      inflight: 0,
      threshold: 1,
      preferred: first.target.id,
      preferredInflight: 1,
      passedOver: "full",
      predictedCachedTokens: 0,
    });
    // A retry that excluded the first choice says so.
    const retry = router.route({ body }, { exclude: [first.target.id, second.target.id], explain: true });
    expect(retry.reason).toMatchObject({ preferred: first.target.id, passedOver: "excluded" });
  });

  it("is computed only when asked: `explain`, or an onDecision listener", async () => {
    const router = await createRouter({ targets: abc });
    expect(router.route({ body: ask("q") }).reason).toBeUndefined();
    expect(router.route({ body: ask("q") }, { explain: true }).reason).toMatchObject({ kind: "preferred", rank: 0, inflight: 1 });
    expect(router.route({}, { explain: true }).reason).toEqual({ kind: "least-outstanding", rank: 0, inflight: 0, threshold: 32 });
    const target = router.route({ body: ask("q") }, { target: "b", explain: true });
    expect(target.reason).toMatchObject({ kind: "affinity", rank: 0, threshold: 32 });
    expect(target.reason?.preferred).toBeUndefined();
    expect(() => router.route({}, { explain: "yes" as unknown as boolean })).toThrow(/`explain` to be a boolean/);
  });

  it("longest-prefix reports the blocks the target holds, the longest match and the request's blocks", async () => {
    const router = await createRouter({ targets: abc, strategy: "longest-prefix" });
    const cold = router.route({ body: doc(1, "first?") }, { explain: true });
    expect(cold.reason).toMatchObject({ kind: "preferred", matchedBlocks: 0, longestMatchBlocks: 0, predictedCachedTokens: 0 });
    cold.release("success");
    const warm = router.route({ body: doc(1, "second?") }, { explain: true });
    const r = warm.reason!;
    expect(warm.target.id).toBe(cold.target.id);
    expect(r.matchedBlocks).toBeGreaterThan(4);
    expect(r.matchedBlocks).toBe(r.longestMatchBlocks);
    expect(r.blocks).toBeGreaterThan(r.matchedBlocks!);
    expect(r.predictedCachedTokens).toBe(warm.predictedCachedTokens);
  });
});

describe("shadow strategy", () => {
  it("the same strategy as shadow agrees on every pick; its predicted hit rate is the live one", async () => {
    const router = await createRouter({ targets: abc, shadow: "prefix-aware" });
    for (let i = 0; i < 30; i++) {
      const lease = router.route({ body: doc(i % 4, `q${i}`) });
      lease.release("success", { promptTokens: 2000, cachedTokens: 1000 });
    }
    const s = router.stats().shadow!;
    expect(s).toMatchObject({ strategy: "prefix-aware", placement: "own", decisions: 30, agreements: 30, agreementRate: 1, responses: 30, promptTokens: 60_000, cachedTokens: 30_000, errors: 0 });
    expect(s.shadowPredictedCachedTokens).toBe(s.livePredictedCachedTokens);
    // 26 warm picks of 30 (4 documents' first sights); tokens at the learned characters per token.
    expect(s.livePredictedCachedTokens).toBeGreaterThan(0);
    expect(s.predictedHitRateDifference).toBe(0);
    expect(s.liveHitRate).toBe(0.5);
  });

  it("a load-based live strategy against a prefix shadow: agreement below 1, the shadow predicts more cached tokens", async () => {
    const router = await createRouter({ targets: abc, strategy: "round-robin-ish" as never, shadow: "longest-prefix" }).catch(() => undefined);
    expect(router).toBeUndefined(); // unknown names are refused
    const live = await createRouter({ targets: abc, strategy: "random", random: seeded(7), shadow: "longest-prefix", shadowPlacement: "own" });
    for (let i = 0; i < 60; i++) live.route({ body: doc(i % 3, `q${i}`) }).release("success", { promptTokens: 2000, cachedTokens: 0 });
    const s = live.stats().shadow!;
    expect(s.decisions).toBe(60);
    expect(s.agreementRate).toBeLessThan(0.9);
    expect(s.agreementRate).toBeGreaterThan(0);
    expect(s.shadowPredictedHitRate).toBeGreaterThan(0.5);
    expect(s.livePredictedHitRate).toBe(0);
    expect(s.predictedHitRateDifference).toBeCloseTo(s.shadowPredictedHitRate!, 12);
  });

  it("own placement: the shadow's state follows its own picks; live placement: where requests really went", async () => {
    // One document, live `random`: the live placement scatters it, the shadow's own keeps it on one target.
    const run = async (placement: "own" | "live") => {
      const router = await createRouter({ targets: abc, strategy: "random", random: seeded(3), shadow: "prefix-aware", shadowPlacement: placement });
      for (let i = 0; i < 30; i++) router.route({ body: doc(0, `q${i}`) }).release("success", { promptTokens: 2000, cachedTokens: 0 });
      return router.stats().shadow!;
    };
    const own = await run("own");
    const live = await run("live");
    expect(own.placement).toBe("own");
    expect(live.placement).toBe("live");
    // As if it had routed: warm after the first request. As placed: warm on its first choice only
    // once the live random pick has sent the key there.
    expect(own.shadowPredictedCachedTokens).toBeGreaterThan(0);
    expect(live.shadowPredictedCachedTokens).toBeLessThan(own.shadowPredictedCachedTokens);
  });

  it("errors of the shadow strategy are counted, never thrown; picks go on", async () => {
    let calls = 0;
    const flaky: RoutingStrategy = {
      name: "flaky",
      pick(ctx) {
        calls++;
        if (calls % 2 === 0) throw new Error("shadow broke");
        return { index: ctx.candidates[0]!, kind: "preferred", rank: 0 };
      },
      commit() {
        throw new Error("commit broke");
      },
    };
    const router = await createRouter({ targets: abc, shadow: () => flaky });
    for (let i = 0; i < 10; i++) router.route({ body: ask(`q${i}`) }).release("success");
    const s = router.stats().shadow!;
    expect(s.strategy).toBe("flaky");
    expect(s.errors).toBe(10);
    expect(s.decisions).toBe(0);
    expect(s.lastError).toMatch(/broke/);
    expect(router.stats().totals).toMatchObject({ routed: 10, inflight: 0 });
    await expect(createRouter({ targets: abc, shadow: "nope" as never })).rejects.toThrow(/`shadow` to be one of/);
    await expect(createRouter({ targets: abc, shadowPlacement: "both" as never })).rejects.toThrow(/`shadowPlacement` to be one of "own", "live", got "both"/);
  });

  it("never changes a pick: the same seeded request stream picks the same targets with and without a shadow", async () => {
    const op = fc.record({ doc: fc.integer({ min: 0, max: 5 }), q: fc.string({ maxLength: 8 }), release: fc.boolean(), exclude: fc.boolean() });
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...STRATEGIES),
        fc.constantFrom(...STRATEGIES),
        fc.constantFrom("own" as const, "live" as const),
        fc.array(op, { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1, max: 1000 }),
        async (strategy, shadow, placement, ops, seed) => {
          const picks = async (withShadow: boolean): Promise<string[]> => {
            const clock = new FakeClock();
            const router: Router = await createRouter({
              targets: abc,
              strategy,
              concurrencyThreshold: 2,
              random: seeded(seed),
              clock,
              ...(withShadow && { shadow, shadowPlacement: placement }),
            });
            const open: Lease[] = [];
            const out: string[] = [];
            for (const o of ops) {
              clock.t += 1;
              const lease = router.route({ body: doc(o.doc, o.q) }, o.exclude ? { exclude: [out.at(-1) ?? "a"] } : undefined);
              out.push(lease.target.id);
              open.push(lease);
              if (o.release) open.shift()?.release("success", { promptTokens: 600, cachedTokens: 300 });
            }
            if (withShadow) expect(router.stats().shadow?.errors).toBe(0);
            return out;
          };
          expect(await picks(true)).toEqual(await picks(false));
        },
      ),
      { numRuns: 40 },
    );
  });
});
