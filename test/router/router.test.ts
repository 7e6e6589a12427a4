import { readFileSync } from "node:fs";
import vm from "node:vm";
import fc from "fast-check";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { RouterError, STRATEGIES, createRouter, isRouterError, type Decision, type Lease, type PickKind, type Router, type RouterOptions, type TargetSpec, DEFAULTS } from "prefix-router";
import type { LeaseOutcome } from "../../src/types.js";
import { FakeClock, codeOf } from "../support.js";

// ---------------------------------------------------------------------------------------------
// helpers



const ask = (q: string, extra: Record<string, unknown> = {}) => ({ ...extra, messages: [{ role: "user", content: q }] });

/** A body whose ranking over the router's eligible targets is exactly `order`. Deterministic: the first match of a fixed list. */
function bodyRankedAs(router: Router, order: readonly string[], request: { tenant?: string; model?: string } = {}): object {
  for (let i = 0; i < 10_000; i++) {
    const body = ask(`question ${i}`);
    const ranking = router.rank({ ...request, body }).targets.map((t) => t.id);
    if (ranking.join() === order.join()) return body;
  }
  throw new Error(`no body ranks as ${order.join()}`);
}

/** Opens `n` leases on target `id` (routes with every other target excluded and no body). */
function preload(router: Router, id: string, n: number): Lease[] {
  const others = router.targets().map((t) => t.id).filter((x) => x !== id);
  return Array.from({ length: n }, () => {
    const lease = router.route({}, { exclude: others });
    expect(lease.target.id).toBe(id);
    return lease;
  });
}

/** `n` leases on `id` that end with `outcome`. */
function finish(router: Router, id: string, n: number, outcome: LeaseOutcome): void {
  for (const lease of preload(router, id, n)) lease.release(outcome);
}

const statsOf = (router: Router, id: string) => {
  const s = router.stats().targets.find((t) => t.id === id);
  if (s === undefined) throw new Error(`no stats for ${id}`);
  return s;
};

const abc: TargetSpec[] = [{ id: "a" }, { id: "b" }, { id: "c" }];

// ---------------------------------------------------------------------------------------------

describe("spillover scenarios (prefix-aware, one key ranked a, b, c)", () => {
  type Step = [id: string, kind: PickKind, rank: number];
  const scenarios: {
    name: string;
    threshold: number;
    weights?: Record<string, number>;
    inflight?: Record<string, number>;
    expect: Step[];
  }[] = [
    {
      name: "fills the ranking in order, then falls back to the least loaded, ties by rank",
      threshold: 2,
      expect: [
        ["a", "preferred", 0],
        ["a", "preferred", 0],
        ["b", "spillover", 1],
        ["b", "spillover", 1],
        ["c", "spillover", 2],
        ["c", "spillover", 2],
        ["a", "fallback", 0],
        ["b", "fallback", 1],
        ["c", "fallback", 2],
        ["a", "fallback", 0],
      ],
    },
    {
      name: "preferred target already at threshold from other keys",
      threshold: 2,
      inflight: { a: 2 },
      expect: [
        ["b", "spillover", 1],
        ["b", "spillover", 1],
        ["c", "spillover", 2],
        ["c", "spillover", 2],
        ["a", "fallback", 0],
      ],
    },
    {
      name: "threshold 1, second choice busy: skips to the third",
      threshold: 1,
      inflight: { b: 1 },
      expect: [
        ["a", "preferred", 0],
        ["c", "spillover", 2],
        ["a", "fallback", 0],
        ["b", "fallback", 1],
      ],
    },
    {
      name: "everything over threshold: least in flight first",
      threshold: 2,
      inflight: { a: 5, b: 3, c: 4 },
      expect: [
        ["b", "fallback", 1],
        ["b", "fallback", 1],
        ["c", "fallback", 2],
        ["a", "fallback", 0],
      ],
    },
    {
      name: "fallback weighs load by weight",
      threshold: 1,
      weights: { a: 1, b: 2, c: 1 },
      inflight: { a: 1, b: 1, c: 1 },
      expect: [
        ["b", "fallback", 1], // loads 1, 0.5, 1
        ["a", "fallback", 0], // loads 1, 1, 1: rank breaks the tie
        ["b", "fallback", 1], // loads 2, 1, 1
        ["c", "fallback", 2], // loads 2, 1.5, 1
      ],
    },
    {
      name: "a target that frees a slot gets the key back as preferred",
      threshold: 3,
      inflight: { a: 2 },
      expect: [
        ["a", "preferred", 0],
        ["b", "spillover", 1],
      ],
    },
  ];

  for (const s of scenarios) {
    it(s.name, async () => {
      const targets = abc.map((t) => ({ ...t, weight: s.weights?.[t.id] ?? 1 }));
      const router = await createRouter({ targets, concurrencyThreshold: s.threshold, random: () => 0.5 });
      const body = bodyRankedAs(router, ["a", "b", "c"]);
      for (const [id, n] of Object.entries(s.inflight ?? {})) preload(router, id, n);
      const got = s.expect.map(() => {
        const lease = router.route({ body });
        return [lease.target.id, lease.kind, lease.rank] as Step;
      });
      expect(got).toEqual(s.expect);
    });
  }

  it("requests for one key all spill to the same second choice; other keys keep their own order", async () => {
    const targets = Array.from({ length: 7 }, (_, i) => ({ id: `r${i}` }));
    const router = await createRouter({ targets, concurrencyThreshold: 4 });
    const body = ask("the hot prefix");
    const [first, second] = router.rank({ body }).targets;
    for (let i = 0; i < 4; i++) expect(router.route({ body }).target).toBe(first);
    for (let i = 0; i < 4; i++) {
      const lease = router.route({ body });
      expect([lease.target, lease.kind, lease.rank]).toEqual([second, "spillover", 1]);
    }
    const stats = router.stats();
    expect(stats.totals).toMatchObject({ routed: 8, preferred: 4, spillover: 4, fallback: 0, inflight: 8, spilloverRate: 0.5 });
  });

  it("a draining (weight 0) target is not in the ranking and never picked", async () => {
    const router = await createRouter({ targets: [{ id: "a", weight: 0 }, { id: "b" }, { id: "c" }], concurrencyThreshold: 1 });
    const body = bodyRankedAs(router, ["b", "c"]);
    const picks = [0, 1, 2, 3].map(() => router.route({ body })).map((l) => [l.target.id, l.kind, l.rank]);
    expect(picks).toEqual([
      ["b", "preferred", 0],
      ["c", "spillover", 1],
      ["b", "fallback", 0],
      ["c", "fallback", 1],
    ]);
  });

  it("the load guard counts in-flight requests of every key on a target", async () => {
    const router = await createRouter({ targets: abc, concurrencyThreshold: 2 });
    const body = bodyRankedAs(router, ["a", "b", "c"]);
    const other = bodyRankedAs(router, ["a", "c", "b"]);
    router.route({ body });
    router.route({ body: other });
    expect(router.route({ body }).target.id).toBe("b");
    expect(router.route({ body: other }).target.id).toBe("c");
  });
});

