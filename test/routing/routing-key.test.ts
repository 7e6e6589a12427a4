import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { createRouter, validateTenant } from "prefix-router";
import { KeyHasher, loadHasher } from "../../src/routing/routing-key.js";
import { codeOf } from "../support.js";

type Api = Awaited<ReturnType<typeof loadHasher>>;
let api: Api;
beforeAll(async () => {
  api = await loadHasher();
});

const enc = new TextEncoder();
const hex = (k: bigint | undefined) => (k === undefined ? "none" : k.toString(16).padStart(16, "0"));
const PROMPT = "\u0000muser\u0000chello";


describe("routing key — known-answer vectors (changing any of them is a breaking change)", () => {
  const vectors: {
    name: string;
    mode: "text" | "bytes";
    tenant?: string;
    model?: string;
    prefix: string | Uint8Array;
    seed: bigint;
    key: string;
  }[] = [
    { name: "text, no tenant, no model", mode: "text", prefix: PROMPT, seed: 0n, key: "3aa3fcd3fa37fed2" },
    { name: "text, tenant and model", mode: "text", tenant: "acme", model: "llama-3.1-70b", prefix: PROMPT, seed: 0n, key: "c4440a54136f8b3d" },
    { name: "bytes, same prefix bytes", mode: "bytes", tenant: "acme", model: "llama-3.1-70b", prefix: enc.encode(PROMPT), seed: 0n, key: "7488d2d75c7264f1" },
    { name: "seed 1", mode: "text", tenant: "acme", model: "llama-3.1-70b", prefix: PROMPT, seed: 1n, key: "d5d55c7056d38068" },
    { name: "seed 2^64-1", mode: "text", tenant: "acme", model: "llama-3.1-70b", prefix: PROMPT, seed: 0xffff_ffff_ffff_ffffn, key: "ff63077254ed3b61" },
    { name: "empty model", mode: "text", model: "", prefix: "x", seed: 0n, key: "bd46263e78ac025e" },
    { name: "non-ASCII prefix", mode: "text", tenant: "t", model: "m", prefix: "😀é\u0000", seed: 0n, key: "f2cce1dca8376c7e" },
    { name: 'tenant "a", model "bc"', mode: "text", tenant: "a", model: "bc", prefix: "p", seed: 0n, key: "7d559f3d28c4967e" },
    { name: 'tenant "ab", model "c"', mode: "text", tenant: "ab", model: "c", prefix: "p", seed: 0n, key: "25524536cc01d552" },
  ];

  for (const v of vectors) {
    it(v.name, () => {
      expect(hex(new KeyHasher(api, v.seed).key(v.mode, v.tenant, v.model, v.prefix))).toBe(v.key);
    });
  }

  it("target hashes", () => {
    const h = new KeyHasher(api, 0n);
    expect(hex(h.targetHash("a"))).toBe("9a7c6d2ea45568c9");
    expect(hex(h.targetHash("b"))).toBe("16a966aee4250233");
    expect(hex(h.targetHash("replica-0"))).toBe("1f8cd471adcf8eea");
  });

  it("end to end through the public API: keys and rankings of fixed requests", async () => {
    const targets = ["r0", "r1", "r2", "r3", "r4", "r5", "r6"].map((id) => ({ id }));
    const text = await createRouter({ targets });
    const ask = (q: string) => ({ body: { model: "m", messages: [{ role: "user", content: q }] } });
    const expected: [string, string, string][] = [
      ["hello", "98776b1521717654", "r0,r1,r3,r2,r5,r4,r6"],
      ["what is the refund policy?", "cef43239f376bdfd", "r4,r6,r1,r3,r0,r5,r2"],
      ["bonjour", "56f0fff9534c8580", "r4,r5,r0,r1,r6,r3,r2"],
    ];
    for (const [q, key, order] of expected) {
      const ranking = text.rank(ask(q));
      expect(ranking.key, q).toBe(key);
      expect(ranking.targets.map((t) => t.id).join(","), q).toBe(order);
      expect(text.route(ask(q)).target.id, q).toBe(order.split(",")[0]);
    }
    const bytes = await createRouter({ targets, mode: "bytes", seed: 42 });
    const ranking = bytes.rank({ ...ask("hello"), tenant: "acme" });
    expect(ranking.key).toBe("cf3e631c6e20d1f2");
    expect(ranking.targets.map((t) => t.id).join(",")).toBe("r5,r2,r6,r3,r4,r0,r1");
  });
});

