import fc from "fast-check";
import xxhash from "xxhash-wasm";
import { describe, expect, it } from "vitest";
import { writeUtf16le } from "../../../src/routing/prefix-writer.js";
import { STRATEGIES, createRouter, routingInput, type Lease, type LoadView, type LongestPrefixOptions, type Router, type RouterOptions, type TargetSpec, DEFAULTS } from "prefix-router";
import { FakeClock } from "../../support.js";

// ---------------------------------------------------------------------------------------------
// helpers


/** Deterministic filler text: `chars` characters that depend on `id` from the first word on. */
function text(id: string, chars: number): string {
  let out = "";
  let x = 0x811c9dc5;
  for (const c of id) x = Math.imul(x ^ c.charCodeAt(0), 0x01000193);
  while (out.length < chars) {
    x = Math.imul(x ^ (x >>> 15), 0x2c1b3c6d) >>> 0;
    out += `${id}-${x.toString(36)} `;
  }
  return out.slice(0, chars);
}

/** Known answers of the routing key and ranking (bytes mode, 5 targets, seed 0). */
const KEY = "5b948c7f00000100";
const ORDER = ["t4", "t1", "t0", "t2", "t3"];
// With a tenant, every block's seed takes the other 32 bits of the tenant's hash (the tenant fix
// changed these two; they were 40b9419b00000100 and t1, t0, t4, t3, t2).
const TENANT_KEY = "4866815700000100";
const TENANT_ORDER = ["t4", "t2", "t3", "t1", "t0"];

const SYSTEM = text("system prompt", 3000);

/** A chat body: the shared system prompt, then `doc`, then `question`. */
const rag = (doc: string, question = "What does it say?") => ({
  model: "m",
  messages: [
    { role: "system", content: SYSTEM },
    { role: "user", content: `${text(doc, 6000)}\n\nQuestion: ${question}` },
  ],
});

const ids = (n: number): TargetSpec[] => Array.from({ length: n }, (_, i) => ({ id: `t${i}` }));

function lp(targets: TargetSpec[], longestPrefix: LongestPrefixOptions = {}, extra: Partial<RouterOptions> = {}): Promise<Router> {
  return createRouter({ targets, strategy: "longest-prefix", ejection: false, random: () => 0.5, ...extra, longestPrefix });
}

/** Routes `body` to `id` by excluding every other target; releases at once. */
function sendTo(router: Router, id: string, body: object, tenant?: string): void {
  const others = router.targets().map((t) => t.id).filter((x) => x !== id);
  const lease = router.route({ body, ...(tenant === undefined ? {} : { tenant }) }, { exclude: others });
  expect(lease.target.id).toBe(id);
  lease.release();
}

const first = (router: Router, body: object, tenant?: string) =>
  router.rank({ body, ...(tenant === undefined ? {} : { tenant }) }).targets[0]?.id;

/**
 * Routes `bodies` in order while keeping `open` leases in flight (the oldest is released first):
 * a steady stream at a fixed concurrency. Returns the picks per target id.
 */
function stream(router: Router, bodies: Iterable<object>, open: number): Map<string, number> {
  const counts = new Map<string, number>();
  const leases: Lease[] = [];
  for (const body of bodies) {
    if (leases.length >= open) leases.shift()?.release();
    const lease = router.route({ body });
    counts.set(lease.target.id, (counts.get(lease.target.id) ?? 0) + 1);
    leases.push(lease);
  }
  for (const lease of leases) lease.release();
  return counts;
}

function* bodies(n: number, make: (i: number) => object): Generator<object> {
  for (let i = 0; i < n; i++) yield make(i);
}

const blocksOf = (router: Router, id: string) => router.stats().prefixIndex?.targets.find((t) => t.id === id)?.blocks;

// ---------------------------------------------------------------------------------------------

describe("options", () => {
  it("is a strategy with documented defaults", async () => {
    expect(STRATEGIES).toContain("longest-prefix");
    expect(DEFAULTS.longestPrefix).toEqual({
      maxInputLength: 65_536,
      blockSize: 256,
      capacityBlocks: 16_384,
      ttlMs: 0,
      loadFactor: 1.25,
      loadWindow: 4096,
      exclusive: false,
    });
    expect(Object.isFrozen(DEFAULTS.longestPrefix)).toBe(true);
    const router = await lp(ids(2));
    expect(router.strategy).toBe("longest-prefix");
    expect(router.stats().prefixIndex).toEqual({
      blocks: 0,
      capacityBlocks: 16_384,
      estimatedBytes: 0,
      targets: [
        { id: "t0", blocks: 0, queuedBlocks: 0 },
        { id: "t1", blocks: 0, queuedBlocks: 0 },
      ],
    });
  });

  it.each([
    [{ maxInputLength: 1000 }, RangeError, "Expected `longestPrefix.maxInputLength` to be an integer from 1024 to 1048576, got 1000"],
    [{ blockSize: 32 }, RangeError, "Expected `longestPrefix.blockSize` to be an integer from 64 to 16384, got 32"],
    [{ blockSize: 100.5 }, TypeError, "Expected `longestPrefix.blockSize` to be an integer from 64 to 16384, got 100.5"],
    [{ capacityBlocks: 0 }, RangeError, "Expected `longestPrefix.capacityBlocks` to be an integer from 1 to 16777216, got 0"],
    [{ ttlMs: -1 }, RangeError, "Expected `longestPrefix.ttlMs` to be a number from 0 to 2147483647, got -1"],
    [{ loadFactor: 0.9 }, RangeError, "Expected `longestPrefix.loadFactor` to be a number from 1 to 100, got 0.9"],
    [{ loadFactor: "2" }, TypeError, 'Expected `longestPrefix.loadFactor` to be a number from 1 to 100, got "2"'],
    [{ loadWindow: 0 }, RangeError, "Expected `longestPrefix.loadWindow` to be an integer from 1 to 1000000, got 0"],
    [{ exclusive: "yes" }, TypeError, 'Expected `longestPrefix.exclusive` to be a boolean, got "yes"'],
  ] as const)("rejects %j", async (options, type, message) => {
    const error = await lp(ids(2), options as LongestPrefixOptions).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(type);
    expect((error as Error).message).toBe(message);
  });

  it("rejects a non-object, even for another strategy", async () => {
    await expect(createRouter({ targets: ids(2), longestPrefix: 5 as never })).rejects.toThrow(
      "Expected `longestPrefix` to be an object, got 5",
    );
  });

  it("accepts loadFactor Infinity (no bounded load)", async () => {
    await expect(lp(ids(2), { loadFactor: Number.POSITIVE_INFINITY })).resolves.toBeDefined();
  });
});

