/**
 * The strategy registry: a strategy from a folder of its own (test/fixtures/strategies/round-robin)
 * joins with one line, and the router treats it as a built-in — its settings validated and
 * passed to it, a warning when they are set for another strategy, its stats in `router.stats()`
 * and merged by `mergeStats`, its reason fields in decisions.
 */
import { describe, expect, it } from "vitest";
import { createRouter, mergeStats, type Decision, type RouterOptions, type RouterStats, type StrategyName } from "prefix-router";
import { registerStrategy } from "../../src/strategies/index.js";
import { ROUND_ROBIN, type RotationStats, type RoundRobinOptions, type RoundRobinReason } from "../fixtures/strategies/round-robin/index.js";

registerStrategy(ROUND_ROBIN);

const targets = [{ id: "a" }, { id: "b" }, { id: "c" }];
const body = { model: "m", messages: [{ role: "user", content: "hello" }] };
type Options = Omit<RouterOptions, "strategy"> & { strategy?: StrategyName; roundRobin?: RoundRobinOptions };
const router = (options: Options) => createRouter(options as RouterOptions);

describe("a registered strategy", () => {
  it("is routed to by name, with its validated settings", async () => {
    const r = await router({ targets, strategy: "round-robin", roundRobin: { start: 1 } });
    expect(r.strategy).toBe("round-robin");
    const picked = [0, 1, 2, 3].map(() => {
      const lease = r.route({ body });
      lease.release();
      return lease.target.id;
    });
    expect(picked).toEqual(["b", "c", "a", "b"]);
  });

  it("has its settings validated like a built-in's, and ignored with a warning under another strategy", async () => {
    await expect(router({ targets, strategy: "round-robin", roundRobin: { start: -1 } })).rejects.toThrow(
      "Expected `roundRobin.start` to be an integer from 0 to 1024, got -1",
    );
    await expect(router({ targets, strategy: "random", roundRobin: { start: 2000 } })).rejects.toThrow(RangeError);
    const warnings: string[] = [];
    const logger = { debug() {}, info() {}, warn: (m: string) => warnings.push(m), error() {} };
    await router({ targets, strategy: "random", roundRobin: { start: 1 }, logger });
    expect(warnings).toContain('prefix-router: `roundRobin` is set but the strategy is "random": the settings are ignored');
  });

  it("reports its stats in router.stats(), merged over processes by mergeStats", async () => {
    const r = await router({ targets, strategy: "round-robin" });
    for (let i = 0; i < 3; i++) r.route({ body }).release();
    const stats = r.stats() as RouterStats & { rotation?: RotationStats };
    expect(stats.rotation).toEqual({ turns: 3 });
    const merged = mergeStats([stats, stats]) as RouterStats & { rotation?: RotationStats };
    expect(merged.rotation).toEqual({ turns: 6 });
  });

  it("adds its reason fields to decisions", async () => {
    const decisions: Decision[] = [];
    const r = await router({ targets, strategy: "round-robin", onDecision: (d) => decisions.push(d) });
    r.route({ body }).release();
    const lease = r.route({ body }, { explain: true });
    expect((lease.reason as RoundRobinReason).turn).toBe(1);
    expect((decisions[0]?.reason as RoundRobinReason).turn).toBe(0);
  });

  it("keeps its name unique", () => {
    expect(() => registerStrategy(ROUND_ROBIN)).toThrow('Expected a new strategy name, got "round-robin", already registered');
  });
});
