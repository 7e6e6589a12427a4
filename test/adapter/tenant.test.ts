/** The tenant identity both adapters resolve once per request (src/adapter/tenant.ts). */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { isRouterError } from "prefix-router";
import { TenantIdentity, appendMembers, missingFields } from "../../src/adapter/tenant.js";

/** The tenant `identity` resolves for a request carrying `id` (in `prompt_cache_key`) and `salt`, or the error code it refuses it with. */
function resolved<R>(identity: TenantIdentity<R>, request: R, id?: unknown, salt?: unknown): string | undefined {
  try {
    return identity.resolve({ id, idField: "prompt_cache_key", salt }, () => request).tenant;
  } catch (error) {
    return isRouterError(error) ? error.code : `unexpected ${String(error)}`;
  }
}

describe("TenantIdentity", () => {
  it("without isolation, prefers the id the request carries, then the option (a fixed id or a function of the request)", () => {
    const fixed = TenantIdentity.from<string>({ tenant: "acme" });
    expect(resolved(fixed, "unused")).toBe("acme");
    expect(resolved(fixed, "unused", "carried")).toBe("carried");
    expect(resolved(fixed, "unused", null)).toBe("acme");
    const derived = TenantIdentity.from<{ org: string }>({ tenant: (r) => `org-${r.org}` });
    expect(resolved(derived, { org: "7" })).toBe("org-7");
    let calls = 0;
    expect(derived.resolve({ id: "carried", idField: "prompt_cache_key", salt: undefined }, () => ({ org: String(++calls) })).tenant).toBe("carried");
    expect(calls).toBe(0);
    expect(resolved(TenantIdentity.from({}), {})).toBeUndefined();
    // A carried salt is the request's own business without isolation.
    expect(resolved(fixed, "unused", undefined, "any")).toBe("acme");
  });

  it('under isolation with a `tenant` option, the option decides: another carried id or any foreign cache_salt is ERR_TENANT_MISMATCH', () => {
    const secret = "0123456789abcdef-secret";
    const auth = TenantIdentity.from<{ org?: string }>({ tenant: (r) => r.org, isolation: "tenant", cacheSaltSecret: secret });
    expect(resolved(auth, { org: "acme" })).toBe("acme");
    expect(resolved(auth, { org: "acme" }, "acme")).toBe("acme");
    expect(resolved(auth, { org: "acme" }, null)).toBe("acme");
    expect(resolved(auth, { org: "acme" }, "globex")).toBe("ERR_TENANT_MISMATCH");
    expect(resolved(auth, { org: "acme" }, 42)).toBe("ERR_TENANT_MISMATCH");
    expect(resolved(auth, {}, "globex")).toBe("ERR_TENANT_MISMATCH");
    expect(resolved(auth, {})).toBeUndefined();
    // The salt the request would get anyway is no conflict; anything else is, null and "" included.
    expect(resolved(auth, { org: "acme" }, undefined, auth.salt("acme"))).toBe("acme");
    for (const salt of [auth.salt("globex"), "acme", "", null, 7]) expect(resolved(auth, { org: "acme" }, undefined, salt)).toBe("ERR_TENANT_MISMATCH");
    expect(resolved(auth, {}, undefined, "s")).toBe("ERR_TENANT_MISMATCH");
    // Without a `tenant` option the request's own id is its tenant; the salt is still prefix-router's alone.
    const carriedOnly = TenantIdentity.from({ isolation: "tenant" });
    expect(resolved(carriedOnly, {}, "globex")).toBe("globex");
    expect(resolved(carriedOnly, {}, "globex", "globex")).toBe("globex");
    expect(resolved(carriedOnly, {}, "globex", "acme")).toBe("ERR_TENANT_MISMATCH");
  });

  it("under isolation with a `tenant` option, no carried id but the option's own is ever resolved, and no salt but its tenant's", () => {
    const tenant = fc.stringMatching(/^[\x20-\x7e]{1,64}$/);
    fc.assert(
      fc.property(tenant, fc.option(tenant, { nil: undefined }), fc.option(fc.string(), { nil: undefined }), (own, named, salt) => {
        const identity = TenantIdentity.from<string>({ tenant: (r) => r, isolation: "tenant", cacheSaltSecret: "0123456789abcdef-secret" });
        let out: { tenant: string | undefined; salt: string | undefined } | undefined;
        try {
          out = identity.resolve({ id: named, idField: "prompt_cache_key", salt }, () => own);
        } catch (error) {
          expect(isRouterError(error) && error.code).toBe("ERR_TENANT_MISMATCH");
          expect(named !== undefined && named !== own ? true : salt !== undefined && salt !== identity.salt(own)).toBe(true);
          return;
        }
        expect(out).toEqual({ tenant: own, salt: identity.salt(own) });
      }),
    );
  });

  it("names the carried field and never echoes a salt in its messages", () => {
    const identity = TenantIdentity.from<string>({ tenant: "acme", isolation: "tenant", cacheSaltSecret: "0123456789abcdef-secret" });
    const foreign = identity.salt("globex")!;
    expect(() => identity.resolve({ id: "globex", idField: "PrefixAwareId", salt: undefined }, () => "")).toThrow(
      'Under isolation the `tenant` option decides: `PrefixAwareId` names "globex", the option "acme"',
    );
    let message = "";
    try {
      identity.resolve({ id: undefined, idField: "prompt_cache_key", salt: foreign }, () => "");
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toBe("Under isolation only prefix-router sets `cache_salt`: the request carries its own");
    expect(message).not.toContain(foreign);
    expect(message).not.toContain(identity.salt("acme"));
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

describe("missingFields and appendMembers", () => {
  it("adds only missing fields with a value", () => {
    const body = { model: "m", prompt_cache_key: "kept" };
    expect(missingFields(body, { prompt_cache_key: "other", cache_salt: undefined })).toEqual([]);
    expect(missingFields(body, { prompt_cache_key: "other", cache_salt: "s" })).toEqual([["cache_salt", "s"]]);
  });

  it("appends members before the closing brace, keeping the text before it byte for byte", () => {
    expect(appendMembers('{"a":1}', { a: 1 }, [["k", "v"]])).toBe('{"a":1,"k":"v"}');
    expect(appendMembers(' { } \n', {}, [["k", "v"], ["s", '"q"']])).toBe(' { "k":"v","s":"\\"q\\""} \n');
    expect(appendMembers('{"a":1}', { a: 1 }, [])).toBe('{"a":1}');
    const bytes = new TextEncoder().encode('{"é":"😀"}\r\n');
    expect(new TextDecoder().decode(appendMembers(bytes, { é: "😀" }, [["cache_salt", "s"]]))).toBe('{"é":"😀","cache_salt":"s"}\r\n');
  });

  it("is the object with the members added, for any JSON object, at any depth", () => {
    const depth = 100_000;
    const deep = `{"a":${"[".repeat(depth)}${"]".repeat(depth)}}`;
    const out = appendMembers(deep, JSON.parse(deep) as Record<string, unknown>, [["cache_salt", "s"]]);
    expect(out.endsWith(',"cache_salt":"s"}')).toBe(true);
    expect((JSON.parse(out) as Record<string, unknown>)["cache_salt"]).toBe("s");
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.string(), fc.string(), (object, value, pad) => {
        fc.pre(!("cache_salt" in object));
        const space = pad.replace(/[^ \n]/g, " ");
        const text = `${space}${JSON.stringify(object, null, space.length % 3)}${space}`;
        const parsed = JSON.parse(text) as Record<string, unknown>;
        expect(JSON.parse(appendMembers(text, parsed, [["cache_salt", value]]))).toEqual({ ...parsed, cache_salt: value });
      }),
    );
  });
});