describe("known answers (changing them is a breaking change)", () => {
  // Bytes mode over raw (non-JSON) bytes: the routing input is the bytes themselves.
  const raw = new TextEncoder().encode(`~${"x".repeat(999)}`);

  it("pins the routing key and pick of a fixed request", async () => {
    const router = await lp(ids(5), {}, { mode: "bytes" });
    // 1,000 bytes: 3 blocks of 256 and a partial one; nothing is held, so the key is the first
    // block's chain key and its end offset (256).
    const ranking = router.rank({ body: raw });
    expect(ranking.key).toBe(KEY);
    expect(ranking.targets.map((t) => t.id)).toEqual(ORDER);
    const tenant = router.rank({ body: raw, tenant: "acme" });
    expect(tenant.key).toBe(TENANT_KEY);
    expect(tenant.targets.map((t) => t.id)).toEqual(TENANT_ORDER);
  });

  it("follows the documented chain: k_-1 = fold(xxh64(header, seed)), k_i = xxh32(block_i, k_i-1 ⊕ t)", async () => {
    const api = await xxhash();
    // Blocks are 256 bytes in bytes mode, 256 UTF-16 code units (512 bytes, little-endian) in text mode.
    const keyOf = (mode: "t" | "b", tenant: string | undefined, model: string | undefined, seed: bigint, input: Uint8Array) => {
      const size = mode === "t" ? 512 : 256;
      const t = [...(tenant ?? "")].map((c) => c.charCodeAt(0));
      const m = model === undefined ? [0xff, 0xff, 0xff, 0xff] : [model.length, 0, 0, 0, ...[...model].map((c) => c.charCodeAt(0))];
      // 'L', version 1, mode, tenant length, tenant, model length u32 LE (+ model), block size u32 LE
      const header = Uint8Array.from([0x4c, 1, mode.charCodeAt(0), t.length, ...t, ...m, 0, 1, 0, 0]);
      const h = api.h64Raw(header, seed);
      const hi = Number(h >> 32n) >>> 0;
      let k = (hi ^ Number(h & 0xffff_ffffn)) >>> 0;
      // With a tenant, hi32(h) enters every block's seed (two tenants share a chain only if all of h agrees).
      const mix = tenant === undefined ? 0 : hi;
      // Keys (with their end offsets) of every block, the partial last one included.
      const keys: string[] = [];
      for (let at = 0; at < input.length; at += size) {
        const end = Math.min(at + size, input.length);
        k = api.h32Raw(input.subarray(at, end), (k ^ mix) >>> 0);
        keys.push(((BigInt(k) << 32n) | BigInt(end)).toString(16).padStart(16, "0"));
      }
      return keys;
    };
    const bytes = await lp(ids(5), { loadFactor: Number.POSITIVE_INFINITY }, { mode: "bytes" });
    expect(bytes.rank({ body: raw }).key).toBe(keyOf("b", undefined, undefined, 0n, raw)[0]);
    expect(bytes.rank({ body: raw, tenant: "acme", model: "m" }).key).toBe(keyOf("b", "acme", "m", 0n, raw)[0]);
    // Once the three full blocks are held somewhere, the key is the partial last block's.
    sendTo(bytes, "t0", raw);
    expect(bytes.rank({ body: raw }).key).toBe(keyOf("b", undefined, undefined, 0n, raw)[3]);
    // A longer request that shares the first two blocks diverges at the third.
    const longer = Uint8Array.from([...raw.subarray(0, 600), ...new TextEncoder().encode("y".repeat(600))]);
    expect(bytes.rank({ body: longer }).key).toBe(keyOf("b", undefined, undefined, 0n, longer)[2]);

    const body = { model: "m", messages: [{ role: "user", content: "x".repeat(1000) }] };
    const prompt = routingInput(body, { mode: "text", prefixLength: 65_536 });
    const text = new Uint8Array(prompt.length * 2);
    for (let i = 0; i < prompt.length; i++) {
      text[2 * i] = prompt.charCodeAt(i) & 0xff;
      text[2 * i + 1] = prompt.charCodeAt(i) >>> 8;
    }
    expect((await lp(ids(5))).rank({ body }).key).toBe(keyOf("t", undefined, "m", 0n, text)[0]);
    expect((await lp(ids(5), {}, { seed: 42 })).rank({ body, tenant: "acme" }).key).toBe(keyOf("t", "acme", "m", 42n, text)[0]);
  });
});