describe("ejection", () => {
  const ejection = { consecutiveFailures: 3, baseEjectionMs: 1000, maxEjectionMs: 5000 };

  async function setup() {
    const clock = new FakeClock();
    const router = await createRouter({ targets: abc, clock, ejection });
    const body = bodyRankedAs(router, ["a", "b", "c"]);
    return { clock, router, body };
  }

  it("ejects after consecutive failures; the target keeps its ranking place and gets traffic back after the backoff", async () => {
    const { clock, router, body } = await setup();
    finish(router, "a", 2, "server-error");
    expect(statsOf(router, "a").ejected).toBe(false);
    expect(router.route({ body }).target.id).toBe("a");
    finish(router, "a", 1, "connect-error");
    expect(statsOf(router, "a")).toMatchObject({ ejected: true, ejectedUntilMs: 1000, failures: 3 });
    expect(router.rank({ body }).targets.map((t) => t.id)).toEqual(["a", "b", "c"]);
    const during = router.route({ body });
    expect([during.target.id, during.kind, during.rank]).toEqual(["b", "spillover", 1]);
    clock.t = 999;
    expect(router.route({ body }).target.id).toBe("b");
    clock.t = 1000;
    const after = router.route({ body });
    expect([after.target.id, after.kind, after.rank]).toEqual(["a", "preferred", 0]);
    expect(statsOf(router, "a")).toMatchObject({ ejected: false, ejectedUntilMs: null });
  });

  it("doubles the backoff on each ejection without a success in between, capped at maxEjectionMs", async () => {
    const { clock, router } = await setup();
    finish(router, "a", 3, "server-error");
    const lengths: number[] = [];
    for (let i = 0; i < 5; i++) {
      const s = statsOf(router, "a");
      expect(s.ejected).toBe(true);
      lengths.push((s.ejectedUntilMs as number) - clock.t);
      clock.t = s.ejectedUntilMs as number;
      // After an ejection ran out, a single failure ejects again.
      finish(router, "a", 1, "server-error");
    }
    expect(lengths).toEqual([1000, 2000, 4000, 5000, 5000]);
  });

  it("a success resets both the failure count and the backoff", async () => {
    const { clock, router } = await setup();
    finish(router, "a", 3, "server-error");
    clock.t = 1000;
    finish(router, "a", 1, "success");
    finish(router, "a", 2, "server-error");
    expect(statsOf(router, "a").ejected).toBe(false);
    finish(router, "a", 1, "server-error");
    expect(statsOf(router, "a").ejectedUntilMs).toBe(2000); // base again, not doubled
  });

  it("counts only connect/server errors; client errors and cancellations count neither way; a success resets", async () => {
    const { router } = await setup();
    finish(router, "a", 2, "server-error");
    // A 4xx is decided by the request, not the target's health: it does not break the streak, so
    // a caller sending bad requests cannot keep a failing target in rotation.
    finish(router, "a", 1, "client-error");
    finish(router, "a", 1, "cancelled");
    expect(statsOf(router, "a").ejected).toBe(false);
    finish(router, "a", 1, "connect-error");
    expect(statsOf(router, "a").ejected).toBe(true);
    expect(statsOf(router, "a").failures).toBe(3);
    // Nor does it eject: client errors alone never count.
    const { router: other } = await setup();
    finish(other, "a", 10, "client-error");
    expect(statsOf(other, "a")).toMatchObject({ ejected: false, failures: 0 });
    finish(other, "a", 2, "server-error");
    finish(other, "a", 1, "success");
    finish(other, "a", 2, "server-error");
    expect(statsOf(other, "a").ejected).toBe(false);
  });

  it("all targets ejected: still returns a target (fallback), for every strategy", async () => {
    for (const strategy of ["prefix-aware", "least-outstanding", "random"] as const) {
      const clock = new FakeClock();
      const router = await createRouter({ targets: abc, clock, ejection, strategy, random: () => 0.5 });
      for (const t of abc) finish(router, t.id, 3, "server-error");
      expect(router.stats().targets.every((t) => t.ejected)).toBe(true);
      const lease = router.route({ body: ask("anything") });
      expect(abc.map((t) => t.id)).toContain(lease.target.id);
      if (strategy === "prefix-aware") expect(lease.kind).toBe("fallback");
    }
  });

  it("an ejected target is only used when every other one is full: least loaded among the healthy first", async () => {
    const clock = new FakeClock();
    const router = await createRouter({ targets: abc, clock, ejection, concurrencyThreshold: 1 });
    const body = bodyRankedAs(router, ["a", "b", "c"]);
    finish(router, "a", 3, "server-error");
    const picks = [0, 1, 2].map(() => router.route({ body })).map((l) => [l.target.id, l.kind]);
    expect(picks).toEqual([
      ["b", "spillover"],
      ["c", "spillover"],
      ["b", "fallback"],
    ]);
  });

  it("uses the documented defaults, and `false` disables ejection", async () => {
    const clock = new FakeClock();
    const router = await createRouter({ targets: abc, clock });
    finish(router, "a", DEFAULTS.ejection.consecutiveFailures - 1, "server-error");
    expect(statsOf(router, "a").ejected).toBe(false);
    finish(router, "a", 1, "server-error");
    expect(statsOf(router, "a").ejectedUntilMs).toBe(DEFAULTS.ejection.baseEjectionMs);
    const never = await createRouter({ targets: abc, clock, ejection: false });
    finish(never, "a", 50, "connect-error");
    expect(statsOf(never, "a")).toMatchObject({ ejected: false, failures: 50 });
  });
});

