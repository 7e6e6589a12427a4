import { describe, expect, it } from "vitest";
import { STRATEGIES, createRouter, type Commitment, type PickContext, type RoutingStrategy, type StrategyPick, type TargetSpec } from "prefix-router";
import { FakeClock } from "../support.js";

interface ZonedTarget extends TargetSpec {
  zone: string;
}

const targets: ZonedTarget[] = [
  { id: "a", zone: "us" },
  { id: "b", zone: "eu" },
  { id: "c", zone: "eu" },
];
const body = { model: "m", messages: [{ role: "user", content: "hello" }] };

/** The README's example: targets in my zone first, the least busy of them; anywhere else when they are full. */
function zoneFirst(zone: string): RoutingStrategy<ZonedTarget> {
  return {
    name: "zone-first",
    pick(ctx: PickContext<ZonedTarget>): StrategyPick {
      let best = -1;
      for (const i of ctx.candidates) {
        if (!ctx.isOpen(i)) continue;
        const local = ctx.targets[i]!.zone === zone;
        const bestLocal = best !== -1 && ctx.targets[best]!.zone === zone;
        if (best === -1 || (local && !bestLocal) || (local === bestLocal && ctx.inflight(i) < ctx.inflight(best))) best = i;
      }
      if (best === -1) return { index: ctx.candidates[0]!, kind: "fallback", rank: 0 };
      return { index: best, kind: ctx.targets[best]!.zone === zone ? "preferred" : "spillover", rank: 0 };
    },
  };
}

describe("custom strategies", () => {
  it("route with a user's strategy object: its picks, its name in decisions and stats", async () => {
    const decisions: string[] = [];
    const router = await createRouter({
      targets,
      strategy: zoneFirst("eu"),
      concurrencyThreshold: 1,
      onDecision: (d) => decisions.push(`${d.strategy}:${d.target.id}:${d.kind}`),
    });
    expect(router.strategy).toBe("zone-first");
    const l1 = router.route({ body });
    const l2 = router.route({ body });
    const l3 = router.route({ body });
    expect([l1, l2, l3].map((l) => l.target.id)).toEqual(["b", "c", "a"]);
    expect(decisions).toEqual(["zone-first:b:preferred", "zone-first:c:preferred", "zone-first:a:spillover"]);
    for (const l of [l1, l2, l3]) l.release("success");
    const stats = router.stats();
    expect(stats.totals).toMatchObject({ routed: 3, preferred: 2, spillover: 1, inflight: 0 });
  });

  it("reads the request once across retries, commits only taken picks, and runs the hooks once each", async () => {
    const calls: string[] = [];
    const strategy: RoutingStrategy<TargetSpec, string> = {
      name: "first-open",
      read: (request) => {
        calls.push("read");
        return JSON.stringify(request.body).slice(0, 10);
      },
      pick(ctx, input) {
        calls.push(`pick:${input}`);
        for (const i of ctx.candidates) if (ctx.isOpen(i)) return { index: i, kind: "preferred", rank: 0 };
        return { index: ctx.candidates[0]!, kind: "fallback", rank: 0 };
      },
      commit(ctx, pick): Commitment {
        const id = ctx.targets[pick.index]!.id;
        calls.push(`commit:${id}`);
        return {
          firstByte: () => calls.push(`first-byte:${id}`),
          release: (outcome, sawFirstByte) => calls.push(`release:${id}:${outcome}:${sawFirstByte}`),
        };
      },
    };
    const router = await createRouter({ targets, strategy });
    const prepared = router.prepare({ body });
    expect(prepared.eligibleCount()).toBe(3);
    const first = router.route(prepared, { attempt: 1 });
    first.release("connect-error");
    first.release("success");
    const second = router.route(prepared, { exclude: [first.target.id], attempt: 2 });
    second.firstByte();
    second.firstByte();
    second.release("success");
    expect(calls).toEqual([
      "read",
      `pick:{"model":"`,
      "commit:a",
      "release:a:connect-error:false",
      `pick:{"model":"`,
      "commit:b",
      "first-byte:b",
      "release:b:success:true",
    ]);
  });

  it("accepts a factory, called once per router with the router's settings", async () => {
    const seen: unknown[] = [];
    const router = await createRouter({
      targets,
      prefixLength: 2048,
      strategy: (env) => {
        seen.push([env.mode, env.prefixLength, env.concurrencyThreshold]);
        const inner = env.create<TargetSpec>("prefix-aware");
        return { ...inner, name: "wrapped", pick: (ctx, input) => inner.pick(ctx, input), read: (r) => inner.read?.(r) };
      },
    });
    const reference = await createRouter({ targets, prefixLength: 2048 });
    expect(seen).toEqual([["text", 2048, 32]]);
    expect(router.route({ body }).target.id).toBe(reference.route({ body }).target.id);
    expect(router.rank({ body }).targets.map((t) => t.id)).toEqual(reference.rank({ body }).targets.map((t) => t.id));
  });

  it("rejects a malformed strategy before routing anything, naming the field", async () => {
    const cases: [unknown, RegExp][] = [
      [{ pick: () => ({ index: 0, kind: "preferred", rank: 0 }) }, /`strategy.name` to be a non-empty string, got undefined/],
      [{ name: "x" }, /`strategy.pick` to be a function, got undefined/],
      [{ name: "x", pick: () => undefined, commit: 1 }, /`strategy.commit` to be a function, got 1/],
      [null, new RegExp(`\`strategy\` to be one of ${STRATEGIES.map((s) => JSON.stringify(s)).join(", ")}, got null`)],
    ];
    for (const [strategy, message] of cases) {
      await expect(createRouter({ targets, strategy: strategy as RoutingStrategy })).rejects.toThrow(message);
    }
    await expect(createRouter({ targets, strategy: (() => 42) as never })).rejects.toThrow(/factory to return a strategy object, got 42/);
  });

  it("ranks with the rendezvous ranking of the routing key when the strategy defines none", async () => {
    const custom = await createRouter({ targets, strategy: zoneFirst("eu") });
    const reference = await createRouter({ targets, strategy: "prefix-aware" });
    const a = custom.rank({ body });
    const b = reference.rank({ body });
    expect(a.key).toBe(b.key);
    expect(a.targets.map((t) => t.id)).toEqual(b.targets.map((t) => t.id));
  });

  it("a prepared request belongs to its router", async () => {
    const one = await createRouter({ targets });
    const two = await createRouter({ targets });
    expect(() => two.route(one.prepare({ body }))).toThrow(/prepared by another router/);
  });
});

