import { describe, expect, it } from "vitest";
import { createRouter, type Lease, type LoadView, type Logger, type Router, DEFAULTS } from "prefix-router";
import { MIN_PREDICTED_TOKENS, judgePrediction } from "../../src/router/closed-loop.js";
import { FakeClock } from "../support.js";

const ab = [{ id: "a" }, { id: "b" }];
/** A document of `chars` characters (4 per predicted token) and a question. */
const doc = (name: string, chars = 8000, q = "?") => ({ messages: [{ role: "user", content: `${name}:${"d".repeat(chars - name.length - 1)}` }, { role: "user", content: q }] });

function warnings(): Logger & { warned: string[] } {
  const warned: string[] = [];
  const none = () => {};
  return { warned, debug: none, info: none, warn: (m: string) => warned.push(m), error: none };
}

/** Routes `body`, then ends the lease as a server that served `cached` of `prompt` tokens from cache. */
function serve(router: Router, body: object, cached: number, prompt = 2100, exclude: string[] = []): Lease {
  const lease = router.route({ body }, { exclude });
  lease.firstByte();
  lease.release("success", { promptTokens: prompt, cachedTokens: cached });
  return lease;
}

const stat = (router: Router, id: string) => router.stats().targets.find((t) => t.id === id)!;

describe("judgePrediction", () => {
  it.each([
    ["no prediction", undefined, "success", { promptTokens: 2000, cachedTokens: 0 }, undefined],
    ["a prediction too small to test", MIN_PREDICTED_TOKENS - 1, "success", { promptTokens: 2000, cachedTokens: 0 }, undefined],
    ["no usage reported", 1000, "success", undefined, undefined],
    ["a failed request", 1000, "server-error", { promptTokens: 2000, cachedTokens: 0 }, undefined],
    ["half of the prediction served", 1000, "success", { promptTokens: 2000, cachedTokens: 500 }, "hit"],
    ["less than half", 1000, "success", { promptTokens: 2000, cachedTokens: 499 }, "miss"],
    ["a prediction larger than the prompt, capped at it", 5000, "success", { promptTokens: 1000, cachedTokens: 500 }, "hit"],
  ] as const)("%s", (_, predicted, outcome, info, verdict) => {
    expect(judgePrediction(predicted, outcome, info, DEFAULTS.closedLoop.ratio)).toBe(verdict);
  });
});

