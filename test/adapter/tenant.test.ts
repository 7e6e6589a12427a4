/** The tenant identity both adapters resolve once per request (src/adapter/tenant.ts). */
import { describe, expect, it } from "vitest";
import { TenantIdentity, withFields } from "../../src/adapter/tenant.js";

describe("TenantIdentity", () => {
  it("prefers the id the request carries, then the option (a fixed id or a function of the request)", () => {
    const fixed = TenantIdentity.from<string>({ tenant: "acme" });
    expect(fixed.of(undefined, () => "unused")).toBe("acme");
    expect(fixed.of("carried", () => "unused")).toBe("carried");
    const derived = TenantIdentity.from<{ org: string }>({ tenant: (r) => `org-${r.org}` });
    expect(derived.of(undefined, () => ({ org: "7" }))).toBe("org-7");
    let calls = 0;
    expect(derived.of("carried", () => ({ org: String(++calls) }))).toBe("carried");
    expect(calls).toBe(0);
    expect(TenantIdentity.from({}).of(undefined, () => ({}))).toBeUndefined();
  });

  it("salts only under isolation and only with a tenant; with a secret, HMAC-SHA256 in base64url", () => {
    expect(TenantIdentity.from({ tenant: "a" }).salt("a")).toBeUndefined();
    const plain = TenantIdentity.from({ isolation: "tenant" });
    expect(plain.salt("tenant-a")).toBe("tenant-a");
    expect(plain.salt(undefined)).toBeUndefined();
    const keyed = TenantIdentity.from({ isolation: "tenant", cacheSaltSecret: "0123456789abcdef-secret" });
    const a = keyed.salt("tenant-a")!;
    expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(keyed.salt("tenant-a")).toBe(a);
    expect(keyed.salt("tenant-b")).not.toBe(a);
    expect(TenantIdentity.from({ isolation: "tenant", cacheSaltSecret: "another-secret-of-16" }).salt("tenant-a")).not.toBe(a);
  });

  it("names the option, the range and the value in its errors", () => {
    expect(() => TenantIdentity.from({ tenant: 7 as unknown as string })).toThrow("Expected `tenant` to be a tenant id or a function of the request, got 7");
    expect(() => TenantIdentity.from({ tenant: "" })).toThrow('Expected `tenant` to be 1 to 64 printable ASCII characters, got ""');
    expect(() => TenantIdentity.from({ tenant: "é" })).toThrow(RangeError);
    expect(() => TenantIdentity.from({ isolation: "strict" as "tenant" })).toThrow('Expected `isolation` to be one of "none", "tenant", got "strict"');
    expect(() => TenantIdentity.from({ isolation: "tenant", cacheSaltSecret: "short" })).toThrow(
      "Expected `cacheSaltSecret` to be a string of at least 16 characters, got 5 characters",
    );
  });
});

describe("withFields", () => {
  it("adds only missing fields with a value, and returns the same object when it adds nothing", () => {
    const body = { model: "m", prompt_cache_key: "kept" };
    expect(withFields(body, { prompt_cache_key: "other", cache_salt: undefined })).toBe(body);
    const out = withFields(body, { prompt_cache_key: "other", cache_salt: "s" });
    expect(out).toEqual({ model: "m", prompt_cache_key: "kept", cache_salt: "s" });
    expect(body).toEqual({ model: "m", prompt_cache_key: "kept" });
  });
});