describe("longest match", () => {
  it("sends a request to the target holding the longest prefix of it", async () => {
    const router = await lp(ids(4), { loadFactor: Number.POSITIVE_INFINITY });
    const turn1 = { model: "m", messages: [{ role: "user", content: text("q1", 2000) }] };
    const turn2 = { ...turn1, messages: [...turn1.messages, { role: "assistant", content: text("a1", 2000) }, { role: "user", content: "more" }] };
    const turn3 = { ...turn2, messages: [...turn2.messages, { role: "assistant", content: text("a2", 2000) }, { role: "user", content: "again" }] };
    sendTo(router, "t1", turn1);
    sendTo(router, "t2", turn2);
    expect(first(router, turn1)).toBe("t1"); // t1 and t2 hold all of turn1: tie by rendezvous
    expect(first(router, turn3)).toBe("t2");
    const lease = router.route({ body: turn3 });
    expect([lease.target.id, lease.kind, lease.rank]).toEqual(["t2", "preferred", 0]);
    lease.release();
    // The next best match comes second: t1 holds turn1, the others nothing.
    expect(router.rank({ body: turn3 }).targets.slice(0, 2).map((t) => t.id)).toEqual(["t2", "t1"]);
  });

  it("records what it routes: a conversation stays on its target turn after turn", async () => {
    const router = await lp(ids(7));
    const messages: { role: string; content: string }[] = [];
    const seen = new Set<string>();
    for (let turn = 0; turn < 12; turn++) {
      messages.push({ role: "user", content: text(`u${turn}`, 700) });
      const lease = router.route({ body: { model: "m", messages: [...messages] } });
      seen.add(lease.target.id);
      lease.release();
      messages.push({ role: "assistant", content: text(`a${turn}`, 900) });
    }
    expect(seen.size).toBe(1);
  });

  it("reports the divergence key in decisions and leases, as rank() does", async () => {
    const keys: (string | undefined)[] = [];
    const router = await lp(ids(3), {}, { onDecision: (d) => keys.push(d.key) });
    const body = rag("d1");
    const expected = router.rank({ body }).key;
    const lease = router.route({ body });
    expect(lease.key).toBe(expected);
    expect(keys).toEqual([expected]);
    expect(lease.key).toMatch(/^[0-9a-f]{16}$/);
  });

  it("routes a body without prompt text by least outstanding", async () => {
    const router = await lp(ids(3));
    const lease = router.route({ body: { model: "m", messages: [] } });
    expect(lease.kind).toBe("least-outstanding");
    expect(lease.key).toBeUndefined();
    expect(router.rank({ body: { model: "m", messages: [] } }).key).toBeUndefined();
  });

  it("reads bytes mode: the canonical JSON body", async () => {
    const router = await lp(ids(4), { loadFactor: Number.POSITIVE_INFINITY }, { mode: "bytes" });
    const a = { inputs: text("doc", 4000), parameters: { max_new_tokens: 5 } };
    sendTo(router, "t3", a);
    expect(first(router, { ...a, parameters: { max_new_tokens: 9 } })).toBe("t3");
  });

  it("only picks targets serving the model", async () => {
    const router = await lp([{ id: "a", models: ["x"] }, { id: "b", models: ["y"] }, { id: "c" }]);
    for (let i = 0; i < 20; i++) {
      const lease = router.route({ body: { model: "y", messages: [{ role: "user", content: text(`q${i}`, 600) }] } });
      expect(["b", "c"]).toContain(lease.target.id);
      lease.release();
    }
  });
});

describe("placement of new prefixes", () => {
  it("is rendezvous hashing: two routers with different histories agree where a new prefix goes", async () => {
    const a = await lp(ids(6), { loadFactor: Number.POSITIVE_INFINITY });
    const b = await lp(ids(6), { loadFactor: Number.POSITIVE_INFINITY });
    // Both have seen the system prompt on every target, with different documents, in different order.
    for (let i = 0; i < 6; i++) sendTo(a, `t${i}`, rag(`a-doc${i}`));
    for (let i = 5; i >= 0; i--) sendTo(b, `t${i}`, rag(`b-doc${i}`));
    for (let i = 0; i < 50; i++) {
      const body = rag(`new${i}`);
      expect(a.rank({ body }).targets.map((t) => t.id)).toEqual(b.rank({ body }).targets.map((t) => t.id));
    }
  });

  /** Warms t0..t4 with the common system prompt, then routes 500 new documents; counts per target. */
  function newDocumentsBehindWarmPrompt(router: Awaited<ReturnType<typeof lp>>): Map<string, number> {
    for (let i = 0; i < 5; i++) sendTo(router, `t${i}`, rag(`warm${i}`));
    const counts = new Map<string, number>();
    for (let i = 0; i < 500; i++) {
      const lease = router.route({ body: rag(`doc${i}`) });
      counts.set(lease.target.id, (counts.get(lease.target.id) ?? 0) + 1);
      lease.release();
    }
    return counts;
  }

  it("spreads new documents behind a system prompt every target holds", async () => {
    const router = await lp(ids(5));
    const counts = newDocumentsBehindWarmPrompt(router);
    for (let i = 0; i < 5; i++) expect(counts.get(`t${i}`)).toBeGreaterThan(500 / 5 / 1.25);
  });

  it("spreads them without a load bound too (divergence rendezvous, not the common start)", async () => {
    const router = await lp(ids(5), { loadFactor: Number.POSITIVE_INFINITY });
    const counts = newDocumentsBehindWarmPrompt(router);
    for (let i = 0; i < 5; i++) expect(counts.get(`t${i}`)).toBeGreaterThan(500 / 5 / 2);
  });

  it("gives work to a target that lacks the common start while the holders share everything", async () => {
    // Six of seven targets hold the system prompt: within c = 1.25 they could take all the
    // traffic (1/6 < 1.25/7), leaving t6 idle. The underload rule sends new documents to t6.
    const router = await lp(ids(7));
    for (let i = 0; i < 6; i++) sendTo(router, `t${i}`, rag(`warm${i}`));
    const counts = stream(router, bodies(700, (i) => rag(`doc${i}`)), 14);
    expect(counts.get("t6")).toBeGreaterThan(700 / 7 / 1.25);
  });

  it("moves about 1/(n+1) of new prefixes, and only onto the added target", async () => {
    const before = await lp(ids(6));
    const after = await lp(ids(7));
    let moved = 0;
    for (let i = 0; i < 700; i++) {
      const body = { model: "m", messages: [{ role: "user", content: text(`p${i}`, 800) }] };
      const x = first(before, body);
      const y = first(after, body);
      if (x !== y) {
        moved++;
        expect(y).toBe("t6");
      }
    }
    expect(moved / 700).toBeGreaterThan(0.08);
    expect(moved / 700).toBeLessThan(0.2);
  });
});