describe("closed loop — longest-prefix", () => {
  it("predicts the blocks the target holds, in tokens of 4 characters", async () => {
    const router = await createRouter({ targets: ab, strategy: "longest-prefix" });
    const first = serve(router, doc("x"), 0);
    expect(first.predictedCachedTokens).toBe(0);
    // 8,000 characters of document + "?" → 31 full 256-character blocks held = 7,936 characters.
    expect(serve(router, doc("x"), 1984).predictedCachedTokens).toBe(1984);
    expect(stat(router, first.target.id)).toMatchObject({ predictions: 1, predictionMisses: 0, predictedCachedTokens: 1984, cachedTokens: 1984 });
  });

  it("forgets a target whose responses miss 3 times in a row, so its prefixes go to a warm holder at once", async () => {
    const log = warnings();
    const router = await createRouter({ targets: ab, strategy: "longest-prefix", logger: log, clock: new FakeClock() });
    // Documents x, y, z on both targets: each sent to its first choice, then once to the other.
    for (const name of ["x", "y", "z"]) {
      const home = serve(router, doc(name), 0).target.id;
      serve(router, doc(name), 0, 2100, [home]);
    }
    const body = doc("x", 8000, "new question");
    const holder = router.rank({ body }).targets[0]!.id;
    const other = holder === "a" ? "b" : "a";
    // The holder restarts: three requests it was predicted to hold come back cold.
    for (const name of ["x", "y", "z"]) serve(router, doc(name, 8000, "again"), 0, 2100, [other]);
    expect(stat(router, holder)).toMatchObject({ predictions: 3, predictionMisses: 3, indexResets: 1 });
    expect(log.warned).toEqual([
      `prefix-router: target ${JSON.stringify(holder)} served far fewer cached tokens than predicted 3 times in a row (restarted, or evicting); the longest-prefix strategy forgot its 93 entries for it`,
    ]);
    // The warm copy wins now; the holder keeps only the request it just prefilled ("z").
    const lease = router.route({ body });
    expect([lease.target.id, lease.kind]).toEqual([other, "preferred"]);
    expect(router.stats().prefixIndex?.targets.find((t) => t.id === holder)?.blocks).toBe(31);
  });

  it("judges its predictions under a shared load view that counts queued work (the usage reaches the strategy)", async () => {
    // A view that counts queued work and tokens, as the redis and engine views do; its figures say nothing.
    const counted: number[] = [];
    const view: LoadView = {
      source: "counting",
      version: 0,
      shared: () => false,
      others: () => Number.NaN,
      addWork: (_, d) => counted.push(d),
      addWorkTokens: (_, d) => counted.push(d),
      setTargets() {},
      acquire() {},
      release() {},
      stats: () => ({ source: "counting", healthy: false, lastRefreshAtMs: null, errors: 0, refreshes: 0, lastError: null, others: {} }),
      async close() {},
    };
    const router = await createRouter({ targets: ab, strategy: "longest-prefix", loadView: view });
    const home = serve(router, doc("x"), 0).target.id;
    const others = ab.map((t) => t.id).filter((id) => id !== home);
    for (const q of ["1", "2", "3"]) serve(router, doc("x", 8000, q), 0, 2100, others);
    expect(stat(router, home)).toMatchObject({ predictions: 3, predictionMisses: 3, indexResets: 1 });
    // Every amount the view was given was taken back.
    expect(counted.reduce((a, b) => a + b, 0)).toBe(0);
    expect(counted.length).toBeGreaterThan(0);
  });

  it("starts the run over after a hit: miss, miss, hit, miss, miss forgets nothing", async () => {
    const router = await createRouter({ targets: ab, strategy: "longest-prefix" });
    const home = serve(router, doc("x"), 0).target.id;
    const others = ab.map((t) => t.id).filter((id) => id !== home);
    for (const cached of [0, 0, 2000, 0, 0]) serve(router, doc("x", 8000, `q${cached}`), cached, 2100, others);
    expect(stat(router, home)).toMatchObject({ predictions: 5, predictionMisses: 4, indexResets: 0 });
  });

  it("off (closedLoop: false): predictions are reported, nothing is forgotten", async () => {
    const router = await createRouter({ targets: ab, strategy: "longest-prefix", closedLoop: false });
    const home = serve(router, doc("x"), 0).target.id;
    for (let i = 0; i < 6; i++) serve(router, doc("x", 8000, `q${i}`), 0);
    expect(stat(router, home)).toMatchObject({ predictions: 6, predictionMisses: 6, indexResets: 0 });
  });

  it("validates its options, naming them", async () => {
    await expect(createRouter({ targets: ab, closedLoop: { misses: 0 } })).rejects.toThrow("Expected `closedLoop.misses` to be an integer from 1 to 1000, got 0");
    await expect(createRouter({ targets: ab, closedLoop: { ratio: 0 } })).rejects.toThrow("`closedLoop.ratio`");
    await expect(createRouter({ targets: ab, closedLoop: true as never })).rejects.toThrow("Expected `closedLoop` to be an object or false, got true");
  });
});

describe("closed loop — prefix-aware", () => {
  it("predicts the key's prefix cached once the key was sent to the target, until repeated misses", async () => {
    const router = await createRouter({ targets: ab, closedLoop: { misses: 2 } });
    const body = doc("x", 5000);
    expect(serve(router, body, 0).predictedCachedTokens).toBe(0);
    // The key covers the first 4,096 characters: 1,024 tokens.
    const second = serve(router, body, 1024);
    expect(second.predictedCachedTokens).toBe(1024);
    serve(router, body, 0);
    serve(router, body, 0);
    expect(stat(router, second.target.id)).toMatchObject({ predictions: 3, predictionMisses: 2, indexResets: 1 });
    // Forgotten but for the request just served: the key is predicted cached again.
    expect(serve(router, body, 1024).predictedCachedTokens).toBe(1024);
    expect(serve(router, doc("y", 5000), 0).predictedCachedTokens).toBe(0);
  });

  it("never changes a pick", async () => {
    const a = await createRouter({ targets: ab });
    const b = await createRouter({ targets: ab, closedLoop: false });
    for (let i = 0; i < 50; i++) {
      const body = doc(`k${i % 7}`, 5000);
      expect(serve(a, body, 0).target.id).toBe(serve(b, body, 0).target.id);
    }
  });
});
