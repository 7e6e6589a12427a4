/** `multi-tenant` and `multi-tenant:isolated`: the same requests, with and without vLLM's cache_salt. */
import { builtinWorkload, runBenchmark } from "prefix-router/bench";
import { describe, expect, it } from "vitest";
import { multiTenantWorkload } from "../../../tools/bench/workloads-tenants.js";

describe("multi-tenant workloads", () => {
  it("send the same requests, each with its tenant; the isolated one adds cache_salt = tenant", () => {
    const settings = { seed: 2, durationMs: 60_000, rateMultiplier: 1 };
    const shared = [...builtinWorkload("multi-tenant").requests(settings)];
    const isolated = [...builtinWorkload("multi-tenant:isolated").requests(settings)];
    expect(isolated.map(({ cacheSalt: _salt, ...r }) => r)).toEqual(shared);
    expect(shared.every((r) => r.tenant !== undefined && r.cacheSalt === undefined)).toBe(true);
    expect(isolated.every((r) => r.cacheSalt === r.tenant)).toBe(true);
    // Every tenant sends the same system prompt first.
    const systems = new Set(shared.map((r) => r.body.messages[0]!.content.slice(0, 12_000)));
    expect(systems.size).toBe(1);
    expect(new Set(shared.map((r) => r.tenant)).size).toBeGreaterThan(20);
  });

  it("isolation costs tenant-blind routing much more reuse than routing by tenant", async () => {
    const rows = await runBenchmark({
      workloads: [multiTenantWorkload(), multiTenantWorkload({ isolation: "tenant" })],
      strategies: ["random", "prefix-aware"],
      durationsMs: [240_000],
    });
    const hit = (workload: string, strategy: string) => rows.find((r) => r.workload === workload && r.strategy === strategy)!.tokenHitRate;
    const randomCost = hit("multi-tenant", "random") - hit("multi-tenant:isolated", "random");
    const prefixAwareCost = hit("multi-tenant", "prefix-aware") - hit("multi-tenant:isolated", "prefix-aware");
    expect(randomCost).toBeGreaterThan(0.08);
    expect(prefixAwareCost).toBeGreaterThan(0);
    expect(prefixAwareCost).toBeLessThan(randomCost / 2);
    // Without salts tenants share the system prompt: the ideal is higher than with them.
    expect(rows.find((r) => r.workload === "multi-tenant")!.idealHitRate).toBeGreaterThan(rows.find((r) => r.workload === "multi-tenant:isolated")!.idealHitRate);
  });
});