describe("load guard", () => {
  it("spills a prefix whose holder is at the concurrency threshold, to the same second target", async () => {
    const router = await lp(ids(5), { loadFactor: Number.POSITIVE_INFINITY }, { concurrencyThreshold: 2 });
    const body = rag("hot");
    const order = router.rank({ body }).targets.map((t) => t.id);
    const leases: Lease[] = [];
    for (let i = 0; i < 2; i++) leases.push(router.route({ body: rag("hot", `q${i}`) }));
    expect(leases.map((l) => [l.target.id, l.kind])).toEqual([
      [order[0], "preferred"],
      [order[0], "preferred"],
    ]);
    const spilled = router.route({ body: rag("hot", "q2") });
    expect(spilled.kind).toBe("spillover");
    expect(spilled.target.id).not.toBe(order[0]);
    // The spill target is the anchor's choice: every question of this document spills there.
    const again = router.route({ body: rag("hot", "q3") });
    expect(again.target.id).toBe(spilled.target.id);
    // Once both hold the document, a fresh question goes to either (both match fully).
    for (const l of [...leases, spilled, again]) l.release();
    expect([order[0], spilled.target.id]).toContain(first(router, rag("hot", "q4")));
  });

  it("labels a pick that holds the longest match preferred, one with a shorter match spillover", async () => {
    const router = await lp(ids(3), { loadFactor: Number.POSITIVE_INFINITY }, { concurrencyThreshold: 1 });
    const holders = router.rank({ body: rag("doc") }).targets.slice(0, 2).map((t) => t.id);
    for (const id of holders) sendTo(router, id, rag("doc"));
    const firstChoice = router.rank({ body: rag("doc", "q0") }).targets[0]?.id;
    const first = router.route({ body: rag("doc", "q0") });
    expect([first.target.id, first.kind, first.rank]).toEqual([firstChoice, "preferred", 0]);
    // q1's first choice may be the busy holder or the other one; either way a holder, preferred.
    const second = router.route({ body: rag("doc", "q1") });
    expect(holders.filter((id) => id !== first.target.id)).toEqual([second.target.id]);
    expect(second.kind).toBe("preferred");
    const third = router.route({ body: rag("doc", "q2") });
    expect([third.kind, third.rank]).toEqual(["spillover", 2]);
    expect(holders).not.toContain(third.target.id);
  });

  it("falls back to the least loaded when every target is at the threshold", async () => {
    const router = await lp(ids(3), {}, { concurrencyThreshold: 1 });
    const leases = [0, 1, 2].map((i) => router.route({ body: rag(`d${i}`) }));
    expect(new Set(leases.map((l) => l.target.id)).size).toBe(3);
    const extra = router.route({ body: rag("d0", "again") });
    expect(extra.kind).toBe("fallback");
  });

  it("honours exclude (retries) and ejection", async () => {
    const clock = new FakeClock(1000);
    const router = await createRouter({
      targets: ids(3),
      strategy: "longest-prefix",
      clock,
      ejection: { consecutiveFailures: 1, baseEjectionMs: 10_000, maxEjectionMs: 10_000 },
    });
    const body = rag("x");
    const [best, second] = router.rank({ body }).targets.map((t) => t.id);
    const retry = router.route({ body }, { exclude: [best as string] });
    expect(retry.target.id).not.toBe(best);
    retry.release();
    const l = router.route({ body }, { exclude: ["t0", "t1", "t2"].filter((id) => id !== best) });
    l.release("connect-error");
    expect(router.route({ body: rag("x", "q") }).target.id).not.toBe(best);
    expect(second).toBeDefined();
  });

  it("keeps every target's share of one hot prefix within loadFactor × fair share", async () => {
    const n = 4;
    const router = await lp(ids(n), { loadWindow: 1_000_000 });
    const N = 2000;
    stream(router, bodies(N, (i) => rag("hot", `q${i}`)), 8);
    for (const t of router.stats().targets) expect(t.routed).toBeLessThanOrEqual(1.25 * (N / n) + 1);
  });

  it("keeps the holders of a replicated hot prefix within c, idle or not (fast-check's counterexample)", async () => {
    const weights = [3, 1, 3];
    const router = await lp(
      weights.map((weight, i) => ({ id: `t${i}`, weight })),
      { loadFactor: 1.1, loadWindow: 1_000_000, blockSize: 64 },
    );
    const docs = Array.from({ length: 72 }, (_, k) => (k === 12 ? 1 : k === 13 || k === 64 ? 2 : 0));
    stream(router, docs.map((d, k) => ({ model: "m", messages: [{ role: "user", content: `${text(`d${d}`, 300)} ${k}` }] })), 6);
    // Without the strict bound between two holders, t2 took 35 of 72 (bound 1.1 × 72 × 3/7 + 1 = 34.9).
    for (const [i, t] of router.stats().targets.entries()) {
      expect(t.routed).toBeLessThanOrEqual(1.1 * docs.length * ((weights[i] as number) / 7) + 1);
    }
  });

  it("bounds every busy target's picks for any sequence of prefixes and weights, in both modes (property)", async () => {
    // The documented rule: a target with requests in flight, at least its weighted share of the
    // fleet's, takes a request only while its picks are below c × the share it was due. A target
    // less busy than that keeps what it holds (at light load a conversation never moves), so the
    // whole run's share may pass c through such picks: the property checks each pick.
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.nat(5), { minLength: 50, maxLength: 300 }),
        fc.constantFrom(1.1, 1.25, 2),
        fc.array(fc.constantFrom(1, 2, 3), { minLength: 3, maxLength: 3 }),
        fc.boolean(),
        async (docs, c, weights, exclusive) => {
          const targets = weights.map((weight, i) => ({ id: `t${i}`, weight }));
          const total = weights.reduce((a, b) => a + b, 0);
          const violations: string[] = [];
          let router: Router | undefined;
          const onDecision = (d: { target: TargetSpec }) => {
            const stats = (router as Router).stats();
            const i = Number(d.target.id.slice(1));
            const share = (weights[i] as number) / total;
            const t = stats.targets[i] as { inflight: number; routed: number };
            const busy = t.inflight > 0 && t.inflight >= stats.totals.inflight * share;
            // Picks so far (k), each owing this target `share`; loadWindow 10^6: decay below 0.1 pick.
            const k = stats.totals.routed;
            if (busy && t.routed >= c * (k + 1) * share + 0.1) violations.push(`pick ${k}: ${d.target.id} had ${t.routed}`);
          };
          router = await lp(targets, { loadFactor: c, loadWindow: 1_000_000, blockSize: 64, exclusive }, { onDecision });
          stream(router, docs.map((d, k) => ({ model: "m", messages: [{ role: "user", content: `${text(`d${d}`, 300)} ${k}` }] })), 6);
          expect(violations).toEqual([]);
        },
      ),
      { numRuns: 40 },
    );
  });

  it("lets a target less busy than its share keep a prefix it alone holds, past c (fast-check's counterexample)", async () => {
    const weights = [2, 1, 1];
    const router = await lp(
      weights.map((weight, i) => ({ id: `t${i}`, weight })),
      { loadFactor: 1.1, loadWindow: 1_000_000, blockSize: 64 },
    );
    const docs = [...Array<number>(34).fill(0), 2, 0, 4, 0, 3, 0, 0, 0, 0, 0, 3, 2, 0, 0, 0, 0, 0, 0, 0, 2];
    stream(router, docs.map((d, k) => ({ model: "m", messages: [{ role: "user", content: `${text(`d${d}`, 300)} ${k}` }] })), 6);
    // Document 2 lives on t2 alone; its last request finds t2 at 15 picks (bound 1.1 × 54 / 4 = 14.85)
    // but with fewer requests in flight than its share, so it stays rather than be prefilled again.
    expect(router.stats().targets.map((t) => t.routed)).toEqual([24, 14, 16]);
  });
});