describe("exclude, strategies and the injected random source", () => {
  it("`exclude` skips targets but keeps their ranking place", async () => {
    const router = await createRouter({ targets: abc });
    const body = bodyRankedAs(router, ["a", "b", "c"]);
    const pick = (exclude: ReadonlySet<string> | readonly string[]) => {
      const lease = router.route({ body }, { exclude, attempt: 2 });
      return [lease.target.id, lease.kind, lease.rank, lease.attempt];
    };
    expect(pick(["a"])).toEqual(["b", "spillover", 1, 2]);
    expect(pick(new Set(["a", "b"]))).toEqual(["c", "spillover", 2, 2]);
    expect(pick(["b"])).toEqual(["a", "preferred", 0, 2]);
    expect(pick([])).toEqual(["a", "preferred", 0, 2]);
    expect(pick(new Set())).toEqual(["a", "preferred", 0, 2]);
    // Every target tried: back to the best one.
    expect(pick(["a", "b", "c"])).toEqual(["a", "fallback", 0, 2]);
    expect(pick(["a", "b", "c", "not-a-target"])).toEqual(["a", "fallback", 0, 2]);
  });

  it("least-outstanding: fewest in flight per weight; ties broken by the injected random", async () => {
    const picks = async (random: () => number, n: number, targets: TargetSpec[] = abc) => {
      const router = await createRouter({ targets, strategy: "least-outstanding", random });
      return Array.from({ length: n }, () => {
        const lease = router.route({ body: ask("same") });
        expect([lease.kind, lease.rank, lease.key]).toEqual(["least-outstanding", 0, undefined]);
        return lease.target.id;
      }).join("");
    };
    // Reservoir tie-break: the i-th tied target replaces the pick when random() * i < 1.
    expect(await picks(() => 0, 6)).toBe("cbacba");
    expect(await picks(() => 0.99, 6)).toBe("abcabc");
    const script = [0, 0.5, 0.9, 0.1];
    expect(await picks(() => script.shift() ?? 0.99, 3)).toBe("bac");
    expect(await picks(() => 0.99, 5, [{ id: "a" }, { id: "b", weight: 2 }])).toBe("abbab");
  });

  it("random: weighted by the injected random", async () => {
    const targets = [{ id: "a", weight: 1 }, { id: "b", weight: 3 }];
    const pick = async (r: number) => {
      const router = await createRouter({ targets, strategy: "random", random: () => r });
      const lease = router.route({ body: ask("x") });
      expect([lease.kind, lease.rank, lease.key]).toEqual(["random", 0, undefined]);
      return lease.target.id;
    };
    expect(await pick(0)).toBe("a");
    expect(await pick(0.2499)).toBe("a");
    expect(await pick(0.25)).toBe("b");
    expect(await pick(0.9999)).toBe("b");

    let s = 12345;
    const lcg = () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32);
    const router = await createRouter({ targets, strategy: "random", random: lcg });
    for (let i = 0; i < 20_000; i++) router.route({}).release();
    expect(statsOf(router, "a").share).toBeGreaterThan(0.23);
    expect(statsOf(router, "a").share).toBeLessThan(0.27);
  });

  it("random skips excluded targets", async () => {
    const router = await createRouter({ targets: abc, strategy: "random", random: () => 0 });
    expect(router.route({}, { exclude: ["a"] }).target.id).toBe("b");
  });

  it("prefix-aware without a body, or with a body without prompt text, goes by least-outstanding", async () => {
    const router = await createRouter({ targets: abc, random: () => 0.99 });
    const lease = router.route({});
    expect([lease.target.id, lease.kind, lease.key]).toEqual(["a", "least-outstanding", undefined]);
    expect(router.route({ body: { model: "m" } }).kind).toBe("least-outstanding");
  });

  it("bytes mode routes any body; the same bytes always go to the same target", async () => {
    const router = await createRouter({ targets: abc, mode: "bytes" });
    const csv = "id,text\n1,hello\n";
    const a = router.route({ body: csv });
    const b = router.route({ body: new TextEncoder().encode(csv) });
    expect(a.kind).toBe("preferred");
    expect(b.target).toBe(a.target);
    expect(b.key).toBe(a.key);
    expect(router.route({ body: { b: 1, a: 2 } }).key).toBe(router.route({ body: '{ "a": 2, "b": 1 }' }).key);
  });
});

