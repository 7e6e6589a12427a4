import fc from "fast-check";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRouter, DEFAULTS, type Lease, type Router } from "prefix-router";

type LeaseOutcome = NonNullable<Parameters<Lease["release"]>[0]>;
import { type OpenAITarget, getRouter, routeOpenAI } from "prefix-router/openai";
import { DEFAULT_MODEL, type LiveFleet, startFleet } from "prefix-router/fleet";
import { FakeClock } from "../support.js";

const targets = [{ id: "a" }, { id: "b" }, { id: "c" }, { id: "d" }];
/** A prompt of `chars` characters starting with `key`'s 4,096-character prefix (the routing key). */
const body = (key: string, chars: number, tail = "") => ({
  messages: [{ role: "user", content: `${key}:`.padEnd(4096, "k") + `${tail}|`.padEnd(Math.max(0, chars - 4096), "t") }],
});
const tokensRouter = (clock: FakeClock, extra: object = {}) =>
  createRouter({ targets, clock, prefixAware: { saturation: "tokens", ...extra } });
const prefill = (router: Router) => Object.fromEntries(router.stats().prefill!.targets.map((t) => [t.id, t]));

/**
 * Calibrates `router` as an engine with 50 ms of overhead and 10 tokens per ms of prefill would:
 * one request at a time, cold prompts of 1,000 to 12,000 tokens (4 characters each).
 */
function calibrate(router: Router, clock: FakeClock): void {
  for (let i = 0; i < 12; i++) {
    const tokens = 1000 * (i + 1);
    const lease = router.route({ body: body(`calibration ${i}`, 4 * tokens) });
    clock.t += 50 + tokens / 10;
    lease.firstByte();
    lease.release("success", { promptTokens: tokens, cachedTokens: 0 });
  }
}

describe("prefixAware options", () => {
  it("defaults to the request count, with a 250 ms TTFT penalty for tokens", () => {
    expect(DEFAULTS.prefixAware).toEqual({ saturation: "requests", ttftPenaltyMs: 250, spreadRunningKeys: "auto" });
  });

  it.each([
    [null, TypeError, "Expected `prefixAware` to be an object, got null"],
    [{ saturation: "bytes" }, RangeError, "prefixAware.saturation"],
    [{ ttftPenaltyMs: 0 }, RangeError, "Expected `prefixAware.ttftPenaltyMs` to be a number from 1 to 60000, got 0"],
    [{ ttftPenaltyMs: Number.NaN }, TypeError, "prefixAware.ttftPenaltyMs"],
    [{ ttftPenaltyMs: "250" }, TypeError, "prefixAware.ttftPenaltyMs"],
  ])("refuses %j", async (prefixAware, type, message) => {
    await expect(createRouter({ targets, prefixAware: prefixAware as never })).rejects.toThrow(type);
    await expect(createRouter({ targets, prefixAware: prefixAware as never })).rejects.toThrow(message);
  });

  it("says when it is set for another strategy", async () => {
    const warned: string[] = [];
    const none = () => {};
    await createRouter({ targets, strategy: "longest-prefix", prefixAware: { saturation: "tokens" }, logger: { debug: none, info: none, error: none, warn: (m: string) => warned.push(m) } });
    expect(warned.join("\n")).toContain("`prefixAware` is set but the strategy is \"longest-prefix\"");
  });
});

