import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createRouter, mergeStats, type Router, type RouterStats } from "prefix-router";
import { FakeClock } from "../support.js";

const targets = [{ id: "a" }, { id: "b" }, { id: "c" }];

/** One request: its target, TTFT and duration (ms), and reported usage. */
interface Sample {
  target: number;
  ttft: number;
  duration: number;
  prompt: number;
  cached: number;
}

const sample = fc.record({
  target: fc.integer({ min: 0, max: 2 }),
  ttft: fc.integer({ min: 1, max: 5_000_000 }).map((us) => us / 1000),
  duration: fc.integer({ min: 0, max: 5_000_000 }).map((us) => us / 1000),
  prompt: fc.integer({ min: 0, max: 20_000 }),
  cached: fc.integer({ min: 0, max: 20_000 }),
});

/** Replays `samples` through `router` on `clock`: each request routed to its target, first byte, release. */
function replay(router: Router, clock: FakeClock, samples: readonly Sample[]): void {
  for (const s of samples) {
    const others = targets.filter((_, i) => i !== s.target).map((t) => t.id);
    const lease = router.route({}, { exclude: others });
    clock.t += s.ttft;
    lease.firstByte();
    clock.t += Math.max(0, s.duration - s.ttft);
    lease.release("success", { promptTokens: s.prompt, cachedTokens: Math.min(s.cached, s.prompt) });
  }
}

async function routerOn(clock: FakeClock): Promise<Router> {
  return createRouter({ targets, clock, concurrencyThreshold: 1024 });
}

describe("mergeStats", () => {
  it("merging the stats of 8 processes gives the percentiles of one process that saw every request (property)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(sample, { minLength: 1, maxLength: 200 }), async (samples) => {
        const clock = new FakeClock();
        const one = await routerOn(clock);
        replay(one, clock, samples);
        const parts: RouterStats[] = [];
        for (let p = 0; p < 8; p++) {
          const c = new FakeClock();
          const router = await routerOn(c);
          replay(router, c, samples.filter((_, i) => i % 8 === p));
          // Processes hand their stats over as JSON.
          parts.push(JSON.parse(JSON.stringify(router.stats())) as RouterStats);
        }
        const merged = mergeStats(parts);
        const single = one.stats();
        const strip = (s: RouterStats) => JSON.parse(JSON.stringify(s, (k, v) => (k === "histogram" ? undefined : v)));
        expect(strip(merged)).toEqual(strip(single));
      }),
      { numRuns: 30 },
    );
  });

  it("adds counters per target and keeps targets only some processes know", async () => {
    const clock = new FakeClock();
    const a = await createRouter({ targets: [{ id: "a" }, { id: "b" }], clock });
    const b = await createRouter({ targets: [{ id: "b" }, { id: "c" }], clock });
    a.route({}, { exclude: ["b"] }).release("server-error");
    b.route({}, { exclude: ["c"] });
    b.route({}, { exclude: ["b"] }).release("success");
    const m = mergeStats([a.stats(), b.stats()]);
    expect(m.targets.map((t) => [t.id, t.routed, t.inflight, t.failures])).toEqual([
      ["a", 1, 0, 1],
      ["b", 1, 1, 0],
      ["c", 1, 0, 0],
    ]);
    expect(m.totals).toMatchObject({ routed: 3, inflight: 1, failures: 1, leastOutstanding: 3 });
    expect(m.targets.map((t) => t.share)).toEqual([1 / 3, 1 / 3, 1 / 3]);
  });

  it("adds the longest-prefix index sizes of each process", async () => {
    const clock = new FakeClock();
    const body = { messages: [{ role: "user", content: "x".repeat(3000) }] };
    const routers = await Promise.all([0, 1].map(() => createRouter({ targets, clock, strategy: "longest-prefix" })));
    for (const r of routers) r.route({ body }).release();
    const [s0, s1] = routers.map((r) => r.stats());
    const m = mergeStats([s0!, s1!]);
    expect(m.prefixIndex?.blocks).toBe(s0!.prefixIndex!.blocks + s1!.prefixIndex!.blocks);
    expect(m.prefixIndex?.targets.map((t) => t.id)).toEqual(["a", "b", "c"]);
  });

  it("rejects what is not router stats", () => {
    expect(() => mergeStats({} as never)).toThrow(TypeError);
    expect(() => mergeStats([{ targets: [] } as never])).toThrow(/item 0/);
  });

  it("of nothing is empty stats", () => {
    expect(mergeStats([])).toMatchObject({ targets: [], totals: { routed: 0, ttftMs: null, durationMs: null } });
  });
});

describe("mergeStats: response affinity (OpenAI adapter)", () => {
  it("adds up the local and store counts; the store is healthy only when every process finds it so", () => {
    const store = (healthy: boolean, n: number, lastError: string | null) => ({ source: "redis" as const, healthy, hits: n, misses: 2 * n, errors: 3 * n, timeouts: n, skipped: 5 * n, writes: 7 * n, writeErrors: 11 * n, lastError });
    const part = (n: number, healthy: boolean, lastError: string | null): RouterStats => ({
      targets: [],
      totals: {} as RouterStats["totals"],
      responseAffinity: { entries: n, localHits: 10 * n, localMisses: 20 * n, store: store(healthy, n, lastError) },
    });
    expect(mergeStats([part(1, true, null), part(2, false, "read timed out after 50 ms")]).responseAffinity).toEqual({
      entries: 3,
      localHits: 30,
      localMisses: 60,
      store: { ...store(false, 3, "read timed out after 50 ms") },
    });
    expect(mergeStats([part(1, true, null)]).responseAffinity?.store?.healthy).toBe(true);
    expect(mergeStats([{ targets: [], totals: {} as RouterStats["totals"] }]).responseAffinity).toBeUndefined();
  });
});
