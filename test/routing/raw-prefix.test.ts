/**
 * The raw-prefix fallback: `jsonPrefix` writes the beginning of `JSON.stringify(value)` without
 * recursion and never throws; the router routes a body whose prefix cannot be canonicalized on
 * that raw prefix, marks it `raw`, and leaves every other body canonical.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type Decision, createRouter } from "prefix-router";
import { jsonPrefix, rawPrefixBody } from "../../src/routing/raw-prefix.js";

describe("jsonPrefix", () => {
  it("is a prefix of JSON.stringify, at least maxUnits long or all of it", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.integer({ min: 1, max: 400 }), (value, n) => {
        const full = JSON.stringify(value);
        const prefix = jsonPrefix(value, n);
        expect(full.startsWith(prefix)).toBe(true);
        expect(prefix.length).toBeGreaterThanOrEqual(Math.min(n, full.length));
      }),
      { numRuns: 500 },
    );
  });

  it("writes what JSON.stringify writes for undefined, functions, symbols, non-finite numbers and toJSON", () => {
    const value = { a: undefined, b: () => 1, c: Symbol("s"), d: [undefined, () => 1, Number.NaN, -0], e: new Date(0), f: { toJSON: () => "t" } };
    expect(jsonPrefix(value, 1000)).toBe(JSON.stringify(value));
    expect(jsonPrefix(undefined, 10)).toBe("");
  });

  it("never throws: 100,000 levels, cycles, BigInt, getters and toJSON that throw", () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = { k: [deep] };
    expect(jsonPrefix(deep, 50)).toBe('{"k":[{"k":[{"k":[{"k":[{"k":[{"k":[{"k":[{"k":[{"k":[');
    const cycle: Record<string, unknown> = { name: "loop" };
    cycle.self = cycle;
    expect(jsonPrefix(cycle, 40)).toMatch(/^\{"name":"loop","self":\{"name":"loop","self":/);
    const hostile = {
      big: 12n,
      get boom(): unknown {
        throw new Error("getter");
      },
      bad: { toJSON: () => { throw new Error("toJSON"); } },
    };
    expect(jsonPrefix(hostile, 100)).toBe('{"big":12,"boom":null,"bad":null}');
  });

  it("cuts a long string near the budget, not after it", () => {
    const out = jsonPrefix({ s: "x".repeat(1_000_000) }, 100);
    expect(out.length).toBeLessThan(120);
    expect(out.startsWith('{"s":"xxx')).toBe(true);
  });
});

describe("rawPrefixBody", () => {
  it("text mode: the body's JSON text as a prompt; bytes mode: 0x00 then the raw bytes, never parsed again", () => {
    expect(rawPrefixBody("text", { b: 1, a: [2] }, 10)).toEqual({ prompt: '{"b":1,"a":[2]}' });
    const bytes = rawPrefixBody("bytes", '{"b":1}', 1024) as Uint8Array;
    expect([...bytes]).toEqual([0, ...new TextEncoder().encode('{"b":1}')]);
    expect((rawPrefixBody("bytes", new Uint8Array(5000), 1024) as Uint8Array).length).toBe(1025);
    expect(new TextDecoder().decode((rawPrefixBody("bytes", { z: 1 }, 1024) as Uint8Array).subarray(1))).toBe('{"z":1}');
  });
});

describe("the router's fallback", () => {
  const targets = [{ id: "a" }, { id: "b" }, { id: "c" }];
  const deep = (depth: number, tail = "x") => `{"messages":[{"role":"user","content":${"[".repeat(depth)}"${tail}"${"]".repeat(depth)}}]}`;

  it("only a body too deep inside its prefix is read raw: a shallower one, or one deep past the prefix, stays canonical", async () => {
    const decisions: Decision[] = [];
    const router = await createRouter({ targets, mode: "bytes", onDecision: (d) => decisions.push(d) });
    router.route({ body: deep(1000) }).release();
    router.route({ body: deep(1100) }).release();
    // 5,000 characters of text first: the prefix is full before the nesting begins.
    router.route({ body: `{"a":"${"p".repeat(5000)}","b":${"[".repeat(3000)}${"]".repeat(3000)}}` }).release();
    expect(decisions.map((d) => d.input)).toEqual(["canonical", "raw", "canonical"]);
  });

  it("the raw route is deterministic, reads only the prefix, and is shared by retries and rank()", async () => {
    const router = await createRouter({ targets });
    const a = router.route({ body: deep(5000, "tail one") });
    const b = router.route({ body: deep(5000, "tail two") });
    expect([a.input, b.input]).toEqual(["raw", "raw"]);
    expect(a.key).toBe(b.key);
    const prepared = router.prepare({ body: deep(5000) });
    const first = router.route(prepared);
    const retry = router.route(prepared, { exclude: [first.target.id], attempt: 2 });
    expect(retry.input).toBe("raw");
    expect(retry.target.id).toBe(router.rank(prepared).targets[1]?.id);
    for (const l of [a, b, first, retry]) l.release();
    expect(router.stats().totals.inflight).toBe(0);
  });

  it("every built-in strategy routes a too-deep body", async () => {
    for (const strategy of ["prefix-aware", "longest-prefix", "least-outstanding", "random"] as const) {
      for (const mode of ["text", "bytes"] as const) {
        const router = await createRouter({ targets, strategy, mode });
        const lease = router.route({ body: deep(3000) });
        expect(targets.map((t) => t.id)).toContain(lease.target.id);
        lease.release();
      }
    }
  });

  it("other canonicalization failures of an object body are still the caller's: a cycle, a BigInt", async () => {
    const router = await createRouter({ targets, mode: "bytes" });
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(() => router.route({ body: cycle })).toThrowError(expect.objectContaining({ code: "ERR_CYCLE" }));
    expect(() => router.route({ body: { n: 1n } })).toThrowError(expect.objectContaining({ code: "ERR_UNSERIALIZABLE" }));
    expect(router.stats().totals.routed).toBe(0);
  });
});
