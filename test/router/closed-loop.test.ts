import { describe, expect, it } from "vitest";
import { createRouter, type Lease, type LoadView, type Logger, type Router, DEFAULTS } from "prefix-router";
import fc from "fast-check";
import { CHARS_PER_TOKEN, MIN_PREDICTED_TOKENS, MIN_RATIO_SAMPLE_UNITS, TOKEN_RATIO_RANGE, TokenRatio, judgePrediction } from "../../src/closed-loop/closed-loop.js";
import { promptUnits } from "../../src/routing/prompt-length.js";
import { FakeClock } from "../support.js";

const ab = [{ id: "a" }, { id: "b" }];
/** A document of `chars` characters (4 per predicted token) and a question. */
const doc = (name: string, chars = 8000, q = "?") => ({ messages: [{ role: "user", content: `${name}:${"d".repeat(chars - name.length - 1)}` }, { role: "user", content: q }] });

function warnings(): Logger & { warned: string[] } {
  const warned: string[] = [];
  const none = () => {};
  return { warned, debug: none, info: none, warn: (m: string) => warned.push(m), error: none };
}

/**
 * Routes `body`, then ends the lease as a server that served `cached` of `prompt` tokens from
 * cache. Without `prompt`, the response reports no prompt tokens: the target's characters per
 * token stay at 4.
 */
function serve(router: Router, body: object, cached: number, prompt?: number, exclude: string[] = []): Lease {
  const lease = router.route({ body }, { exclude });
  lease.firstByte();
  lease.release("success", prompt === undefined ? { cachedTokens: cached } : { promptTokens: prompt, cachedTokens: cached });
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
      serve(router, doc(name), 0, undefined, [home]);
    }
    const body = doc("x", 8000, "new question");
    const holder = router.rank({ body }).targets[0]!.id;
    const other = holder === "a" ? "b" : "a";
    // The holder restarts: three requests it was predicted to hold come back cold.
    for (const name of ["x", "y", "z"]) serve(router, doc(name, 8000, "again"), 0, undefined, [other]);
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
    for (const cached of [0, 0, 2000, 0, 0]) serve(router, doc("x", 8000, `q${cached}`), cached, undefined, others);
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

describe("closed loop — learned characters per token", () => {
  /** A byte-level engine: one token per character of the prompt (markers and all), as llama.cpp's byte tokenizer counts. */
  const byteLevel = (body: object) => promptUnits(body) as number;

  it("prefix-aware learns a target's ratio from promptTokens: predictions follow the engine, not ÷ 4", async () => {
    const router = await createRouter({ targets: ab });
    const body = doc("x", 3000);
    const predicted: number[] = [];
    for (let i = 0; i < 40; i++) {
      const lease = router.route({ body });
      predicted.push(lease.predictedCachedTokens ?? 0);
      lease.firstByte();
      lease.release("success", { promptTokens: byteLevel(body), cachedTokens: 3000 });
    }
    // The key covers the whole prompt (3,021 characters): 755 tokens at 4, 3,021 at 1.
    expect(predicted[0]).toBe(0);
    expect(predicted[1]).toBe(Math.floor(3021 / 2));
    expect(predicted.at(-1)).toBeGreaterThan(0.9 * 3021);
    expect(predicted.at(-1)).toBeLessThanOrEqual(3021);
    // ...so the engine's real hits are hits: no miss, nothing forgotten.
    expect(router.stats().targets.reduce((n, t) => n + t.predictionMisses, 0)).toBe(0);
  });

  it("longest-prefix learns it too", async () => {
    const router = await createRouter({ targets: ab, strategy: "longest-prefix" });
    const body = doc("x", 3000);
    let last = 0;
    for (let i = 0; i < 40; i++) {
      const lease = router.route({ body });
      last = lease.predictedCachedTokens ?? 0;
      lease.firstByte();
      lease.release("success", { promptTokens: byteLevel(body), cachedTokens: 3000 });
    }
    // 11 full 256-character blocks held = 2,816 characters = 2,816 tokens at one a character.
    expect(last).toBeGreaterThan(0.9 * 2816);
    expect(last).toBeLessThanOrEqual(2816);
  });

  it("usage from a failed request or without promptTokens teaches nothing", async () => {
    const router = await createRouter({ targets: ab });
    const body = doc("x", 3000);
    for (const [outcome, info] of [
      ["server-error", { promptTokens: 3021, cachedTokens: 0 }],
      ["success", { cachedTokens: 0 }],
      ["success", undefined],
    ] as const) {
      const lease = router.route({ body });
      lease.release(outcome, info);
    }
    expect(router.route({ body }).predictedCachedTokens).toBe(Math.floor(3021 / 4));
  });
});