describe("in-flight accounting (property)", () => {
  const ids = ["t0", "t1", "t2", "t3"];
  const op = fc.oneof(
    { weight: 5, arbitrary: fc.record({ op: fc.constant("route" as const), q: fc.nat(6), exclude: fc.subarray(ids), model: fc.constantFrom(undefined, "m1", "m2") }) },
    {
      weight: 4,
      arbitrary: fc.record({
        op: fc.constant("release" as const),
        which: fc.nat(),
        outcome: fc.constantFrom<LeaseOutcome>("success", "cancelled", "client-error", "server-error", "connect-error"),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        op: fc.constant("setTargets" as const),
        targets: fc.subarray(ids).chain((sub) =>
          fc.tuple(...sub.map((id) => fc.record({ id: fc.constant(id), weight: fc.constantFrom(0, 1, 2), models: fc.constantFrom(undefined, ["m1"], ["m2"]) }))),
        ),
      }),
    },
    { weight: 1, arbitrary: fc.record({ op: fc.constant("tick" as const), ms: fc.nat(3000) }) },
  );

  it("in-flight counts never go negative and return to 0 after any interleaving", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 60 }), fc.constantFrom("prefix-aware", "least-outstanding", "random") as fc.Arbitrary<"prefix-aware">, async (ops, strategy) => {
        const clock = new FakeClock();
        const router = await createRouter({
          targets: ids.map((id) => ({ id })),
          strategy,
          concurrencyThreshold: 2,
          clock,
          random: () => 0.42,
          ejection: { consecutiveFailures: 2, baseEjectionMs: 1000, maxEjectionMs: 4000 },
        });
        const leases: Lease[] = [];
        const check = () => {
          const open = new Map<string, number>();
          for (const l of leases) if (!l.released) open.set(l.target.id, (open.get(l.target.id) ?? 0) + 1);
          const stats = router.stats();
          for (const t of stats.targets) {
            expect(t.inflight).toBeGreaterThanOrEqual(0);
            expect(t.inflight).toBe(open.get(t.id) ?? 0);
          }
          expect(stats.totals.inflight).toBe([...open.values()].reduce((a, b) => a + b, 0));
          // A target with open leases is always visible in stats, removed or not.
          for (const id of open.keys()) expect(stats.targets.some((t) => t.id === id)).toBe(true);
        };
        for (const o of ops) {
          if (o.op === "route") {
            try {
              leases.push(router.route({ body: ask(`q${o.q}`), ...(o.model === undefined ? {} : { model: o.model }) }, { exclude: o.exclude }));
            } catch (error) {
              if (!isRouterError(error) || !["ERR_NO_TARGETS", "ERR_NO_ELIGIBLE_TARGET"].includes(error.code)) throw error;
            }
          } else if (o.op === "release") {
            // Any lease, released or not: double releases included.
            if (leases.length > 0) leases[o.which % leases.length]?.release(o.outcome);
          } else if (o.op === "setTargets") {
            router.setTargets(o.targets);
          } else {
            clock.t += o.ms;
          }
          check();
        }
        for (const l of leases) l.release();
        for (const l of leases) l.release("server-error");
        check();
        const stats = router.stats();
        expect(stats.totals.inflight).toBe(0);
        // Removed targets disappear once their last lease is released.
        expect(stats.targets.map((t) => t.id).sort()).toEqual(router.targets().map((t) => t.id).sort());
        expect(stats.targets.every((t) => t.active)).toBe(true);
      }),
      { numRuns: 150 },
    );
  });

  it("a lease on a removed target releases onto it; re-adding the id keeps its counters", async () => {
    const router = await createRouter({ targets: abc });
    const lease = preload(router, "c", 1)[0] as Lease;
    router.setTargets([{ id: "a" }, { id: "b" }]);
    expect(statsOf(router, "c")).toMatchObject({ active: false, inflight: 1 });
    router.setTargets(abc);
    expect(statsOf(router, "c")).toMatchObject({ active: true, inflight: 1, routed: 1 });
    router.setTargets([{ id: "a" }]);
    lease.release();
    // b had no open lease and went at once; c goes with its last lease.
    expect(router.stats().targets.map((t) => t.id)).toEqual(["a"]);
    expect(router.stats().totals.inflight).toBe(0);
  });
});

