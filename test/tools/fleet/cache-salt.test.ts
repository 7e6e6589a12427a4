/** vLLM's `cache_salt` on the emulated engine: a prefix-cache namespace per salt, virtual and live. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_MODEL, type LiveFleet, VirtualFleet, isFleetError, startFleet } from "prefix-router/fleet";
import { cacheNamespace, cacheSaltOf } from "../../../tools/fleet/cache-salt.js";

const PROMPT = "A shared system prompt that two tenants both send. ".repeat(80);

/** Cached tokens of each request, sent in order to one virtual instance. */
function cachedInOrder(salts: (string | undefined)[]): number[] {
  const fleet = new VirtualFleet({ instances: 1 });
  const out: number[] = [];
  salts.forEach((cacheSalt, i) => {
    fleet.advanceTo(i * 1000);
    fleet.submit("i0", { id: i, prompt: PROMPT, outputTokens: 4, ...(cacheSalt === undefined ? {} : { cacheSalt }) }, { onDone: (r) => out.push(r.cachedTokens) });
    fleet.runUntilIdle();
  });
  return out;
}

describe("cache_salt", () => {
  it("shares cached blocks only between requests of the same salt (or both without one)", () => {
    const [a, b, a2, none, none2, b2] = cachedInOrder(["a", "b", "a", undefined, undefined, "b"]);
    expect([a, b, none]).toEqual([0, 0, 0]);
    expect(a2).toBeGreaterThan(900);
    expect(none2).toBe(a2);
    expect(b2).toBe(a2);
  });

  it("is a namespace within the model, and is validated as vLLM does", () => {
    expect(cacheNamespace("m", undefined)).toBe("m");
    expect(cacheNamespace("m", "s")).not.toBe(cacheNamespace("m", "t"));
    expect(cacheNamespace("m", "s")).not.toBe(cacheNamespace("n", "s"));
    expect(cacheSaltOf({ cache_salt: null })).toBeUndefined();
    for (const bad of ["", 7, ["s"]]) {
      let error: unknown;
      try {
        cacheSaltOf({ cache_salt: bad });
      } catch (e) {
        error = e;
      }
      expect(isFleetError(error) && error.code).toBe("INVALID_REQUEST");
    }
  });
});

describe("cache_salt on the live servers", () => {
  let fleet: LiveFleet;
  beforeAll(async () => {
    fleet = await startFleet({ instances: 1, timeScale: 0.005, defaultMaxTokens: 2 });
  });
  afterAll(async () => {
    await fleet?.stop();
  });

  const chat = (salt: unknown) =>
    fetch(`${fleet.urls[0]}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: DEFAULT_MODEL, messages: [{ role: "user", content: PROMPT }], ...(salt === undefined ? {} : { cache_salt: salt }) }),
    });

  it("answers an invalid cache_salt with vLLM's 400, and caches per salt", async () => {
    const bad = await chat("");
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toBe("Parameter 'cache_salt' must be a non-empty string if provided.");
    const cached = async (salt: string | undefined) => Number((await chat(salt)).headers.get("x-prefix-router-cached-tokens"));
    expect([await cached("x"), await cached("y"), await cached("x"), await cached(undefined)]).toEqual([0, 0, expect.any(Number), 0]);
    expect(await cached("y")).toBeGreaterThan(900);
  });
});