/** Routes `body` to `id` and keeps it in flight. */
const hold = (router: Router, id: string, body: object): Lease => {
  const lease = router.route({ body }, { exclude: router.targets().map((t) => t.id).filter((x) => x !== id) });
  expect(lease.target.id).toBe(id);
  return lease;
};
const queuedOf = (router: Router, id: string) => router.stats().prefixIndex?.targets.find((t) => t.id === id)?.queuedBlocks;
const big = (id: string) => ({ model: "m", messages: [{ role: "user", content: text(id, 60_000) }] });
const small = (id: string) => ({ model: "m", messages: [{ role: "user", content: text(id, 800) }] });

describe("several router processes (exclusive: false, the default)", () => {
  it("keeps a new prefix on its first rendezvous target until that has 4× the work the second would have", async () => {
    const router = await lp(ids(5), { loadFactor: Number.POSITIVE_INFINITY });
    const body = small("new"); // 800 characters: 4 blocks (3 full + the partial last one)
    const order = router.rank({ body }).targets.map((t) => t.id as string);
    // 15 blocks queued on the first: less than 4 × 4, the request stays.
    const queued = hold(router, order[0] as string, { model: "m", messages: [{ role: "user", content: text("queued", 14 * 256) }] });
    const stays = router.route({ body });
    expect([stays.target.id, stays.rank, stays.kind]).toEqual([order[0], 0, "preferred"]);
    stays.release();
    queued.release();
    // A 60,000-character cold prompt queued there (235 blocks): the second candidate takes it.
    const fresh = small("fresh");
    const next = router.rank({ body: fresh }).targets.map((t) => t.id as string);
    const held = hold(router, next[0] as string, big("long"));
    const moved = router.route({ body: fresh });
    expect([moved.target.id, moved.rank, moved.kind]).toEqual([next[1], 1, "spillover"]);
    held.release();
    moved.release();
  });

  it("moves a new prefix to its third rendezvous target when the first two both have long prefills queued", async () => {
    const router = await lp(ids(5), { loadFactor: Number.POSITIVE_INFINITY });
    const body = small("new");
    const order = router.rank({ body }).targets.map((t) => t.id as string);
    // 235 blocks queued on each of the first two: the second is not 4× lighter, the third is.
    const held = [hold(router, order[0] as string, big("long-a")), hold(router, order[1] as string, big("long-b"))];
    const lease = router.route({ body });
    expect([lease.target.id, lease.rank, lease.kind]).toEqual([order[2], 2, "spillover"]);
    lease.release();
    for (const h of held) h.release();
  });

  it("counts a request's work as queued only until its first byte: a long prompt that is decoding moves nothing", async () => {
    const router = await lp(ids(5), { loadFactor: Number.POSITIVE_INFINITY });
    const body = small("new");
    const order = router.rank({ body }).targets.map((t) => t.id as string);
    const held = hold(router, order[0] as string, big("long"));
    expect(queuedOf(router, order[0] as string)).toBe(235);
    // Its prefill is done (first token out), the request still streams: nothing queued any more.
    held.firstByte();
    expect(queuedOf(router, order[0] as string)).toBe(0);
    const stays = router.route({ body });
    expect([stays.target.id, stays.rank]).toEqual([order[0], 0]);
    stays.release();
    held.release();
    expect(queuedOf(router, order[0] as string)).toBe(0);
  });

  it("brings every target's queued work back to exactly 0 for any order of picks, first bytes, releases and failures (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.nat(6), fc.nat(40), fc.constantFrom("first-then-release", "release", "release-then-first", "twice", "fail", "first-then-fail")), { maxLength: 40 }),
        fc.array(fc.nat(), { maxLength: 80 }),
        fc.boolean(),
        async (requests, order, exclusive) => {
          const router = await lp(ids(4), { exclusive, blockSize: 64 });
          // Each request's own calls (route, then first byte and release in its order); the
          // requests' calls interleaved by `order`, so picks see other requests' work come and go.
          const queues = requests.map(([doc, len, how]) => {
            let lease: Lease | undefined;
            const route = () => {
              lease = router.route({ body: { model: "m", messages: [{ role: "user", content: text(`d${doc}`, 64 * (len + 1)) }] } });
            };
            const first = () => lease?.firstByte();
            const release = () => lease?.release();
            const fail = () => lease?.release("server-error");
            const rest =
              how === "first-then-release" ? [first, release]
              : how === "release-then-first" ? [release, first]
              : how === "twice" ? [first, first, release, release]
              : how === "fail" ? [fail, first]
              : how === "first-then-fail" ? [first, fail]
              : [release];
            return [route, ...rest];
          });
          const live = queues.map((_, k) => k);
          for (let i = 0; live.length > 0; i++) {
            const pick = (order[i % Math.max(order.length, 1)] ?? 0) % live.length;
            const q = queues[live[pick] as number] as (() => void)[];
            (q.shift() as () => void)();
            if (q.length === 0) live.splice(pick, 1);
            for (const t of router.stats().prefixIndex?.targets ?? []) expect(t.queuedBlocks).toBeGreaterThanOrEqual(0);
          }
          for (const t of router.stats().prefixIndex?.targets ?? []) expect(t.queuedBlocks).toBe(0);
          expect(router.stats().totals.inflight).toBe(0);
        },
      ),
      { numRuns: 60 },
    );
  });

  it("routers with different work in flight place new documents alike, exclusive or not", async () => {
    const place = async (exclusive: boolean) => {
      // Without the bounded load (which, by design, may deviate differently in each process).
      const a = await lp(ids(6), { exclusive, loadFactor: Number.POSITIVE_INFINITY });
      const b = await lp(ids(6), { exclusive, loadFactor: Number.POSITIVE_INFINITY });
      // Both have seen the system prompt everywhere; a has three short prompts in flight on three
      // targets: less than 2× a new document's work, so neither rule moves a document for them.
      for (const r of [a, b]) for (let i = 0; i < 6; i++) sendTo(r, `t${i}`, rag(`warm${i}`));
      const held = ["t0", "t2", "t4"].map((id) => hold(a, id, small(`busy-${id}`)));
      let differ = 0;
      for (let i = 0; i < 60; i++) {
        const body = rag(`new${i}`);
        const [x, y] = [a.route({ body }), b.route({ body })];
        if (x.target.id !== y.target.id) differ++;
        x.release();
        y.release();
      }
      for (const h of held) h.release();
      return differ;
    };
    expect(await place(false)).toBe(0);
    expect(await place(true)).toBe(0);
  });

  it("places any new document alike whatever short requests another router has in flight (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.nat(5), { maxLength: 60 }),
        fc.array(fc.string({ minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 20 }),
        async (busy, docs) => {
          const idle = await lp(ids(6), { loadFactor: Number.POSITIVE_INFINITY });
          const loaded = await lp(ids(6), { loadFactor: Number.POSITIVE_INFINITY });
          // Up to 60 one-block requests in flight: never 4× a 6,000-character document's work.
          const held = busy.map((t, k) => hold(loaded, `t${t}`, { model: "m", messages: [{ role: "user", content: `q${k}` }] }));
          for (const doc of docs) {
            const body = { model: "m", messages: [{ role: "user", content: text(`doc:${doc}`, 6000) }] };
            const [a, b] = [idle.route({ body }), loaded.route({ body })];
            expect(b.target.id).toBe(a.target.id);
            a.release();
            b.release();
          }
          for (const h of held) h.release();
          expect(loaded.stats().totals.inflight).toBe(0);
        },
      ),
      { numRuns: 40 },
    );
  });

  it("moves a new prefix to its second rendezvous target when the first is full, and every router picks that same one", async () => {
    const routers = await Promise.all([0, 1, 2].map(() => lp(ids(5), {}, { concurrencyThreshold: 1 })));
    const body = small("new");
    const order = (routers[0] as Router).rank({ body }).targets.map((t) => t.id as string);
    const picks = routers.map((r, k) => {
      // Each router has a different target full; router 0 the first choice.
      const full = hold(r, k === 0 ? (order[0] as string) : (order[k + 1] as string), small(`busy${k}`));
      const lease = r.route({ body });
      full.release();
      lease.release();
      return lease.target.id;
    });
    expect(picks).toEqual([order[1], order[0], order[0]]);
  });
});

