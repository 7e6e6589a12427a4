/**
 * Usage figures a broken or hostile upstream reports: with `saturation: "tokens"`, one answer
 * claiming 2^53−1 prompt tokens (or cached tokens) must move the learned characters per token and
 * the throughput fits by one plausible sample at most, and its effect must fade with the samples
 * that follow.
 */
import { describe, expect, it } from "vitest";
import { type Router, createRouter } from "prefix-router";
import { FakeClock } from "../support.js";

const targets = [{ id: "a" }, { id: "b" }, { id: "c" }, { id: "d" }];
const body = (key: string, chars: number) => ({ messages: [{ role: "user", content: `${key}:`.padEnd(chars, "k") }] });
const figures = (router: Router) => router.stats().prefill!;

/** Answers as an engine with 50 ms of overhead, 10 tokens per ms and 4 characters per token would. */
function serve(router: Router, clock: FakeClock, n: number, usage?: { promptTokens: number; cachedTokens: number }): void {
  for (let i = 0; i < n; i++) {
    const tokens = 1000 * ((i % 12) + 1);
    const lease = router.route({ body: body(`calibration ${i}`, 4 * tokens) });
    clock.t += 50 + tokens / 10;
    lease.firstByte();
    lease.release("success", usage ?? { promptTokens: tokens, cachedTokens: 0 });
  }
}

const HUGE = Number.MAX_SAFE_INTEGER;

describe("one hostile usage figure", () => {
  it.each([
    ["prompt tokens", { promptTokens: HUGE, cachedTokens: 0 }],
    ["prompt and cached tokens", { promptTokens: HUGE, cachedTokens: HUGE }],
    ["a tiny prompt", { promptTokens: 1, cachedTokens: 0 }],
  ])("of %s moves characters per token and τ by little, and not for long", async (_name, usage) => {
    const clock = new FakeClock();
    const router = await createRouter({ targets, clock, prefixAware: { saturation: "tokens" } });
    serve(router, clock, 48);
    const before = figures(router);
    expect(before.unitsPerToken).toBeCloseTo(4, 2);
    serve(router, clock, 1, usage);
    const after = figures(router);
    expect(after.unitsPerToken).toBeGreaterThan(3.4);
    expect(after.unitsPerToken).toBeLessThan(4.7);
    for (const t of after.targets) {
      expect(t.boundTokens).not.toBeNull();
      expect(t.boundTokens!).toBeGreaterThan(2500 * 0.8);
      expect(t.boundTokens!).toBeLessThan(2500 * 1.25);
    }
    // Bounded in time: the sample decays like any other (1,000 normal answers later it is gone).
    serve(router, clock, 1000);
    expect(figures(router).unitsPerToken).toBeCloseTo(4, 2);
    for (const t of figures(router).targets) expect(Math.abs(t.boundTokens! - 2500)).toBeLessThan(50);
  });

  it("keeps a hot key's first choice bounded after the answer", async () => {
    const clock = new FakeClock();
    const router = await createRouter({ targets, clock, concurrencyThreshold: 32, prefixAware: { saturation: "tokens" } });
    serve(router, clock, 48);
    serve(router, clock, 1, { promptTokens: HUGE, cachedTokens: HUGE });
    // A hot key (a 4,096-character prefix) with 4,000 characters (1,000 tokens) uncached after it:
    // τ = 2,500 tokens lets 2 in flight on its first choice, then the key spills.
    const hot = (i: number) => ({ messages: [{ role: "user", content: "hot:".padEnd(4096, "k") + `${i}|`.padEnd(4000, "t") }] });
    const leases = Array.from({ length: 4 }, (_, i) => router.route({ body: hot(i) }));
    const first = leases[0]!.target.id;
    expect(leases.filter((l) => l.target.id === first).length).toBeLessThanOrEqual(2);
    for (const l of leases) l.release();
  });
});