describe("eligibility", () => {
  const targets: TargetSpec[] = [
    { id: "base", models: ["llama"] },
    { id: "lora1", models: ["llama", "llama:sql"] },
    { id: "lora2", models: ["llama", "llama:legal"] },
    { id: "any" },
  ];

  it("only targets serving the model are ranked and picked (request model, else body.model in text mode)", async () => {
    const router = await createRouter({ targets });
    const ranked = (model: string | undefined, body: object = ask("q")) =>
      router.rank({ body, ...(model === undefined ? {} : { model }) }).targets.map((t) => t.id).sort();
    expect(ranked("llama:sql")).toEqual(["any", "lora1"]);
    expect(ranked("llama")).toEqual(["any", "base", "lora1", "lora2"]);
    expect(ranked(undefined)).toEqual(["any", "base", "lora1", "lora2"]);
    expect(ranked(undefined, ask("q", { model: "llama:legal" }))).toEqual(["any", "lora2"]);
    expect(ranked("llama:legal", ask("q", { model: "llama:sql" }))).toEqual(["any", "lora2"]);
    expect(ranked("mistral")).toEqual(["any"]);
    for (let i = 0; i < 20; i++) expect(["any", "lora1"]).toContain(router.route({ body: ask(`q${i}`), model: "llama:sql" }).target.id);
  });

  it("text mode reads body.model from JSON text and JSON bytes as from the object", async () => {
    const router = await createRouter({ targets });
    const body = ask("q", { model: "llama:sql" });
    const expected = router.rank({ body });
    expect(expected.targets.map((t) => t.id).sort()).toEqual(["any", "lora1"]);
    for (const form of [JSON.stringify(body), new TextEncoder().encode(JSON.stringify(body))]) {
      expect(router.rank({ body: form })).toEqual(expected);
      expect(["any", "lora1"]).toContain(router.route({ body: form }).target.id);
    }
    const lor = await createRouter({ targets: targets.filter((t) => t.id !== "any"), strategy: "least-outstanding" });
    expect(codeOf(() => lor.route({ body: JSON.stringify(ask("q", { model: "mistral" })) }))).toBe("ERR_NO_ELIGIBLE_TARGET");
    // Unreadable text bodies keep their errors.
    expect(codeOf(() => router.route({ body: "not json" }))).toBe("ERR_INVALID_JSON");
    expect(codeOf(() => router.route({ body: '"just a string"' }))).toBe("ERR_INVALID_BODY");
    expect(lor.route({ body: "not json" }).kind).toBe("least-outstanding");
  });

  it("ERR_NO_ELIGIBLE_TARGET when no target serves the model, or all are draining", async () => {
    const router = await createRouter({ targets: targets.filter((t) => t.id !== "any") });
    expect(codeOf(() => router.route({ body: ask("q"), model: "mistral" }))).toBe("ERR_NO_ELIGIBLE_TARGET");
    expect(codeOf(() => router.route({ body: ask("q", { model: "mistral" }) }))).toBe("ERR_NO_ELIGIBLE_TARGET");
    expect(codeOf(() => router.rank({ body: ask("q"), model: "mistral" }))).toBe("ERR_NO_ELIGIBLE_TARGET");
    router.setTargets([{ id: "a", weight: 0 }, { id: "b", weight: 0 }]);
    expect(codeOf(() => router.route({ body: ask("q") }))).toBe("ERR_NO_ELIGIBLE_TARGET");
    router.setTargets([{ id: "a", weight: 0, models: ["x"] }, { id: "b", models: ["y"] }]);
    expect(codeOf(() => router.route({ body: ask("q"), model: "x" }))).toBe("ERR_NO_ELIGIBLE_TARGET");
    expect(router.route({ body: ask("q"), model: "y" }).target.id).toBe("b");
    expect(router.stats().totals.routed).toBe(1);
  });

  it("ERR_NO_TARGETS after setTargets([]), for every strategy; setTargets again recovers", async () => {
    for (const strategy of ["prefix-aware", "least-outstanding", "random"] as const) {
      const router = await createRouter({ targets: abc, strategy });
      router.setTargets([]);
      expect(router.targets()).toEqual([]);
      expect(codeOf(() => router.route({ body: ask("q") }))).toBe("ERR_NO_TARGETS");
      expect(codeOf(() => router.route({}))).toBe("ERR_NO_TARGETS");
      router.setTargets(abc);
      expect(abc.map((t) => t.id)).toContain(router.route({ body: ask("q") }).target.id);
    }
  });

  it("a drained target (weight 0) keeps releasing its open leases and gets no new ones", async () => {
    const router = await createRouter({ targets: abc });
    const body = bodyRankedAs(router, ["a", "b", "c"]);
    const lease = router.route({ body });
    expect(lease.target.id).toBe("a");
    router.setTargets([{ id: "a", weight: 0 }, { id: "b" }, { id: "c" }]);
    for (let i = 0; i < 10; i++) expect(router.route({ body }).target.id).toBe("b");
    lease.release();
    expect(statsOf(router, "a").inflight).toBe(0);
  });
});