describe("exclusive: true — the same candidates, moved on from at a 2× gap in queued prefill", () => {
  it("moves a new prefix to its second candidate once the first has 2× the work the second would have", async () => {
    const body = small("new"); // 4 blocks
    const at = async (exclusive: boolean, queuedBlocks: number) => {
      const router = await lp(ids(5), { loadFactor: Number.POSITIVE_INFINITY, exclusive });
      const order = router.rank({ body }).targets.map((t) => t.id as string);
      const queued = hold(router, order[0] as string, { model: "m", messages: [{ role: "user", content: text("queued", queuedBlocks * 256) }] });
      const lease = router.route({ body });
      const rank = order.indexOf(lease.target.id);
      lease.release();
      queued.release();
      return rank;
    };
    // 9 blocks queued on the first (a 9-block prompt: 8 full and the partial one): ≥ 2 × 4, < 4 × 4.
    expect(await at(true, 8)).toBe(1);
    expect(await at(false, 8)).toBe(0);
    // 6 blocks: below 2 × 4, both stay.
    expect(await at(true, 5)).toBe(0);
  });

  it("weighs queued prefill, not requests in flight: requests that are decoding do not keep a new prefix away", async () => {
    const router = await lp(ids(5), { loadFactor: Number.POSITIVE_INFINITY, exclusive: true });
    const body = small("new");
    const order = router.rank({ body }).targets.map((t) => t.id as string);
    const held = [hold(router, order[0] as string, big("long"))];
    // order[1] has three requests in flight, all past their first byte; order[2] one still queued.
    for (const q of ["a", "b", "c"]) {
      const lease = hold(router, order[1] as string, small(`${order[1]}${q}`));
      lease.firstByte();
      held.push(lease);
    }
    held.push(hold(router, order[2] as string, small("queued")));
    const lease = router.route({ body });
    expect([lease.target.id, lease.rank]).toEqual([order[1], 1]);
  });

  it("keeps a request of which more than half is held on its holder", async () => {
    const router = await lp(ids(5), { loadFactor: Number.POSITIVE_INFINITY, exclusive: true });
    const holder = first(router, rag("doc")) as string;
    sendTo(router, holder, rag("doc"));
    hold(router, holder, big("long"));
    const lease = router.route({ body: rag("doc", "another question") });
    expect([lease.target.id, lease.kind]).toEqual([holder, "preferred"]);
  });

  it("falls back to the target with the least work: a queue longer than the request outweighs its cached part", async () => {
    const router = await lp(ids(3), { exclusive: true }, { concurrencyThreshold: 1 });
    const holder = first(router, rag("doc")) as string;
    sendTo(router, holder, rag("doc"));
    hold(router, holder, big("long"));
    for (const id of ["t0", "t1", "t2"].filter((x) => x !== holder)) hold(router, id, small(`busy-${id}`));
    const lease = router.route({ body: rag("doc", "q") });
    expect(lease.kind).toBe("fallback");
    expect(lease.target.id).not.toBe(holder);
  });
});

