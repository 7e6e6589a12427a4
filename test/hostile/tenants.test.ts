/**
 * Hostile tenant ids at the router and through the OpenAI adapter (`prompt_cache_key`): anything
 * but 1–64 printable ASCII characters is `ERR_INVALID_TENANT` with nothing counted or sent; valid
 * ids at the edges route; distinct tenants with one prompt get distinct keys.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createRouter, isRouterError } from "prefix-router";
import { createRoutedFetch } from "prefix-router/openai";
import { codeOf } from "../support.js";
import { chatBody, useServer } from "./servers.js";

const targets = [{ id: "a" }, { id: "b" }, { id: "c" }];

const INVALID: [string, unknown][] = [
  ["empty", ""],
  ["65 characters", "t".repeat(65)],
  ["a tab", "a\tb"],
  ["CR LF", "a\r\nb"],
  ["NUL", "a\u0000b"],
  ["DEL", "a\u007fb"],
  ["Latin-1", "tenant-é"],
  ["an emoji", "tenant-😀"],
  ["a lone surrogate", "tenant-\ud800"],
  ["a number", 42],
  ["an object", { id: "x" }],
  ["an array", ["x"]],
  ["true", true],
];

const VALID: [string, string][] = [
  ["one character", "a"],
  ["64 characters", "t".repeat(64)],
  ["a space", " "],
  ["every printable punctuation", "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"],
];

describe("tenant ids", () => {
  it.each(INVALID)("router.route, %s: ERR_INVALID_TENANT, nothing counted", async (_name, tenant) => {
    const router = await createRouter({ targets });
    expect(codeOf(() => router.route({ body: chatBody("t"), tenant: tenant as string }))).toBe("ERR_INVALID_TENANT");
    expect(router.stats().totals.routed).toBe(0);
  });

  it.each(VALID)("router.route, %s: routed", async (_name, tenant) => {
    const router = await createRouter({ targets });
    const lease = router.route({ body: chatBody("t"), tenant });
    expect(lease.key).toMatch(/^[0-9a-f]{16}$/);
    lease.release();
    expect(router.stats().totals.inflight).toBe(0);
  });

  it("distinct tenants with one prompt never share a key", async () => {
    const router = await createRouter({ targets });
    const tenant = fc.stringMatching(/^[\x20-\x7e]{1,64}$/);
    fc.assert(
      fc.property(tenant, tenant, (x, y) => {
        fc.pre(x !== y);
        const body = chatBody("shared system prompt");
        expect(router.rank({ body, tenant: x }).key).not.toBe(router.rank({ body, tenant: y }).key);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("prompt_cache_key through createRoutedFetch", () => {
  const served = useServer();

  it.each(INVALID)("%s: ERR_INVALID_TENANT, nothing sent", async (_name, tenant) => {
    const { fetch, router } = await createRoutedFetch({ targets: [{ id: "a", baseURL: `${served().origin}/v1` }] });
    const before = served().heads;
    const body = JSON.stringify(chatBody("t", { prompt_cache_key: tenant }));
    const error = await fetch("http://fleet.invalid/v1/chat/completions", { method: "POST", body }).catch((e: unknown) => e);
    expect(isRouterError(error) && error.code).toBe("ERR_INVALID_TENANT");
    expect(served().heads).toBe(before);
    expect(router.stats().totals.routed).toBe(0);
  });

  it("a null prompt_cache_key is no tenant: routed and sent", async () => {
    const { fetch, router } = await createRoutedFetch({ targets: [{ id: "a", baseURL: `${served().origin}/v1` }] });
    const res = await fetch("http://fleet.invalid/v1/chat/completions", { method: "POST", body: JSON.stringify(chatBody("t", { prompt_cache_key: null })) });
    await res.json();
    expect(router.stats().totals).toMatchObject({ routed: 1, inflight: 0 });
  });
});
