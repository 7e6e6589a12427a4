/**
 * `route(request, { target })`: the caller names the target (response affinity). The strategy is
 * skipped, load, ejection and weight 0 do not matter, and a target that left the set or stopped
 * serving the model is a typed error.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { STRATEGIES, createRouter, type Decision, type TargetSpec } from "prefix-router";
import { codeOf } from "../support.js";

const targets: TargetSpec[] = [{ id: "a" }, { id: "b" }, { id: "c", models: ["m"] }, { id: "d" }];
const body = (q: string) => ({ model: "m", messages: [{ role: "user", content: q }] });

describe("route with a named target", () => {
  it("goes to the named target whatever the strategy and the key, counted as affinity", async () => {
    for (const strategy of STRATEGIES) {
      const decisions: Decision[] = [];
      const router = await createRouter({ targets, strategy, onDecision: (d) => decisions.push(d) });
      fc.assert(
        fc.property(fc.string(), fc.constantFrom("a", "b", "c", "d"), (q, id) => {
          const lease = router.route({ body: body(q) }, { target: id });
          expect(lease).toMatchObject({ target: { id }, kind: "affinity", rank: 0, key: undefined });
          lease.release("success");
        }),
        { numRuns: 40 },
      );
      const stats = router.stats();
      expect(stats.totals.affinity).toBe(40);
      expect(stats.totals.routed).toBe(40);
      expect(stats.totals.inflight).toBe(0);
      expect(decisions.every((d) => d.kind === "affinity")).toBe(true);
    }
  });

  it("ignores load, ejection and weight 0: only the named target can serve the request", async () => {
    const router = await createRouter({ targets, concurrencyThreshold: 1, ejection: { consecutiveFailures: 1, baseEjectionMs: 60_000, maxEjectionMs: 60_000 } });
    router.route({ body: body("x") }, { target: "a" }).release("connect-error"); // ejects a
    expect(router.stats().targets.find((t) => t.id === "a")?.ejected).toBe(true);
    const held = [router.route({ body: body("y") }, { target: "a" }), router.route({ body: body("z") }, { target: "a" })];
    expect(held.map((l) => l.target.id)).toEqual(["a", "a"]);
    router.setTargets(targets.map((t) => (t.id === "a" ? { ...t, weight: 0 } : t)));
    const drained = router.route({ body: body("w") }, { target: "a" });
    expect(drained.target.id).toBe("a");
    for (const l of [...held, drained]) l.release("success");
    expect(router.stats().totals.inflight).toBe(0);
  });

  it("throws ERR_TARGET_GONE for a target that left the set or no longer serves the model", async () => {
    const router = await createRouter({ targets });
    router.setTargets(targets.filter((t) => t.id !== "b"));
    expect(codeOf(() => router.route({ body: body("q") }, { target: "b" }))).toBe("ERR_TARGET_GONE");
    expect(codeOf(() => router.route({ body: { ...body("q"), model: "other" } }, { target: "c" }))).toBe("ERR_TARGET_GONE");
    expect(() => router.route({ body: body("q") }, { target: 7 as unknown as string })).toThrow(
      "Expected `target` to be a target id (a string), got 7",
    );
    expect(router.stats().totals.routed).toBe(0);
  });

  it("leaves the strategy's state untouched: the next keyed pick is the one it was before", async () => {
    const router = await createRouter({ targets, strategy: "longest-prefix" });
    const request = { body: body("a shared document ".repeat(100)) };
    const before = router.rank(request).targets.map((t) => t.id);
    router.route(request, { target: before.at(-1) as string }).release("success");
    expect(router.rank(request).targets.map((t) => t.id)).toEqual(before);
  });
});