describe("picks are pure reads", () => {
  for (const strategy of ["prefix-aware", "longest-prefix"] as const) {
    it(`${strategy}: rank() and a pick that is never committed leave the next decision unchanged`, async () => {
      const clock = new FakeClock();
      const make = () => createRouter({ targets, strategy, clock, longestPrefix: { ttlMs: 1000 } });
      const router = await make();
      const doc = "policy ".repeat(600);
      const ask = (q: string) => ({ model: "m", messages: [{ role: "system", content: doc }, { role: "user", content: q }] });
      router.route({ body: ask("one") }).release("success");
      clock.t = 5000; // the index entries expire
      const blocksBefore = router.stats().prefixIndex?.blocks;
      const ranking = router.rank({ body: ask("two") }).targets.map((t) => t.id);
      expect(router.rank({ body: ask("two") }).targets.map((t) => t.id)).toEqual(ranking);
      // Expired entries are not deleted by a lookup: the index is unchanged by ranking.
      expect(router.stats().prefixIndex?.blocks).toBe(blocksBefore);
      expect(router.stats().totals.routed).toBe(1);
    });
  }
});

describe("the README's zone-first example", () => {
  it("prefers an open target of its zone, then any open target, then falls back", async () => {
    interface Target extends TargetSpec {
      zone: string;
    }
    // Same code as the README's "Custom strategies" section.
    const zoneFirst: RoutingStrategy<Target> = {
      name: "zone-first",
      pick(ctx) {
        const open = [...ctx.candidates].filter((i) => ctx.isOpen(i));
        const local = open.find((i) => ctx.targets[i]!.zone === "eu-west-1a");
        if (local !== undefined) return { index: local, kind: "preferred", rank: 0 };
        return { index: open[0] ?? ctx.candidates[0]!, kind: open.length > 0 ? "spillover" : "fallback", rank: 1 };
      },
    };
    const router = await createRouter<Target>({
      targets: [
        { id: "us-1", zone: "us-east-1a" },
        { id: "eu-1", zone: "eu-west-1a" },
      ],
      strategy: zoneFirst,
      concurrencyThreshold: 1,
    });
    const picks = [router.route({ body }), router.route({ body }), router.route({ body })];
    expect(picks.map((l) => `${l.target.id}:${l.kind}`)).toEqual(["eu-1:preferred", "us-1:spillover", "us-1:fallback"]);
    for (const l of picks) l.release("success");
  });
});
