/**
 * Joining a request onto a target's base URL: with `URL`, never by concatenation, and checked —
 * whatever the request path, the result is under the target's base or `ERR_CROSS_ORIGIN`.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isRouterError } from "prefix-router";
import { isUnder, joinTarget, parseBase, relativeTo } from "../../src/openai/targets.js";

const join = (base: string, path: string, search = "", strip = false) =>
  joinTarget(parseBase("base", base), { path, search, stripTargetPath: strip }, "t");

describe("joinTarget", () => {
  it.each([
    ["http://10.0.0.7:8000/v1", "/chat/completions", "?a=1", "http://10.0.0.7:8000/v1/chat/completions?a=1"],
    ["http://10.0.0.7:8000/v1/", "/chat/completions", "", "http://10.0.0.7:8000/v1/chat/completions"],
    ["http://10.0.0.7:8000", "/v1/models", "", "http://10.0.0.7:8000/v1/models"],
    ["https://[::1]:8443/api/v1", "", "", "https://[::1]:8443/api/v1"],
    ["http://h/v1", "//evil.example/x", "", "http://h/v1//evil.example/x"],
  ])("%s + %s%s = %s", (base, path, search, expected) => {
    expect(join(base, path, search)).toBe(expected);
  });

  it.each([
    ["a path that does not start with /", "http://127.0.0.1:4", "2549/v1/chat/completions"],
    ["userinfo", "http://vllm-0.internal", "@attacker.example/v1"],
    ["a host continuation", "http://vllm-0.internal", ".attacker.example/v1"],
    ["dot segments out of the base path", "http://h/v1", "/../admin"],
    ["encoded dot segments out of the base path", "http://h/v1", "/%2e%2e/admin"],
  ])("refuses %s with ERR_CROSS_ORIGIN", (_name, base, path) => {
    let error: unknown;
    try {
      join(base, path);
    } catch (e) {
      error = e;
    }
    expect(isRouterError(error) && error.code).toBe("ERR_CROSS_ORIGIN");
  });

  it("whatever the path and query, the result is under the target's base, or refused", () => {
    const base = parseBase("base", "http://10.0.0.7:8000/v1");
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), fc.string(), fc.boolean(), (path, search, strip) => {
        let url: string;
        try {
          url = joinTarget(base, { path, search: search === "" ? "" : `?${search}`, stripTargetPath: strip }, "t");
        } catch (e) {
          expect(isRouterError(e) && e.code).toBe("ERR_CROSS_ORIGIN");
          return;
        }
        expect(isUnder(new URL(url), base)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("relativeTo", () => {
  const base = parseBase("baseURL", "http://fleet/v1");
  it("keeps what follows the client's base; anything else is not routed", () => {
    expect(relativeTo(base, new URL("http://fleet/v1/chat/completions?x=1"))).toEqual({ path: "/chat/completions", search: "?x=1", stripTargetPath: false });
    expect(relativeTo(base, new URL("http://fleet/v10/chat"))).toBeUndefined();
    expect(relativeTo(base, new URL("http://other/v1/chat"))).toBeUndefined();
    expect(relativeTo(base, new URL("https://fleet/v1/chat"))).toBeUndefined();
  });
  it("without a client base refuses every scheme but http(s)", () => {
    for (const url of ["x:2549/v1", "javascript:alert(1)", "file:///etc/passwd", "data:,x", "ws://h/v1"]) {
      expect(() => relativeTo(undefined, new URL(url))).toThrowError(expect.objectContaining({ code: "ERR_CROSS_ORIGIN" }));
    }
  });
});
