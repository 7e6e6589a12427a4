import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { redactText, redactURL } from "../../src/internal/redact.js";

describe("redactURL", () => {
  it.each([
    ["http://alice:pw@10.0.0.7:8000/metrics", "http://***:***@10.0.0.7:8000/metrics"],
    ["https://token@vllm.internal/health?x=1", "https://***@vllm.internal/health?x=1"],
    ["http://:pw@h/", "http://:***@h/"],
    ["redis://default:pw@127.0.0.1:6379/0", "redis://***:***@127.0.0.1:6379/0"],
    ["http://10.0.0.7:8000/metrics", "http://10.0.0.7:8000/metrics"],
    ["not a url, alice:pw@host", "not a url, alice:pw@host"],
    ["//alice:pw@host/x", "//alice:pw@host/x"],
  ])("%s → %s", (url, expected) => {
    expect(redactURL(url)).toBe(expected);
  });

  it("keeps everything but the user name and password, and leaves neither", () => {
    fc.assert(
      fc.property(fc.webUrl({ authoritySettings: { withUserInfo: true, withPort: true }, withQueryParameters: true, withFragments: true }), (url) => {
        const before = new URL(url);
        const after = new URL(redactURL(url));
        expect([before.protocol, before.host, before.pathname, before.search, before.hash]).toEqual([after.protocol, after.host, after.pathname, after.search, after.hash]);
        expect(after.username).toBe(before.username === "" ? "" : "***");
        expect(after.password).toBe(before.password === "" ? "" : "***");
      }),
    );
  });
});

describe("redactText", () => {
  it("removes the user info of a URL inside a message", () => {
    expect(redactText("Request cannot be constructed from a URL that includes credentials: http://alice:pw@h:1/metrics")).toBe(
      "Request cannot be constructed from a URL that includes credentials: http://***@h:1/metrics",
    );
    expect(redactText("HTTP 503 from http://h/metrics and https://a:b@c/d")).toBe("HTTP 503 from http://h/metrics and https://***@c/d");
  });

  it("leaves no user info in any URL of a text, and the rest as it was", () => {
    fc.assert(
      fc.property(fc.webUrl({ authoritySettings: { withUserInfo: true } }), fc.constantFrom("", "fetch failed: ", "x "), (url, lead) => {
        const out = redactText(`${lead}${url} (after)`);
        expect(out.startsWith(lead)).toBe(true);
        expect(out.endsWith(" (after)")).toBe(true);
        const redacted = new URL(out.slice(lead.length, -" (after)".length));
        expect(redacted.password).toBe("");
        expect(["", "***"]).toContain(redacted.username);
        expect(redacted.host).toBe(new URL(url).host);
      }),
    );
  });
});
