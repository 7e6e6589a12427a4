/**
 * A faulty or meddling shadow strategy (`shadow`): whatever its commitment's hooks do — throw,
 * or throw from the getter that reads them — never reaches the caller, and whatever it writes
 * into the view it is handed — weights, candidates, the target list, a target — never changes a
 * live pick.
 */
import { describe, expect, it } from "vitest";
import { type Commitment, type PickContext, type RoutingStrategy, type StrategyPick, createRouter } from "prefix-router";

const targets = [{ id: "a" }, { id: "b" }, { id: "c" }, { id: "d" }];
const body = (n: number) => ({ model: "m", messages: [{ role: "user", content: `conversation ${n} `.repeat(40) }] });
const boom = (): never => {
  throw new Error("shadow boom");
};

function shadowWith(commitment: () => Commitment): RoutingStrategy {
  return {
    name: "faulty",
    pick: (ctx: PickContext): StrategyPick => ({ index: ctx.candidates[0]!, kind: "preferred", rank: 0 }),
    commit: () => commitment(),
  };
}

const FAULTS: [string, () => Commitment][] = [
  ["release throws", () => ({ release: boom })],
  ["firstByte throws", () => ({ firstByte: boom })],
  [
    "the release getter throws",
    () =>
      Object.defineProperty({}, "release", {
        get: boom,
      }) as Commitment,
  ],
  [
    "the firstByte getter throws",
    () =>
      Object.defineProperty({}, "firstByte", {
        get: boom,
      }) as Commitment,
  ],
];

describe("a shadow's commitment that throws", () => {
  it.each(FAULTS)("%s: never reaches the caller, counted as the shadow's errors", async (_name, commitment) => {
    const router = await createRouter({ targets, shadow: shadowWith(commitment) });
    for (let i = 0; i < 300; i++) {
      const lease = router.route({ body: body(i) });
      expect(() => lease.firstByte()).not.toThrow();
      expect(() => lease.release("success", { promptTokens: 100, cachedTokens: 0 })).not.toThrow();
    }
    expect(router.stats().totals.inflight).toBe(0);
    expect(router.stats().shadow!.errors).toBeGreaterThan(0);
    expect(router.stats().shadow!.lastError).toBe("shadow boom");
  });
});

describe("a shadow that writes into its view", () => {
  const meddlers: [string, (ctx: PickContext) => void][] = [
    ["weights", (ctx) => (ctx.weights as Float64Array).fill(0).set([1e9], 0)],
    ["candidates", (ctx) => (ctx.candidates as Int32Array).fill(0)],
    ["the target list", (ctx) => (ctx.targets as { id: string }[]).splice(1)],
    ["a target's id", (ctx) => ((ctx.targets[1] as { id: string }).id = "a")],
  ];

  it.each(meddlers)("%s: live picks are those of a router without the shadow", async (_name, meddle) => {
    const meddling: RoutingStrategy = {
      name: "meddling",
      pick(ctx) {
        try {
          meddle(ctx);
        } catch {
          // Frozen: the write itself fails, inside the shadow.
        }
        return { index: ctx.candidates[0]!, kind: "preferred", rank: 0 };
      },
      commit(ctx) {
        try {
          meddle(ctx);
        } catch {
          // As above.
        }
        return undefined;
      },
    };
    const plain = await createRouter({ targets, strategy: "prefix-aware", seed: 7n });
    const shadowed = await createRouter({ targets, strategy: "prefix-aware", seed: 7n, shadow: meddling });
    const live: string[] = [];
    const reference: string[] = [];
    for (let i = 0; i < 400; i++) {
      const l1 = plain.route({ body: body(i) });
      const l2 = shadowed.route({ body: body(i) });
      reference.push(l1.target.id);
      live.push(l2.target.id);
      l1.release("success");
      l2.release("success");
    }
    expect(live).toEqual(reference);
    expect(new Set(live).size).toBe(4);
    expect(shadowed.targets().map((t) => t.id)).toEqual(["a", "b", "c", "d"]);
  });
});