describe("TokenRatio", () => {
  const hostile = fc.oneof(
    fc.double(),
    fc.integer(),
    fc.constantFrom(0, -1, -0, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.MAX_VALUE, Number.MIN_VALUE, 1e-300),
  );
  const anything = fc.oneof(hostile, fc.constant(undefined), fc.constant(null), fc.string(), fc.constant("1000"), fc.constant({}));

  it("starts at 4", () => {
    const r = new TokenRatio();
    expect(r.value).toBe(CHARS_PER_TOKEN);
    expect(r.tokens(4000)).toBe(1000);
  });

  it("stays within its bounds whatever the usage says (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.oneof(hostile, fc.constant(undefined)), anything), { maxLength: 200 }), (samples) => {
        const r = new TokenRatio();
        for (const [units, tokens] of samples) r.learn(units as number | undefined, tokens);
        expect(r.value).toBeGreaterThanOrEqual(TOKEN_RATIO_RANGE.min * (1 - 1e-12));
        expect(r.value).toBeLessThanOrEqual(TOKEN_RATIO_RANGE.max * (1 + 1e-12));
        expect(Number.isFinite(r.tokens(65_536))).toBe(true);
      }),
    );
  });

  it("ignores what is not a usable sample: the value does not move (property)", () => {
    fc.assert(
      fc.property(fc.oneof(fc.constant(undefined), fc.double({ max: MIN_RATIO_SAMPLE_UNITS, maxExcluded: true })), anything, (units, tokens) => {
        const r = new TokenRatio();
        expect(r.learn(units, tokens)).toBe(false);
        expect(r.value).toBe(CHARS_PER_TOKEN);
      }),
    );
    const r = new TokenRatio();
    for (const tokens of [0, -5, Number.NaN, Number.POSITIVE_INFINITY, "100", null, undefined, 0.5]) expect(r.learn(1000, tokens)).toBe(false);
    expect(r.value).toBe(CHARS_PER_TOKEN);
  });

  it("converges to a steady ratio within 1% (property)", () => {
    fc.assert(
      fc.property(fc.double({ min: TOKEN_RATIO_RANGE.min, max: TOKEN_RATIO_RANGE.max, noNaN: true }), (ratio) => {
        const r = new TokenRatio();
        for (let i = 0; i < 300; i++) r.learn(10_000, 10_000 / ratio);
        expect(Math.abs(r.value / ratio - 1)).toBeLessThan(0.01);
      }),
    );
  });

  it("one hostile answer among steady ones moves it by at most 32^(1/32) once the window is full", () => {
    const r = new TokenRatio();
    for (let i = 0; i < 100; i++) r.learn(4000, 4000);
    const before = r.value;
    r.learn(4000, 1);
    expect(r.value / before).toBeLessThanOrEqual(32 ** (1 / 32) + 1e-9);
    expect(r.value / before).toBeGreaterThan(1);
  });

  it("a steady ratio far from 4 is within 1% after 4 responses: the starting guess stops counting", () => {
    const r = new TokenRatio();
    for (let i = 0; i < 3; i++) r.learn(1000, 1100);
    expect(r.value).toBeGreaterThan(1000 / 1100 + 0.05);
    r.learn(1000, 1100);
    expect(r.value).toBeCloseTo(1000 / 1100, 9);
  });

  it("predicted tokens never decrease with the characters believed cached (property)", () => {
    fc.assert(
      fc.property(fc.double({ min: 0.5, max: 16, noNaN: true }), fc.nat(1e6), fc.nat(1e6), (ratio, a, b) => {
        const r = new TokenRatio();
        r.learn(10_000, 10_000 / ratio);
        expect(r.tokens(Math.min(a, b))).toBeLessThanOrEqual(r.tokens(Math.max(a, b)));
      }),
    );
  });
});
