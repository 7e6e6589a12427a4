import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { DEFAULT_MODEL, VirtualFleet, startFleet, type VirtualResult } from "prefix-router/fleet";
import { KvCache } from "../../../tools/fleet/kv-cache.js";
import { blockKeys } from "../../../tools/fleet/tokenizer.js";

const doc = (tag: string) => `${tag} `.repeat(2000);

describe("restarting a replica", () => {
  it("KvCache.clear forgets every prefix; blocks in use stay with their request", () => {
    const cache = new KvCache(100, 16);
    const keys = blockKeys(doc("a"), 16, "m").subarray(0, 10);
    const held = cache.allocate(keys, 0, 10)!;
    expect(cache.lookup(keys, 10_000)).toBe(10);
    cache.clear();
    expect(cache.lookup(keys, 10_000)).toBe(0);
    expect(cache.usage()).toEqual({ usedBlocks: 10, cachedBlocks: 0, numBlocks: 100 });
    cache.release(held);
    expect(cache.usage()).toEqual({ usedBlocks: 0, cachedBlocks: 0, numBlocks: 100 });
  });

  it("VirtualFleet.restartInstance: the next request starts cold, a request in flight finishes, other instances keep their cache", () => {
    const fleet = new VirtualFleet({ instances: 2 });
    const done: VirtualResult[] = [];
    const send = (id: string, n: number) => fleet.submit(id, { id: n, prompt: doc("d") + `q${n}`, outputTokens: 50 }, { onDone: (r) => done.push(r) });
    for (const id of ["i0", "i1"]) send(id, done.length);
    fleet.runUntilIdle();
    send("i0", 2); // in flight across the restart
    fleet.advanceTo(fleet.now + 100);
    fleet.restartInstance("i0");
    fleet.runUntilIdle();
    send("i0", 3);
    send("i1", 4);
    fleet.runUntilIdle();
    const cached = Object.fromEntries(done.map((r) => [r.id, r.cachedTokens]));
    expect(cached[2]).toBeGreaterThan(900);
    expect(cached[3]).toBe(0);
    expect(cached[4]).toBeGreaterThan(900);
    expect(fleet.engine("i0").restarts).toBe(1);
  });

  it("LiveInstance.restart and POST /reset_prefix_cache: same port, empty cache", async () => {
    const fleet = await startFleet({ instances: 1, timeScale: 0.002 });
    try {
      const client = new OpenAI({ baseURL: `${fleet.urls[0]}/v1`, apiKey: "x", maxRetries: 0 });
      const ask = async (q: string) =>
        (await client.chat.completions.create({ model: DEFAULT_MODEL, messages: [{ role: "user", content: doc("live") + q }], max_tokens: 2 })).usage
          ?.prompt_tokens_details?.cached_tokens;
      await ask("1");
      expect(await ask("2")).toBeGreaterThan(1900);
      fleet.instance("i0").restart();
      expect(await ask("3")).toBe(0);
      expect(await ask("4")).toBeGreaterThan(1900);
      // vLLM's endpoint, from outside.
      const reset = await fetch(`${fleet.urls[0]}/reset_prefix_cache`, { method: "POST" });
      expect([reset.status, await reset.json()]).toEqual([200, { status: "ok" }]);
      expect(await ask("5")).toBe(0);
      expect(fleet.instance("i0").engine.restarts).toBe(2);
    } finally {
      await fleet.stop();
    }
  });
});