describe("option validation", () => {
  const base: RouterOptions = { targets: abc };
  const cases: { name: string; options: unknown; error: typeof TypeError | typeof RangeError; message: RegExp }[] = [
    { name: "options not an object", options: null, error: TypeError, message: /router options to be an object, got null/ },
    { name: "targets not an array", options: { targets: "a,b" }, error: TypeError, message: /`targets` to be an array, got "a,b"/ },
    { name: "targets missing", options: {}, error: TypeError, message: /`targets` to be an array, got undefined/ },
    { name: "target not an object", options: { targets: ["a"] }, error: TypeError, message: /`targets\[0\]` to be an object, got "a"/ },
    { name: "empty id", options: { targets: [{ id: "a" }, { id: "" }] }, error: TypeError, message: /`targets\[1\]\.id` to be a non-empty string, got ""/ },
    { name: "id not a string", options: { targets: [{ id: 7 }] }, error: TypeError, message: /`targets\[0\]\.id` to be a non-empty string, got 7/ },
    { name: "duplicate id", options: { targets: [{ id: "a" }, { id: "a" }] }, error: RangeError, message: /target ids to be unique, got "a" twice/ },
    { name: "negative weight", options: { targets: [{ id: "a", weight: -1 }] }, error: RangeError, message: /`targets\[0\]\.weight` to be a finite number >= 0, got -1/ },
    { name: "NaN weight", options: { targets: [{ id: "a", weight: Number.NaN }] }, error: RangeError, message: /`targets\[0\]\.weight` to be a finite number >= 0, got NaN/ },
    { name: "Infinity weight", options: { targets: [{ id: "a", weight: Number.POSITIVE_INFINITY }] }, error: RangeError, message: /`targets\[0\]\.weight` to be a finite number >= 0, got Infinity/ },
    { name: "string weight", options: { targets: [{ id: "a", weight: "2" }] }, error: RangeError, message: /`targets\[0\]\.weight` to be a finite number >= 0, got "2"/ },
    { name: "models not an array", options: { targets: [{ id: "a", models: "llama" }] }, error: TypeError, message: /`targets\[0\]\.models` to be an array of strings, got "llama"/ },
    { name: "models not strings", options: { targets: [{ id: "a", models: ["x", 1] }] }, error: TypeError, message: /`targets\[0\]\.models` to be an array of strings, got an array/ },
    {
      name: "strategy",
      options: { ...base, strategy: "fastest" },
      error: RangeError,
      message: new RegExp(`\`strategy\` to be one of ${STRATEGIES.map((x) => JSON.stringify(x)).join(", ")}, got "fastest"`),
    },
    { name: "strategy not a string", options: { ...base, strategy: 1 }, error: TypeError, message: /`strategy` to be one of .*, got 1/ },
    { name: "mode", options: { ...base, mode: "chars" }, error: RangeError, message: /`mode` to be one of "text", "bytes", got "chars"/ },
    { name: "prefixLength 1023", options: { ...base, prefixLength: 1023 }, error: RangeError, message: /`prefixLength` to be an integer from 1024 to 65536, got 1023/ },
    { name: "prefixLength 65537", options: { ...base, prefixLength: 65_537 }, error: RangeError, message: /`prefixLength` to be an integer from 1024 to 65536, got 65537/ },
    { name: "prefixLength 1.5", options: { ...base, prefixLength: 1.5 }, error: TypeError, message: /`prefixLength` to be an integer from 1024 to 65536, got 1.5/ },
    { name: "prefixLength NaN", options: { ...base, prefixLength: Number.NaN }, error: TypeError, message: /`prefixLength` to be an integer from 1024 to 65536, got NaN/ },
    { name: "concurrencyThreshold 0", options: { ...base, concurrencyThreshold: 0 }, error: RangeError, message: /`concurrencyThreshold` to be an integer from 1 to 1024, got 0/ },
    { name: "concurrencyThreshold 1025", options: { ...base, concurrencyThreshold: 1025 }, error: RangeError, message: /`concurrencyThreshold` to be an integer from 1 to 1024, got 1025/ },
    { name: "seed -1", options: { ...base, seed: -1 }, error: RangeError, message: /`seed` to be an integer from 0 to \d+, got -1/ },
    { name: "seed 0.5", options: { ...base, seed: 0.5 }, error: TypeError, message: /`seed` to be an integer .*, got 0.5/ },
    { name: "seed -1n", options: { ...base, seed: -1n }, error: RangeError, message: /`seed` to be an integer from 0 to 2\^64 - 1, got -1n/ },
    { name: "seed 2^64", options: { ...base, seed: 2n ** 64n }, error: RangeError, message: /`seed` to be an integer from 0 to 2\^64 - 1, got 18446744073709551616n/ },
    { name: "seed string", options: { ...base, seed: "1" }, error: TypeError, message: /`seed` to be an integer .*, got "1"/ },
    { name: "random not a function", options: { ...base, random: 0.5 }, error: TypeError, message: /`random` to be a function, got 0.5/ },
    { name: "clock not a clock", options: { ...base, clock: () => 0 }, error: TypeError, message: /`clock` to be an object with a now\(\) method, got a function/ },
    { name: "clock.now not a function", options: { ...base, clock: { now: 5 } }, error: TypeError, message: /`clock` to be an object with a now\(\) method, got an object/ },
    { name: "onDecision not a function", options: { ...base, onDecision: "log" }, error: TypeError, message: /`onDecision` to be a function, got "log"/ },
    { name: "ejection not an object", options: { ...base, ejection: true }, error: TypeError, message: /`ejection` to be an object or false, got true/ },
    { name: "ejection.consecutiveFailures 0", options: { ...base, ejection: { consecutiveFailures: 0 } }, error: RangeError, message: /`ejection\.consecutiveFailures` to be an integer from 1 to 1000000, got 0/ },
    { name: "ejection.consecutiveFailures 2.5", options: { ...base, ejection: { consecutiveFailures: 2.5 } }, error: TypeError, message: /`ejection\.consecutiveFailures` to be an integer from 1 to 1000000, got 2.5/ },
    { name: "ejection.baseEjectionMs -1", options: { ...base, ejection: { baseEjectionMs: -1 } }, error: RangeError, message: /`ejection\.baseEjectionMs` to be a number from 0 to 86400000, got -1/ },
    { name: "ejection.maxEjectionMs NaN", options: { ...base, ejection: { maxEjectionMs: Number.NaN } }, error: TypeError, message: /`ejection\.maxEjectionMs` to be a number from 30000 to 86400000, got NaN/ },
    { name: "ejection.maxEjectionMs Infinity", options: { ...base, ejection: { maxEjectionMs: Number.POSITIVE_INFINITY } }, error: RangeError, message: /`ejection\.maxEjectionMs` to be a number from 30000 to 86400000, got Infinity/ },
  ];

  for (const c of cases) {
    it(c.name, async () => {
      const error = await createRouter(c.options as RouterOptions).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(c.error);
      expect((error as Error).message).toMatch(c.message);
    });
  }

  it("setTargets validates the same way and keeps the old targets on error", async () => {
    const router = await createRouter(base);
    expect(() => router.setTargets([{ id: "x" }, { id: "x" }])).toThrow(/unique, got "x" twice/);
    expect(() => router.setTargets({} as unknown as TargetSpec[])).toThrow(TypeError);
    expect(router.targets().map((t) => t.id)).toEqual(["a", "b", "c"]);
  });

  it("route validates the request", async () => {
    const router = await createRouter(base);
    expect(() => router.route(null as unknown as object)).toThrow(TypeError);
    expect(() => router.route({ body: ask("q"), model: 7 as unknown as string })).toThrow(/`model` to be a string, got 7/);
  });

  it("exposes its defaults", async () => {
    const router = await createRouter(base);
    expect([router.strategy, router.mode, router.prefixLength, router.concurrencyThreshold]).toEqual([
      DEFAULTS.strategy,
      DEFAULTS.mode,
      DEFAULTS.prefixLength,
      DEFAULTS.concurrencyThreshold,
    ]);
    expect([DEFAULTS.strategy, DEFAULTS.mode, DEFAULTS.prefixLength, DEFAULTS.concurrencyThreshold]).toEqual(["prefix-aware", "text", 4096, 32]);
    expect(DEFAULTS.ejection).toEqual({ consecutiveFailures: 5, baseEjectionMs: 30_000, maxEjectionMs: 300_000 });
  });
});

