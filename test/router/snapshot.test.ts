/**
 * The snapshot's eligibility-by-model cache (src/snapshot.ts): clients choose model names, so
 * what the cache keeps is bounded in characters, not only in entries, and a name too long to be
 * remembered is still answered right.
 */
import { describe, expect, it } from "vitest";
import { createRouter, isRouterError } from "prefix-router";
import { MODEL_CACHE_MAX_CHARS, MODEL_CACHE_MAX_NAME_CHARS } from "../../src/router/snapshot.js";

/** Characters of model names the router's current snapshot keeps (a look inside: the cache is private). */
function cachedChars(router: object): number {
  const snapshot = (router as { snapshot?: { byModel?: { keys(): Iterable<string> } } }).snapshot;
  const cache = snapshot?.byModel;
  if (cache === undefined) throw new Error("the router has no snapshot model cache to inspect");
  let chars = 0;
  for (const model of cache.keys()) chars += model.length;
  return chars;
}

const body = { messages: [{ role: "user", content: "hello" }] };

describe("the model cache", () => {
  it("keeps at most MODEL_CACHE_MAX_CHARS characters of model names, whatever the names sent", async () => {
    const router = await createRouter({ targets: [{ id: "a" }, { id: "b" }] });
    // 300 requests with distinct 64 Ki-character model names: 19.7 M characters sent.
    const pad = "m".repeat(64 * 1024);
    for (let i = 0; i < 300; i++) router.route({ body, model: `${i}:${pad}` }).release();
    expect(cachedChars(router)).toBeLessThan(1024 * 1024);
    expect(cachedChars(router)).toBeLessThanOrEqual(MODEL_CACHE_MAX_CHARS);
    // Names of every length up to the per-name limit, more than fit: still bounded, still cached.
    for (let i = 0; i < 2000; i++) router.route({ body, model: `${i}:`.padEnd(1 + (i % MODEL_CACHE_MAX_NAME_CHARS), "x") }).release();
    expect(cachedChars(router)).toBeGreaterThan(MODEL_CACHE_MAX_CHARS / 2);
    expect(cachedChars(router)).toBeLessThanOrEqual(MODEL_CACHE_MAX_CHARS);
    expect(router.stats().totals).toMatchObject({ routed: 2300, inflight: 0 });
  });

  it("answers a name too long to remember right on every request, and names it shortly in errors", async () => {
    const long = `lora:${"x".repeat(MODEL_CACHE_MAX_NAME_CHARS * 4)}`;
    const router = await createRouter({ targets: [{ id: "base", models: ["llama"] }, { id: "lora", models: ["llama", long] }] });
    for (let i = 0; i < 3; i++) {
      const lease = router.route({ body, model: long });
      expect(lease.target.id).toBe("lora");
      lease.release();
    }
    expect(cachedChars(router)).toBe(0);
    let message = "";
    try {
      router.route({ body, model: `${long}y` });
    } catch (error) {
      expect(isRouterError(error) && error.code).toBe("ERR_NO_ELIGIBLE_TARGET");
      message = (error as Error).message;
    }
    expect(message.length).toBeLessThan(300);
    expect(message).toContain(`(${long.length + 1} characters)`);
  });
});