describe("queued prefill from a shared load view", () => {
  /**
   * A view whose figures the test sets: every target full of other routers' requests (so each pick
   * is the fallback, by queued prefill), with per-target queued work (blocks, as the redis view
   * carries it) and queued uncached tokens (as the engine view carries it; NaN: not exported).
   */
  function view(work: Record<string, number>, tokens: Record<string, number>): LoadView & { added: [string, number][] } {
    const added: [string, number][] = [];
    return {
      source: "test",
      version: 1,
      added,
      shared: () => true,
      others: () => 100,
      othersWork: (id) => work[id] ?? 0,
      othersWorkTokens: (id) => tokens[id] ?? Number.NaN,
      addWorkTokens: (id, delta) => added.push([id, delta]),
      setTargets() {},
      acquire() {},
      release() {},
      stats: () => ({ source: "test", healthy: true, lastRefreshAtMs: null, errors: 0, refreshes: 1, lastError: null, others: {} }),
      async close() {},
    };
  }
  const body = rag("queued document");

  it("takes the target with the fewest queued uncached tokens; the token figure counts instead of the work figure where both exist", async () => {
    const order = (await lp(ids(4))).rank({ body }).targets.map((t) => t.id);
    const [a, b, c, d] = order as [string, string, string, string];
    // By work alone, a (the ranking's first) has the least queued; by tokens, c.
    const work = { [a]: 0, [b]: 50, [c]: 50, [d]: 50 };
    const tokens = { [a]: 40_000, [b]: 20_000, [c]: 1_000, [d]: 30_000 };
    const r = await lp(ids(4), {}, { loadView: view(work, tokens) });
    expect(r.route({ body })).toMatchObject({ kind: "fallback", target: { id: c } });
    // Where c exports no token figure its work figure counts: 50 blocks (3,200 tokens), still the least.
    const r2 = await lp(ids(4), {}, { loadView: view(work, { [a]: 40_000, [b]: 20_000, [d]: 30_000 }) });
    expect(r2.route({ body })).toMatchObject({ kind: "fallback", target: { id: c } });
    // Without any token figure, the work figures decide: a.
    const r3 = await lp(ids(4), {}, { loadView: view(work, {}) });
    expect(r3.route({ body })).toMatchObject({ kind: "fallback", target: { id: a } });
  });

  it("a pick tells the view its uncached prompt tokens, and takes them back at the first byte", async () => {
    const v = view({}, {});
    const r = await lp(ids(4), {}, { loadView: v });
    const lease = r.route({ body });
    const queued = r.stats().prefixIndex!.targets.find((t) => t.id === lease.target.id)!.queuedBlocks;
    expect(queued).toBeGreaterThan(30);
    expect(v.added).toHaveLength(1);
    const [id, tokens] = v.added[0]!;
    expect(id).toBe(lease.target.id);
    // Its uncached blocks in tokens: blocks × blockSize characters / 4 characters per token.
    expect(tokens).toBe((queued * DEFAULTS.longestPrefix.blockSize) / 4);
    lease.firstByte?.();
    lease.release();
    expect(v.added).toEqual([[id, tokens], [id, -tokens]]);
  });
});

describe("index", () => {
  it("is bounded by capacityBlocks per target and forgets the least recently sent prefix", async () => {
    const router = await lp(ids(2), { capacityBlocks: 40, loadFactor: Number.POSITIVE_INFINITY });
    const docs = Array.from({ length: 6 }, (_, i) => ({ model: "m", messages: [{ role: "user", content: text(`doc${i}`, 2560) }] }));
    for (const d of docs) sendTo(router, "t0", d); // 10 blocks each: the first two no longer fit
    expect(blocksOf(router, "t0")).toBe(40);
    const stats = router.stats().prefixIndex;
    expect(stats?.blocks).toBe(40);
    expect(stats?.estimatedBytes).toBeGreaterThan(0);
    const fresh = await lp(ids(2));
    expect(first(router, docs[5] as object)).toBe("t0");
    expect(first(router, docs[0] as object)).toBe(first(fresh, docs[0] as object));
  });

  it("forgets the blocks a request taught it when the request fails before its first byte", async () => {
    const router = await lp(ids(4), { loadFactor: Number.POSITIVE_INFINITY });
    const others = ["t0", "t1", "t3"];
    sendTo(router, "t2", rag("d0"));
    const held = blocksOf(router, "t2") as number; // the system prompt and d0
    const fresh = await lp(ids(4));
    for (const outcome of ["connect-error", "client-error", "server-error"] as const) {
      const lease = router.route({ body: rag("d1") }, { exclude: others });
      expect(blocksOf(router, "t2")).toBeGreaterThan(held);
      lease.release(outcome);
      // d1's blocks are gone; the system prompt and d0, held before, stay.
      expect(blocksOf(router, "t2")).toBe(held);
      expect(router.rank({ body: rag("d0") }).targets[0]?.id).toBe("t2");
    }
    // d1 is new again, placed like on a router that never saw it.
    const alone = { model: "m", messages: [{ role: "user", content: text("d1", 6000) }] };
    const failed = router.route({ body: alone }, { exclude: others });
    failed.release("server-error");
    expect(first(router, alone)).toBe(first(fresh, alone));
    // An answer began (a stream that broke later), or the client gave up: the prompt may be cached.
    for (const end of [(l: Lease) => (l.firstByte(), l.release("server-error")), (l: Lease) => l.release("cancelled")]) {
      const before = blocksOf(router, "t2") as number;
      end(router.route({ body: rag(`kept-${before}`) }, { exclude: others }));
      expect(blocksOf(router, "t2")).toBeGreaterThan(before);
    }
    expect(router.stats().prefixIndex?.targets.every((t) => t.queuedBlocks === 0)).toBe(true);
  });

  it("keeps the head of a prefix longest: a partly evicted prefix still matches its start", async () => {
    const router = await lp(ids(3), { capacityBlocks: 12, loadFactor: Number.POSITIVE_INFINITY });
    const long = { model: "m", messages: [{ role: "user", content: text("long", 256 * 10) }] };
    sendTo(router, "t2", long);
    sendTo(router, "t2", { model: "m", messages: [{ role: "user", content: text("other", 256 * 4) }] });
    // 14 blocks recorded into 12 slots: the two evicted are the long prefix's last two.
    expect(blocksOf(router, "t2")).toBe(12);
    const extended = { model: "m", messages: [{ role: "user", content: `${text("long", 256 * 10)} and more text` }] };
    expect(first(router, extended)).toBe("t2");
  });

  it("expires entries after ttlMs on the router's clock", async () => {
    const clock = new FakeClock(1000);
    const router = await lp(ids(4), { ttlMs: 60_000, loadFactor: Number.POSITIVE_INFINITY }, { clock });
    const fresh = await lp(ids(4));
    const body = rag("doc");
    const home = first(fresh, body);
    const other = ids(4).map((t) => t.id).find((id) => id !== home) as string;
    sendTo(router, other, body);
    clock.t += 59_000;
    expect(first(router, rag("doc", "later"))).toBe(other);
    sendTo(router, other, rag("doc", "refresh")); // refreshed at +59 s
    clock.t += 59_000;
    expect(first(router, rag("doc", "later"))).toBe(other);
    clock.t += 2_000;
    expect(first(router, rag("doc", "later"))).toBe(home);
    expect(router.rank({ body: rag("doc", "later") }).key).toBe(fresh.rank({ body: rag("doc", "later") }).key);
  });

  it("isolates tenants: one tenant's history never attracts another's identical request", async () => {
    const router = await lp(ids(5), { loadFactor: Number.POSITIVE_INFINITY });
    const fresh = await lp(ids(5));
    const body = rag("shared");
    const homeB = first(fresh, body, "tenant-b");
    const other = ids(5).map((t) => t.id).find((id) => id !== homeB && id !== first(fresh, body, "tenant-a")) as string;
    sendTo(router, other, body, "tenant-a");
    expect(first(router, body, "tenant-a")).toBe(other);
    expect(first(router, body, "tenant-b")).toBe(homeB);
    expect(first(router, body)).toBe(first(fresh, body));
    expect(router.rank({ body, tenant: "tenant-a" }).key).not.toBe(router.rank({ body, tenant: "tenant-b" }).key);
  });

  it("drops a removed target's index; a target added back starts cold", async () => {
    const router = await lp(ids(3), { loadFactor: Number.POSITIVE_INFINITY });
    const body = rag("doc");
    sendTo(router, "t1", body);
    expect(blocksOf(router, "t1")).toBeGreaterThan(0);
    router.setTargets([{ id: "t0" }, { id: "t2" }]);
    expect(router.stats().prefixIndex?.targets.map((t) => t.id)).toEqual(["t0", "t2"]);
    router.setTargets(ids(3));
    expect(blocksOf(router, "t1")).toBe(0);
  });

  it("caps the routing input at maxInputLength", async () => {
    const router = await lp(ids(3), { maxInputLength: 1024, loadFactor: Number.POSITIVE_INFINITY });
    const a = { model: "m", messages: [{ role: "user", content: text("same", 5000) }] };
    const b = { model: "m", messages: [{ role: "user", content: `${text("same", 1100)}${text("different", 3000)}` }] };
    sendTo(router, "t0", a);
    expect(blocksOf(router, "t0")).toBe(4);
    expect(router.rank({ body: a }).key).toBe(router.rank({ body: b }).key);
  });
});