describe("stats and onDecision", () => {
  it("onDecision is called synchronously for every pick with key, target, rank and kind", async () => {
    const clock = new FakeClock();
    clock.t = 42;
    const decisions: Decision[] = [];
    const router = await createRouter({ targets: abc, clock, concurrencyThreshold: 1, onDecision: (d) => decisions.push(d) });
    const body = bodyRankedAs(router, ["a", "b", "c"], { tenant: "acme", model: "m" });
    const first = router.route({ body, tenant: "acme", model: "m" });
    expect(decisions).toHaveLength(1);
    expect(decisions[0]).toEqual({
      key: first.key,
      target: abc[0],
      rank: 0,
      kind: "preferred",
      strategy: "prefix-aware",
      tenant: "acme",
      model: "m",
      attempt: 1,
      atMs: 42,
      input: "canonical",
      predictedCachedTokens: 0,
      reason: { kind: "preferred", rank: 0, inflight: 0, threshold: 1, predictedCachedTokens: 0 },
    });
    expect(first.key).toMatch(/^[0-9a-f]{16}$/);
    const second = router.route({ body, tenant: "acme", model: "m" }, { attempt: 3 });
    expect(decisions).toHaveLength(2);
    expect(decisions[1]).toMatchObject({ key: second.key, target: abc[1], rank: 1, kind: "spillover", attempt: 3 });
    router.route({});
    expect(decisions[2]).toMatchObject({ key: undefined, target: abc[2], kind: "least-outstanding", rank: 0 });
    router.rank({ body });
    expect(decisions).toHaveLength(3);
  });

  it("decisions, leases, rankings and stats are JSON-safe: stringify, parse, same record", async () => {
    const clock = new FakeClock();
    const decisions: Decision[] = [];
    const router = await createRouter({ targets: abc, clock, onDecision: (d) => decisions.push(d) });
    const lease = router.route({ body: ask("hello"), tenant: "acme" });
    clock.t = 12.5;
    lease.firstByte();
    const ranking = router.rank({ body: ask("hello"), tenant: "acme" });
    expect(JSON.parse(JSON.stringify(decisions[0]))).toEqual(decisions[0]);
    expect(JSON.parse(JSON.stringify(ranking))).toEqual(ranking);
    expect(JSON.parse(JSON.stringify(lease))).toEqual({
      target: lease.target,
      kind: "preferred",
      rank: 0,
      key: ranking.key,
      attempt: 1,
      predictedCachedTokens: 0,
      input: "canonical",
      released: false,
    });
    lease.release("success", { promptTokens: 100, cachedTokens: 40 });
    const stats = router.stats();
    expect(JSON.parse(JSON.stringify(stats))).toEqual(stats);
    expect(stats.totals.ttftMs).toMatchObject({ count: 1, p50: 12.5, max: 12.5 });
    expect(stats.totals.ttftMs?.histogram).toMatch(/^[A-Za-z0-9+/=]+$/);
  });

  it("if onDecision throws, the error reaches the caller and nothing is counted", async () => {
    const boom = new Error("listener failed");
    let fail = true;
    const router = await createRouter({
      targets: abc,
      onDecision: () => {
        if (fail) throw boom;
      },
    });
    expect(() => router.route({ body: ask("q") })).toThrow(boom);
    expect(router.stats().totals).toMatchObject({ routed: 0, inflight: 0, preferred: 0 });
    fail = false;
    router.route({ body: ask("q") });
    expect(router.stats().totals).toMatchObject({ routed: 1, inflight: 1, preferred: 1 });
  });

  it("stats counts picks per kind, shares and spillover rates", async () => {
    const router = await createRouter({ targets: abc, concurrencyThreshold: 1, random: () => 0.99 });
    const body = bodyRankedAs(router, ["a", "b", "c"]);
    const leases = [0, 1, 2, 3].map(() => router.route({ body })); // a pref, b spill, c spill, a fallback
    leases.forEach((l) => l.release());
    router.route({}).release(); // least-outstanding: all 0, random 0.99 keeps the first
    const s = router.stats();
    expect(s.totals).toMatchObject({ inflight: 0, routed: 5, preferred: 1, spillover: 2, fallback: 1, leastOutstanding: 1, random: 0 });
    expect(s.totals.spilloverRate).toBeCloseTo(3 / 5);
    expect(statsOf(router, "a")).toMatchObject({ routed: 3, preferred: 1, fallback: 1, leastOutstanding: 1, share: 3 / 5, spilloverRate: 1 / 3 });
    expect(statsOf(router, "b")).toMatchObject({ routed: 1, spillover: 1, share: 1 / 5, spilloverRate: 1 });
    expect(s.targets.map((t) => t.id)).toEqual(["a", "b", "c"]);
    // A snapshot, not a live view.
    router.route({ body });
    expect(s.totals.routed).toBe(5);
  });

  it("firstByte and release record TTFT, duration and cached tokens with the injected clock", async () => {
    const clock = new FakeClock();
    const router = await createRouter({ targets: [{ id: "a" }], clock });
    clock.t = 100;
    const lease = router.route({ body: ask("q") });
    expect(lease.released).toBe(false);
    clock.t = 250;
    lease.firstByte();
    clock.t = 260;
    lease.firstByte(); // only the first call counts
    clock.t = 1100;
    lease.release("success", { promptTokens: 1000, cachedTokens: 800 });
    expect(lease.released).toBe(true);
    clock.t = 5000;
    lease.release("success", { promptTokens: 1000, cachedTokens: 0 }); // ignored
    lease.firstByte(); // ignored after release
    const a = statsOf(router, "a");
    expect(a.ttftMs?.count).toBe(1);
    expect(a.ttftMs?.p50).toBeGreaterThanOrEqual(150 * 0.99);
    expect(a.ttftMs?.p50).toBeLessThanOrEqual(150 * 1.01);
    expect(a.durationMs?.count).toBe(1);
    expect(a.durationMs?.p99).toBeGreaterThanOrEqual(1000 * 0.99);
    expect(a.durationMs?.p99).toBeLessThanOrEqual(1000 * 1.01);
    expect(a).toMatchObject({ promptTokens: 1000, cachedTokens: 800, cachedTokenRatio: 0.8, inflight: 0 });
    expect(router.stats().totals.cachedTokenRatio).toBe(0.8);
    expect(router.stats().totals.ttftMs?.count).toBe(1);
  });

  it("before any sample, latency summaries and token ratios are null", async () => {
    const router = await createRouter({ targets: abc });
    const s = router.stats();
    expect(s.totals).toMatchObject({ ttftMs: null, cachedTokenRatio: null, spilloverRate: 0 });
    expect(s.targets[0]).toMatchObject({ ttftMs: null, durationMs: null, cachedTokenRatio: null, share: 0, ejectedUntilMs: null });
  });
});