describe("saturation in tokens", () => {
  it("has no bound before responses report, then τ = calibrated throughput × ttftPenaltyMs", async () => {
    const clock = new FakeClock();
    const router = await tokensRouter(clock);
    expect(prefill(router)["a"]).toEqual({ id: "a", uncachedTokensInFlight: 0, prefillTokensPerSecond: null, boundTokens: null });
    calibrate(router, clock);
    for (const t of router.stats().prefill!.targets) {
      // 10 tokens per ms: 10,000 per second; × 250 ms = 2,500 tokens.
      expect(t.prefillTokensPerSecond).toBeCloseTo(10_000, 6);
      expect(t.boundTokens).toBeCloseTo(2500, 6);
    }
    expect(router.stats().prefill!.unitsPerToken).toBeCloseTo(4, 2);
  });

  it("scales τ with ttftPenaltyMs", async () => {
    const clock = new FakeClock();
    const router = await tokensRouter(clock, { ttftPenaltyMs: 100 });
    calibrate(router, clock);
    expect(prefill(router)["a"]!.boundTokens).toBeCloseTo(1000, 6);
  });

  it("keeps a key on its replica up to τ, then spills along the key's ranking, and comes back when the prefill ends", async () => {
    const clock = new FakeClock();
    // τ = 10 tokens per ms × 400 ms = 4,000 tokens.
    const router = await tokensRouter(clock, { ttftPenaltyMs: 400 });
    calibrate(router, clock);
    const order = router.rank({ body: body("doc", 12_000) }).targets.map((t) => t.id);
    // About 3,000 tokens cold on its first choice: nothing else is in flight there, so it is taken.
    const first = router.route({ body: body("doc", 12_000, "q1") });
    expect([first.target.id, first.kind, first.rank]).toEqual([order[0], "preferred", 0]);
    // Same key: 1,024 tokens predicted cached there, about 1,980 to compute; 3,000 + 1,980 > 4,000.
    const second = router.route({ body: body("doc", 12_000, "q2") });
    expect([second.target.id, second.kind, second.rank]).toEqual([order[1], "spillover", 1]);
    const third = router.route({ body: body("doc", 12_000, "q3") });
    expect([third.target.id, third.kind, third.rank]).toEqual([order[2], "spillover", 2]);
    // A short question whose prefix is cached fits beside the prefill: about 1,100 − 1,024 tokens.
    const short = router.route({ body: body("doc", 4400, "q4") });
    expect([short.target.id, short.kind]).toEqual([order[0], "preferred"]);
    const inflight = prefill(router)[order[0]!]!.uncachedTokensInFlight;
    expect(inflight).toBeGreaterThan(3000 + 76);
    expect(inflight).toBeLessThan(3000 + 100);
    first.firstByte();
    short.firstByte();
    const again = router.route({ body: body("doc", 12_000, "q5") });
    expect([again.target.id, again.kind]).toEqual([order[0], "preferred"]);
    for (const l of [first, second, third, short, again]) l.release("cancelled");
    expect(router.stats().prefill!.targets.map((t) => t.uncachedTokensInFlight)).toEqual([0, 0, 0, 0]);
  });

  it("learns a key's cached tokens from what the server reports", async () => {
    const clock = new FakeClock();
    const router = await tokensRouter(clock);
    calibrate(router, clock);
    const home = router.route({ body: body("doc", 12_000, "q1") });
    clock.t += 350;
    home.firstByte();
    home.release("success", { promptTokens: 3000, cachedTokens: 0 });
    // The whole 2,976-token document came back cached: a new question costs a few tokens.
    const warm = router.route({ body: body("doc", 12_000, "q2") });
    clock.t += 55;
    warm.firstByte();
    warm.release("success", { promptTokens: 3000, cachedTokens: 2976 });
    const hold = router.route({ body: body("doc", 12_000, "q3") });
    expect(hold.target.id).toBe(home.target.id);
    expect(prefill(router)[hold.target.id]!.uncachedTokensInFlight).toBeGreaterThan(0);
    expect(prefill(router)[hold.target.id]!.uncachedTokensInFlight).toBeLessThan(40);
    hold.release("success");
  });

  it("with the default (requests), a prefill in flight moves nothing", async () => {
    const router = await createRouter({ targets });
    const leases = [1, 2, 3].map((i) => router.route({ body: body("doc", 12_000, `q${i}`) }));
    expect(leases.map((l) => l.kind)).toEqual(["preferred", "preferred", "preferred"]);
    expect(router.stats().prefill).toBeUndefined();
  });

  it("never drifts: after any mix of first bytes, outcomes, usage and retries, nothing is in flight", async () => {
    const outcomes: LeaseOutcome[] = ["success", "cancelled", "client-error", "server-error", "connect-error"];
    const step = fc.record({
      key: fc.integer({ min: 0, max: 5 }),
      chars: fc.integer({ min: 4096, max: 40_000 }),
      firstByte: fc.boolean(),
      retry: fc.boolean(),
      outcome: fc.constantFrom(...outcomes),
      usage: fc.option(fc.integer({ min: 1, max: 10_000 }).chain((promptTokens) => fc.record({ promptTokens: fc.constant(promptTokens), cachedTokens: fc.integer({ min: 0, max: promptTokens }) }))),
      ttft: fc.integer({ min: 0, max: 2000 }),
      closeOrder: fc.integer({ min: 0, max: 1000 }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 60 }), async (steps) => {
        const clock = new FakeClock();
        const router = await tokensRouter(clock);
        calibrate(router, clock);
        const open: { close: () => void; order: number }[] = [];
        for (const [n, s] of steps.entries()) {
          const prepared = router.prepare({ body: body(`k${s.key}`, s.chars, String(n)) });
          let lease = router.route(prepared);
          if (s.retry) {
            lease.release("connect-error");
            lease = router.route(prepared, { exclude: [lease.target.id], attempt: 2 });
          }
          const l = lease;
          open.push({
            order: s.closeOrder,
            close: () => {
              clock.t += s.ttft;
              if (s.firstByte) l.firstByte();
              l.release(s.outcome, s.usage ?? undefined);
              l.release("success", { promptTokens: 1, cachedTokens: 0 });
            },
          });
          // Some close while others are still open, in an order of their own.
          if (n % 3 === 2) open.sort((a, b) => a.order - b.order).shift()!.close();
        }
        for (const o of open.sort((a, b) => a.order - b.order)) o.close();
        expect(router.stats().prefill!.targets.map((t) => t.uncachedTokensInFlight)).toEqual([0, 0, 0, 0]);
        expect(router.stats().totals.inflight).toBe(0);
      }),
      { numRuns: 60 },
    );
  });
});

