/**
 * Membership: targets from a provider refreshed in the background (driven here by hand-fired
 * timers), applied with minimal remap; failures keep the current set; dnsTargets turns A/AAAA
 * records into targets.
 */
import { describe, expect, it } from "vitest";
import { type Router, type TargetSpec, createRouter, dnsTargets, isRouterError } from "prefix-router";
import type { DnsResolver } from "../../src/background/dns-targets.js";
import { ManualTimers, withTimers } from "../load-view/manual-timers.js";
import { eventually } from "../load-view/redis-server.js";
import { type OpenAITarget, createRoutedFetch } from "prefix-router/openai";

const ids = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `t${i}` }));
const bodies = Array.from({ length: 200 }, (_, k) => ({ messages: [{ role: "user", content: `conversation ${k} `.repeat(80) }] }));

describe("membership", () => {
  it("createRouter waits for the first refresh; later refreshes apply changes with minimal remap", async () => {
    let current = ids(5);
    const timers = new ManualTimers();
    const infos: unknown[] = [];
    const logger = { debug() {}, info: (_m: string, f: object) => infos.push(f), warn() {}, error() {} };
    const r = await createRouter({ targets: [], membership: withTimers({ targets: () => current, intervalMs: 1000 }, timers), logger });
    expect(r.targets().map((t) => t.id)).toEqual(["t0", "t1", "t2", "t3", "t4"]);
    const before = bodies.map((body) => r.rank({ body }).targets[0]!.id);
    current = [...ids(5).filter((t) => t.id !== "t2"), { id: "t5" }];
    timers.fire();
    await eventually(() => r.stats().membership?.changes === 2);
    const after = bodies.map((body) => r.rank({ body }).targets[0]!.id);
    // Only keys of the removed target move, or keys the new target now wins.
    after.forEach((id, k) => {
      if (id !== before[k]) expect(before[k] === "t2" || id === "t5").toBe(true);
    });
    expect(infos.at(-1)).toMatchObject({ added: ["t5"], removed: ["t2"], targets: 5 });
    // The same set again: no change.
    timers.fire();
    await eventually(() => r.stats().membership?.refreshes === 3);
    expect(r.stats().membership?.changes).toBe(2);
    await r.close();
    expect(timers.size).toBe(0);
  });

  it("a provider that throws, returns nothing or returns invalid targets keeps the current set", async () => {
    let mode: "ok" | "throw" | "empty" | "invalid" = "ok";
    const timers = new ManualTimers();
    const warnings: string[] = [];
    const logger = { debug() {}, info() {}, warn: (m: string) => warnings.push(m), error() {} };
    const provider = async () => {
      if (mode === "throw") throw new Error("registry down");
      if (mode === "empty") return [];
      if (mode === "invalid") return [{ id: "" }];
      return ids(3);
    };
    const r = await createRouter({ targets: [], membership: withTimers({ targets: provider }, timers), logger });
    for (const [k, m] of (["throw", "empty", "invalid"] as const).entries()) {
      mode = m;
      timers.fire();
      await eventually(() => r.stats().membership?.errors === k + 1);
      expect(r.targets()).toHaveLength(3);
      r.route({ body: bodies[0] }).release();
    }
    expect(r.stats().membership?.lastError).toContain("non-empty string");
    expect(warnings).toHaveLength(3);
    await r.close();
  });

  it("validates its options (TypeError or RangeError, naming the option)", async () => {
    for (const membership of [{}, { targets: () => [], intervalMs: 5 }, withTimers({ targets: () => [] }, {} as never)]) {
      const err = await createRouter({ targets: [], membership: membership as never }).catch((e: unknown) => e);
      expect(err instanceof TypeError || err instanceof RangeError).toBe(true);
    }
  });
});

describe("membership behind an adapter", () => {
  it("a set the adapter could not send to (a target without baseURL) is refused like any invalid set; close() reaches the router", async () => {
    let current: { id: string; baseURL?: string }[] = [{ id: "a", baseURL: "http://10.0.0.1:8000/v1" }];
    const timers = new ManualTimers();
    const { router } = await createRoutedFetch<OpenAITarget>({ targets: [], membership: withTimers({ targets: () => current as OpenAITarget[] }, timers) });
    expect(router.targets().map((t) => t.id)).toEqual(["a"]);
    current = [{ id: "a", baseURL: "http://10.0.0.1:8000/v1" }, { id: "b" }];
    timers.fire();
    await eventually(() => router.stats().membership?.errors === 1);
    expect(router.stats().membership?.lastError).toContain("baseURL");
    expect(router.targets().map((t) => t.id)).toEqual(["a"]);
    expect(() => router.setTargets(current as never)).toThrow(/baseURL/);
    await router.close();
    expect(timers.size).toBe(0);
  });
});

describe("dnsTargets", () => {
  const resolver = (a: string[] | Error, aaaa: string[] | Error): DnsResolver => ({
    resolve4: async () => {
      if (a instanceof Error) throw a;
      return a;
    },
    resolve6: async () => {
      if (aaaa instanceof Error) throw aaaa;
      return aaaa;
    },
  });
  const noData = Object.assign(new Error("queryAaaa ENODATA"), { code: "ENODATA" });
  const servFail = Object.assign(new Error("queryA ESERVFAIL"), { code: "ESERVFAIL" });

  it("one target per A and AAAA record, sorted, with an OpenAI baseURL", async () => {
    const provider = dnsTargets({ hostname: "vllm.svc", port: 8000, resolver: resolver(["10.0.0.9", "10.0.0.2"], ["fd00::1"]) });
    expect(await provider()).toEqual([
      { id: "10.0.0.2:8000", baseURL: "http://10.0.0.2:8000/v1" },
      { id: "10.0.0.9:8000", baseURL: "http://10.0.0.9:8000/v1" },
      { id: "[fd00::1]:8000", baseURL: "http://[fd00::1]:8000/v1" },
    ]);
  });

  it("no records of one family is fine; a failed lookup rejects (membership keeps the set)", async () => {
    expect(await dnsTargets({ hostname: "h", port: 1, resolver: resolver(["10.0.0.1"], noData) })()).toHaveLength(1);
    await expect(dnsTargets({ hostname: "h", port: 1, resolver: resolver(servFail, ["fd00::1"]) })()).rejects.toThrow("ESERVFAIL");
    const timers = new ManualTimers();
    let fail = false;
    const base = dnsTargets({ hostname: "h", port: 1, resolver: resolver(["10.0.0.1", "10.0.0.2"], noData) });
    const r = await createRouter({ targets: [], membership: withTimers({ targets: () => (fail ? Promise.reject(servFail) : base()) }, timers) });
    fail = true;
    timers.fire();
    await eventually(() => r.stats().membership?.errors === 1);
    expect(r.targets()).toHaveLength(2);
    await r.close();
  });

  it("checks its options and builds targets with toTarget", async () => {
    expect(() => dnsTargets({ hostname: "", port: 1 })).toThrow("hostname");
    expect(() => dnsTargets({ hostname: "h", port: 0 })).toThrow("port");
    const provider = dnsTargets({ hostname: "h", port: 9, family: 4, resolver: resolver(["10.1.1.1"], servFail), toTarget: (address) => ({ id: address, weight: 2 }) });
    expect(await provider()).toEqual([{ id: "10.1.1.1", weight: 2 }]);
  });
});