describe("routing key — encoding", () => {
  it("is xxHash64 of the documented length-prefixed layout", () => {
    const u32 = (n: number) => [n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, n >>> 24];
    const tenant = [..."acme"].map((c) => c.charCodeAt(0));
    const model = [...enc.encode("llama-3.1-70b")];
    const prefix = [...enc.encode(PROMPT)];
    const layout = new Uint8Array([1, 0x74, tenant.length, ...tenant, ...u32(model.length), ...model, ...u32(prefix.length), ...prefix]);
    expect(new KeyHasher(api, 7n).key("text", "acme", "llama-3.1-70b", PROMPT)).toBe(api.h64Raw(layout, 7n));
    const noModel = new Uint8Array([1, 0x62, 0, ...u32(0xffff_ffff), ...u32(1), 0x41]);
    expect(new KeyHasher(api, 0n).key("bytes", undefined, undefined, new Uint8Array([0x41]))).toBe(api.h64Raw(noModel, 0n));
  });

  it('separates parts by length: tenant "a" + model "bc" differs from "ab" + "c"', () => {
    const h = new KeyHasher(api, 0n);
    expect(h.key("text", "a", "bc", "p")).not.toBe(h.key("text", "ab", "c", "p"));
    expect(h.key("text", undefined, "ab", "c")).not.toBe(h.key("text", undefined, "a", "bc"));
    expect(h.key("text", undefined, undefined, "p")).not.toBe(h.key("text", undefined, "", "p"));
    expect(h.key("text", undefined, "m", "p")).not.toBe(h.key("bytes", undefined, "m", enc.encode("p")));
  });

  it("different seeds give different keys; the same seed the same key (property)", () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 0xffff_ffff_ffff_ffffn }),
        fc.bigInt({ min: 0n, max: 0xffff_ffff_ffff_ffffn }),
        fc.string({ minLength: 1, maxLength: 40 }),
        (s1, s2, prefix) => {
          fc.pre(s1 !== s2);
          const a = new KeyHasher(api, s1).key("text", "t", "m", prefix);
          expect(new KeyHasher(api, s1).key("text", "t", "m", prefix)).toBe(a);
          expect(new KeyHasher(api, s2).key("text", "t", "m", prefix)).not.toBe(a);
        },
      ),
    );
  });

  it("one hasher reused for long then short inputs gives the same keys as a fresh one", () => {
    const h = new KeyHasher(api, 3n);
    const long = "x".repeat(70_000);
    const kLong = h.key("text", "t", "m", long);
    const kShort = h.key("text", "t", "m", "y");
    expect(new KeyHasher(api, 3n).key("text", "t", "m", "y")).toBe(kShort);
    expect(new KeyHasher(api, 3n).key("text", "t", "m", long)).toBe(kLong);
  });

  it("different tenants with the same prompt get different keys through the router", async () => {
    const router = await createRouter({ targets: [{ id: "a" }, { id: "b" }] });
    const body = { messages: [{ role: "system", content: "same" }] };
    const k1 = router.rank({ body, tenant: "tenant-1" }).key;
    const k2 = router.rank({ body, tenant: "tenant-2" }).key;
    const k0 = router.rank({ body }).key;
    expect(new Set([k1, k2, k0]).size).toBe(3);
  });
});

describe("tenant validation", () => {
  it("accepts 1 to 64 printable ASCII characters", () => {
    for (const t of ["a", " ", "~", "x".repeat(64), "Tenant-42_prod.eu/1 !", " ~"]) expect(validateTenant(t)).toBe(t);
  });

  it("rejects anything else with ERR_INVALID_TENANT", () => {
    for (const t of ["", "x".repeat(65), "café", "tab\there", "nl\n", "\u007f", "\u0000", "😀", 42, null, undefined]) {
      expect(codeOf(() => validateTenant(t)), JSON.stringify(t)).toBe("ERR_INVALID_TENANT");
    }
  });

  it("is enforced by route and rank", async () => {
    const router = await createRouter({ targets: [{ id: "a" }] });
    const body = { messages: [{ role: "user", content: "hi" }] };
    expect(codeOf(() => router.route({ body, tenant: "" }))).toBe("ERR_INVALID_TENANT");
    expect(codeOf(() => router.route({ body, tenant: "x".repeat(65) }))).toBe("ERR_INVALID_TENANT");
    expect(codeOf(() => router.rank({ body, tenant: "ü" }))).toBe("ERR_INVALID_TENANT");
    expect(router.stats().totals.inflight).toBe(0);
  });

  it("names the rule and the value in the message", () => {
    expect(() => validateTenant("café")).toThrow(/1 to 64 printable ASCII characters, got "café"/);
  });
});