describe("isRouterError", () => {
  /** Loads a second copy of src/errors.ts into a fresh vm realm, as another bundle or a vm context would. */
  function otherRealm(): { RouterError: typeof RouterError; isRouterError: typeof isRouterError; Error: ErrorConstructor } {
    const source = readFileSync(new URL("../../src/errors.ts", import.meta.url), "utf8");
    const js = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } }).outputText;
    const context = vm.createContext({ module: { exports: {} }, exports: {} });
    vm.runInContext(`(function (module, exports) {${js}\n})(module, module.exports);`, context);
    const exported = (context.module as { exports: Record<string, unknown> }).exports;
    return {
      RouterError: exported.RouterError as typeof RouterError,
      isRouterError: exported.isRouterError as typeof isRouterError,
      Error: vm.runInContext("Error", context) as ErrorConstructor,
    };
  }

  it("recognizes errors from another realm and another copy of the package, both ways", () => {
    const other = otherRealm();
    const foreign = new other.RouterError("ERR_CYCLE", "from the other realm");
    expect(foreign instanceof RouterError).toBe(false);
    expect(foreign instanceof Error).toBe(false);
    expect(isRouterError(foreign)).toBe(true);
    expect(foreign.code).toBe("ERR_CYCLE");
    expect(other.isRouterError(new RouterError("ERR_NO_TARGETS", "here"))).toBe(true);
  });

  it("is false for plain errors and look-alikes", () => {
    const other = otherRealm();
    const lookalike = Object.assign(new Error("x"), { code: "ERR_CYCLE", name: "RouterError" });
    for (const v of [new Error("x"), new other.Error("x"), lookalike, { code: "ERR_CYCLE" }, null, undefined, "ERR_CYCLE", 42]) {
      expect(isRouterError(v)).toBe(false);
    }
  });

  it("errors thrown by the router are RouterErrors with code, message and cause", async () => {
    const router = await createRouter({ targets: abc });
    let error: unknown;
    try {
      router.route({ body: "not json" });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(RouterError);
    expect(error).toMatchObject({ name: "RouterError", code: "ERR_INVALID_JSON" });
    expect((error as Error).cause).toBeInstanceOf(SyntaxError);
  });
});

describe("ejection — failures of requests already in flight", () => {
  it("do not extend or double an ejection that is running", async () => {
    let now = 0;
    const router = await createRouter({
      targets: [{ id: "a" }, { id: "b" }],
      strategy: "least-outstanding",
      random: () => 0,
      clock: { now: () => now },
      ejection: { consecutiveFailures: 2, baseEjectionMs: 1000, maxEjectionMs: 8000 },
    });
    const onA = () => router.route({}, { exclude: ["b"] });
    const inflight = [onA(), onA(), onA(), onA()];
    inflight[0]!.release("connect-error");
    inflight[1]!.release("connect-error");
    const ejectedUntil = router.stats().targets.find((t) => t.id === "a")!.ejectedUntilMs;
    expect(ejectedUntil).toBe(1000);
    now = 10;
    inflight[2]!.release("connect-error");
    inflight[3]!.release("server-error");
    const a = router.stats().targets.find((t) => t.id === "a")!;
    expect(a.ejectedUntilMs).toBe(1000);
    expect(a.failures).toBe(4);
  });
});

describe("ejection options", () => {
  it("reject a cap below the base, naming both", async () => {
    await expect(
      createRouter({ targets: [{ id: "a" }], ejection: { baseEjectionMs: 10_000, maxEjectionMs: 5_000 } }),
    ).rejects.toThrow(new RangeError("Expected `ejection.maxEjectionMs` to be a number from 10000 to 86400000, got 5000"));
  });

  it("raise the default cap with a base above it", async () => {
    const router = await createRouter({ targets: [{ id: "a" }], ejection: { baseEjectionMs: 600_000 } });
    expect(router.targets()).toHaveLength(1);
  });
});