describe("saturation in tokens — against the emulated fleet", () => {
  let fleet: LiveFleet;
  beforeAll(async () => {
    fleet = await startFleet({ instances: 3, timeScale: 0.002, defaultMaxTokens: 8, seed: 5 });
  });
  afterAll(async () => {
    await fleet?.stop();
  });

  it("after a storm of errors, reset streams, in-band stream errors and client aborts, no token is left in flight", async () => {
    for (const i of fleet.instances) await i.setFaults({ errorRate: 0.25, resetStreamRate: 0.25, streamErrorRate: 0.25 });
    const fleetTargets: OpenAITarget[] = fleet.instances.map((i) => ({ id: i.id, baseURL: `${i.url}/v1` }));
    const client = await routeOpenAI(new OpenAI({ apiKey: "x", baseURL: "http://fleet.invalid/v1", maxRetries: 0 }), {
      targets: fleetTargets,
      prefixAware: { saturation: "tokens" },
      ejection: false,
    });
    const doc = (n: number) => `document ${n % 4} `.repeat(600);
    const one = async (n: number): Promise<void> => {
      const abort = new AbortController();
      const messages = [{ role: "user" as const, content: `${doc(n)} question ${n}` }];
      if (n % 2 === 0) {
        await client.chat.completions.create({ model: DEFAULT_MODEL, messages, max_tokens: 8 }, { signal: abort.signal });
        return;
      }
      const stream = await client.chat.completions.create({ model: DEFAULT_MODEL, messages, max_tokens: 8, stream: true }, { signal: abort.signal });
      let chunks = 0;
      for await (const _ of stream) if (++chunks === 2 && n % 3 === 0) abort.abort();
    };
    const settled = await Promise.allSettled(Array.from({ length: 60 }, (_, n) => one(n)));
    expect(settled.some((s) => s.status === "rejected")).toBe(true);
    expect(settled.some((s) => s.status === "fulfilled")).toBe(true);
    const stats = getRouter(client)!.stats();
    expect(stats.totals.inflight).toBe(0);
    expect(stats.prefill!.targets.map((t) => t.uncachedTokensInFlight)).toEqual([0, 0, 0]);
  });
});