describe("determinism", () => {
  it("two routers fed the same sequence make the same picks (property)", async () => {
    const op = fc.oneof(
      { weight: 6, arbitrary: fc.record({ op: fc.constant("route" as const), doc: fc.nat(8), q: fc.nat(3), tenant: fc.constantFrom(undefined, "t-a") }) },
      { weight: 3, arbitrary: fc.record({ op: fc.constant("release" as const), which: fc.nat() }) },
      { weight: 1, arbitrary: fc.record({ op: fc.constant("tick" as const), ms: fc.nat(40_000) }) },
      { weight: 1, arbitrary: fc.record({ op: fc.constant("setTargets" as const), n: fc.integer({ min: 2, max: 6 }) }) },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 80 }), fc.constantFrom(0, 30_000), async (ops, ttlMs) => {
        const make = async () => {
          const clock = new FakeClock(1000);
          const router = await lp(ids(4), { ttlMs, capacityBlocks: 64, loadWindow: 16 }, { clock, concurrencyThreshold: 3 });
          return { router, clock, leases: [] as Lease[], picks: [] as string[] };
        };
        const runs = [await make(), await make()];
        for (const r of runs) {
          for (const o of ops) {
            if (o.op === "route") {
              const body = { model: "m", messages: [{ role: "user", content: `${text(`d${o.doc}`, 900)} q${o.q}` }] };
              const lease = r.router.route({ body, ...(o.tenant === undefined ? {} : { tenant: o.tenant }) });
              r.leases.push(lease);
              r.picks.push(`${lease.target.id}:${lease.kind}:${lease.rank}:${String(lease.key)}`);
            } else if (o.op === "release") {
              if (r.leases.length > 0) r.leases.splice(o.which % r.leases.length, 1)[0]?.release();
            } else if (o.op === "tick") {
              r.clock.t += o.ms;
            } else {
              r.router.setTargets(ids(o.n));
            }
          }
        }
        expect(runs[0]?.picks).toEqual(runs[1]?.picks);
        expect(runs[0]?.router.stats().prefixIndex).toEqual(runs[1]?.router.stats().prefixIndex);
      }),
      { numRuns: 60 },
    );
  });
});

describe("UTF-16LE routing input", () => {
  it("the portable writer matches Node's Buffer on any string", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 300 }), (s) => {
        const out = new Uint8Array(s.length * 2 + 1);
        writeUtf16le(s, s.length, out, 1);
        expect(Buffer.from(out.subarray(1)).equals(Buffer.from(s, "utf16le"))).toBe(true);
      }),
    );
  });

  it("routes text with non-ASCII and astral characters by its code units", async () => {
    const router = await lp(ids(4), { loadFactor: Number.POSITIVE_INFINITY });
    const doc = `préférence über 数据 😀 ${text("unicode", 3000)}`;
    const a = { model: "m", messages: [{ role: "user", content: `${doc} first` }] };
    const b = { model: "m", messages: [{ role: "user", content: `${doc} second` }] };
    sendTo(router, "t2", a);
    expect(first(router, b)).toBe("t2");
  });
});
