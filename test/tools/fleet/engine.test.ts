import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DEFAULT_ENGINE_CONFIG, FleetError, VirtualFleet, isFleetError, type VirtualResult } from "prefix-router/fleet";
import { KvCache } from "../../../tools/fleet/kv-cache.js";
import { blockKeys, countTokens, fillerText } from "../../../tools/fleet/tokenizer.js";
import { idleTtftMs } from "../../../tools/fleet/cost-model.js";
import { renderPrompt } from "../../../tools/fleet/template.js";
import { resolveEngineConfig } from "../../../tools/fleet/config.js";

/** A prompt of exactly `tokens` tokens whose text depends on `tag`. */
function prompt(tokens: number, tag = "a"): string {
  let s = "";
  while (s.length < tokens * 4) s += `${tag} lorem ipsum dolor ${s.length} `;
  return s.slice(0, tokens * 4);
}

function runOne(fleet: VirtualFleet, id: string, text: string, outputTokens = 4): VirtualResult {
  let out: VirtualResult | undefined;
  fleet.submit(id, { id: text.length, prompt: text, outputTokens }, { onDone: (r) => (out = r) });
  fleet.runUntilIdle();
  if (out === undefined) throw new Error("request did not finish");
  return out;
}

describe("tokenizer", () => {
  it("counts ceil(length / 4) tokens", () => {
    expect(countTokens("")).toBe(0);
    expect(countTokens("abcd")).toBe(1);
    expect(countTokens("abcde")).toBe(2);
    expect(countTokens("Hello, world")).toBe(3);
  });

  it("gives one key per full 16-token block, and the keys of a prefix are a prefix of the keys", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 600 }), fc.string({ maxLength: 300 }), (a, b) => {
        const whole = blockKeys(a + b, 16);
        const head = blockKeys(a, 16);
        expect(whole.length).toBe(Math.floor(countTokens(a + b) / 16));
        const fullHead = Math.floor(a.length / 64);
        expect([...whole.subarray(0, fullHead)]).toEqual([...head.subarray(0, fullHead)]);
      }),
    );
  });

  it("chains: a change in block 0 changes every later key; the seed separates models", () => {
    const a = prompt(64, "a");
    const b = "X" + a.slice(1);
    const ka = blockKeys(a, 16);
    const kb = blockKeys(b, 16);
    for (let i = 0; i < 4; i++) expect(ka[i]).not.toBe(kb[i]);
    const other = blockKeys(a, 16, "another-model");
    for (let i = 0; i < 4; i++) expect(other[i]).not.toBe(ka[i]);
    expect(new Set(ka).size).toBe(4);
  });

  it("pins known keys (changing the hash is a breaking change for recorded runs)", () => {
    expect([...blockKeys(prompt(32, "pin"), 16)]).toMatchSnapshot();
  });

  it("filler text has exactly one token per generated token", () => {
    for (const n of [1, 7, 58, 59, 200]) expect(countTokens(fillerText(n))).toBe(n);
    expect(fillerText(3)).toBe("Lorem ipsum ");
  });
});

describe("renderPrompt", () => {
  it("renders chat messages with the Llama 3.1 template and a generation prompt", () => {
    expect(renderPrompt({ messages: [{ role: "system", content: "S" }, { role: "user", content: [{ type: "text", text: "Hi" }] }] })).toBe(
      "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|>" +
        "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
    );
  });

  it("puts tools first, with sorted keys, so key order does not matter", () => {
    const t1 = { type: "function", function: { name: "f", parameters: { b: 1, a: 2 } } };
    const t2 = { function: { parameters: { a: 2, b: 1 }, name: "f" }, type: "function" };
    const m = [{ role: "user", content: "q" }];
    const r1 = renderPrompt({ tools: [t1], messages: m });
    expect(r1).toBe(renderPrompt({ messages: m, tools: [t2] }));
    expect(r1.startsWith('<|begin_of_text|><|start_header_id|>tools<|end_header_id|>\n\n{"function":{"name":"f"')).toBe(true);
  });

  it("renders completions prompts and SageMaker inputs after a BOS token", () => {
    expect(renderPrompt({ prompt: "abc" })).toBe("<|begin_of_text|>abc");
    expect(renderPrompt({ prompt: ["abc"] })).toBe("<|begin_of_text|>abc");
    expect(renderPrompt({ inputs: "abc", parameters: { max_new_tokens: 3 } })).toBe("<|begin_of_text|>abc");
  });

  it("rejects what it cannot render with a typed error", () => {
    for (const bad of [null, 3, {}, { messages: [] }, { prompt: "" }, { prompt: ["a", "b"] }, { messages: [{ content: "x" }] }]) {
      let caught: unknown;
      try {
        renderPrompt(bad);
      } catch (e) {
        caught = e;
      }
      expect(isFleetError(caught)).toBe(true);
      expect((caught as FleetError).code).toBe("INVALID_REQUEST");
    }
  });
});

describe("engine config", () => {
  it("validates and names the option", () => {
    expect(() => resolveEngineConfig({ maxNumSeqs: 0 })).toThrow(/`maxNumSeqs`.*got 0/);
    expect(() => resolveEngineConfig({ stepBaseMs: -1 })).toThrow(/`stepBaseMs`/);
    expect(() => resolveEngineConfig({ nope: 1 } as never)).toThrow(/Unknown engine option `nope`/);
    expect(resolveEngineConfig({ maxNumSeqs: 8 }).maxNumSeqs).toBe(8);
  });
});

describe("calibration (Llama 3.1 70B on one ml.p5.48xlarge)", () => {
  it("a cold 8,000-token prompt has a TTFT near 280 ms, a fully cached one near 63 ms", () => {
    const fleet = new VirtualFleet({ instances: 1 });
    const text = prompt(8000);
    const cold = runOne(fleet, "i0", text);
    expect(cold.cachedTokens).toBe(0);
    expect(cold.firstTokenMs - cold.arrivalMs).toBeCloseTo(280, -1);
    expect(cold.firstTokenMs - cold.arrivalMs).toBeCloseTo(idleTtftMs(DEFAULT_ENGINE_CONFIG, 8000, 0), 9);
    fleet.advanceTo(fleet.now + 1000);
    const warm = runOne(fleet, "i0", text);
    // vLLM recomputes at least the last token: 499 of 500 blocks hit.
    expect(warm.cachedTokens).toBe(7984);
    expect(warm.firstTokenMs - warm.arrivalMs).toBeCloseTo(63, 0);
    expect(warm.queueMs).toBe(0);
  });

  it("prefills longer than the token budget take several chunks", () => {
    const fleet = new VirtualFleet({ instances: 1 });
    const r = runOne(fleet, "i0", prompt(20_000));
    expect(r.firstTokenMs - r.arrivalMs).toBeCloseTo(idleTtftMs(DEFAULT_ENGINE_CONFIG, 20_000, 0), 9);
    // 3 chunks (8192 + 8192 + 3616) pay the step base 3 times.
    const oneChunk = { ...DEFAULT_ENGINE_CONFIG, maxNumBatchedTokens: 32_768 };
    expect(idleTtftMs(DEFAULT_ENGINE_CONFIG, 20_000, 0) - idleTtftMs(oneChunk, 20_000, 0)).toBeCloseTo(2 * 12.5, 9);
  });

  it("decode steps take longer with a bigger batch", () => {
    const finish = (n: number): number => {
      const fleet = new VirtualFleet({ instances: 1 });
      const done: VirtualResult[] = [];
      for (let i = 0; i < n; i++) fleet.submit("i0", { id: i, prompt: prompt(16, `r${i}`), outputTokens: 100 }, { onDone: (r) => done.push(r) });
      fleet.runUntilIdle();
      const r = done[0]!;
      return (r.finishMs - r.firstTokenMs) / 99;
    };
    const one = finish(1);
    expect(one).toBeCloseTo(12.5 + 0.04 + 1.2e-5 * 66, 1);
    expect(finish(64)).toBeGreaterThan(one + 60 * 0.04);
  });
});

describe("prefix cache accounting", () => {
  it("cached_tokens is 0 the first time and covers the shared full blocks the next time", () => {
    const fleet = new VirtualFleet({ instances: 1 });
    const shared = prompt(1000, "shared");
    const a = runOne(fleet, "i0", shared + prompt(50, "A"));
    const b = runOne(fleet, "i0", shared + prompt(50, "B"));
    expect(a.cachedTokens).toBe(0);
    expect(b.cachedTokens).toBe(Math.floor(1000 / 16) * 16);
    expect(b.firstTokenMs - b.arrivalMs).toBeLessThan(a.firstTokenMs - a.arrivalMs);
    const stats = fleet.instanceStats().i0!;
    expect(stats).toMatchObject({ requests: 2, completed: 2, promptTokens: 2100, cachedTokens: 992, running: 0, waiting: 0 });
  });

  it("caches per instance and per model", () => {
    const fleet = new VirtualFleet({ instances: 2 });
    const text = prompt(320);
    runOne(fleet, "i0", text);
    expect(runOne(fleet, "i1", text).cachedTokens).toBe(0);
    let r: VirtualResult | undefined;
    fleet.submit("i0", { id: "m", prompt: text, outputTokens: 1, model: "other" }, { onDone: (x) => (r = x) });
    fleet.runUntilIdle();
    expect(r?.cachedTokens).toBe(0);
    expect(runOne(fleet, "i0", text).cachedTokens).toBe(304);
  });

  it("a request that is still prefilling shares its blocks with a later one (vLLM V1 caches at scheduling)", () => {
    const fleet = new VirtualFleet({ instances: 1 });
    const done: VirtualResult[] = [];
    const shared = prompt(4000, "s");
    fleet.submit("i0", { id: 1, prompt: shared + "x".repeat(40), outputTokens: 2 }, { onDone: (r) => done.push(r) });
    fleet.advanceTo(60); // request 1 is being prefilled
    fleet.submit("i0", { id: 2, prompt: shared + "y".repeat(40), outputTokens: 2 }, { onDone: (r) => done.push(r) });
    fleet.runUntilIdle();
    expect(done.map((r) => r.cachedTokens)).toEqual([0, 4000]);
  });

  it("evicts least recently used blocks under capacity pressure", () => {
    // 40 blocks: each 256-token prompt + 16 output tokens takes 17 blocks, so 3 prompts do not fit.
    const fleet = new VirtualFleet({ instances: 1, engine: { numGpuBlocks: 40 } });
    const [a, b, c] = ["A", "B", "C"].map((t) => prompt(256, t));
    expect(runOne(fleet, "i0", a!, 16).cachedTokens).toBe(0);
    expect(runOne(fleet, "i0", b!, 16).cachedTokens).toBe(0);
    expect(runOne(fleet, "i0", a!, 16).cachedTokens).toBe(240); // a is now the most recently used
    // c needs 17 blocks: the 8 free ones, then 9 of b's, tail first; a (more recent) is untouched.
    expect(runOne(fleet, "i0", c!, 16).cachedTokens).toBe(0);
    expect(runOne(fleet, "i0", a!, 16).cachedTokens).toBe(240);
    expect(runOne(fleet, "i0", b!, 16).cachedTokens).toBe(7 * 16);
  });

  it("evicts the tail of a prompt before its beginning", () => {
    const cache = new KvCache(8, 16);
    const keys = blockKeys(prompt(16 * 6 + 1, "t"), 16);
    const blocks = cache.allocate(keys, 0, 6)!;
    cache.release(blocks);
    const other = blockKeys(prompt(16 * 4 + 1, "o"), 16);
    cache.release(cache.allocate(other, 0, 4)!); // 2 never-used blocks, then 2 evictions
    expect(cache.lookup(keys, 16 * 6 + 1)).toBe(4);
    expect(cache.usage()).toEqual({ usedBlocks: 0, cachedBlocks: 8, numBlocks: 8 });
  });

  it("blocks used by running requests are never evicted: admission waits instead", () => {
    const fleet = new VirtualFleet({ instances: 1, engine: { numGpuBlocks: 20 } });
    const done: VirtualResult[] = [];
    fleet.submit("i0", { id: 1, prompt: prompt(256, "A"), outputTokens: 16 }, { onDone: (r) => done.push(r) });
    fleet.submit("i0", { id: 2, prompt: prompt(256, "B"), outputTokens: 16 }, { onDone: (r) => done.push(r) });
    fleet.advanceTo(100);
    expect(fleet.instanceStats().i0).toMatchObject({ running: 1, waiting: 1 });
    expect(fleet.instanceStats().i0!.kvUsage).toBeCloseTo(17 / 20, 9);
    fleet.runUntilIdle();
    expect(done.map((r) => r.id)).toEqual([1, 2]);
    expect(done[1]!.queueMs).toBeCloseTo(done[0]!.finishMs - 50, 9);
  });
});

describe("scheduler", () => {
  it("queues beyond maxNumSeqs in FCFS order; TTFT = frontend + queue + prefill", () => {
    const fleet = new VirtualFleet({ instances: 1, engine: { maxNumSeqs: 1 } });
    const done: VirtualResult[] = [];
    const firsts: number[] = [];
    for (let i = 0; i < 3; i++) {
      fleet.submit("i0", { id: i, prompt: prompt(800, `q${i}`), outputTokens: 5 }, {
        onFirstToken: (t) => firsts.push(t),
        onDone: (r) => done.push(r),
      });
    }
    fleet.runUntilIdle();
    expect(done.map((r) => r.id)).toEqual([0, 1, 2]);
    expect(done[0]!.queueMs).toBe(0);
    expect(done[1]!.queueMs).toBeCloseTo(done[0]!.finishMs - 50, 9);
    expect(done[2]!.queueMs).toBeCloseTo(done[1]!.finishMs - 50, 9);
    expect(firsts).toEqual(done.map((r) => r.firstTokenMs));
    const prefill = idleTtftMs(DEFAULT_ENGINE_CONFIG, 800, 0) - 50;
    for (const r of done) expect(r.firstTokenMs - r.arrivalMs).toBeCloseTo(50 + r.queueMs + prefill, 9);
  });

  it("concurrent prefills share steps, so each finishes later than alone", () => {
    const alone = idleTtftMs(DEFAULT_ENGINE_CONFIG, 2000, 0);
    const fleet = new VirtualFleet({ instances: 1 });
    const done: VirtualResult[] = [];
    for (let i = 0; i < 4; i++) fleet.submit("i0", { id: i, prompt: prompt(2000, `c${i}`), outputTokens: 1 }, { onDone: (r) => done.push(r) });
    fleet.runUntilIdle();
    // 8,000 tokens fit one 8,192-token step: all four finish together.
    expect(new Set(done.map((r) => r.firstTokenMs)).size).toBe(1);
    expect(done[0]!.firstTokenMs - done[0]!.arrivalMs).toBeGreaterThan(alone + 3 * 2000 * 0.0253 - 1e-9);
  });

  it("slowdown multiplies step times and the frontend overhead", () => {
    const fleet = new VirtualFleet({ instances: 2 });
    fleet.setSlowdown("i1", 3);
    const text = prompt(8000);
    const a = runOne(fleet, "i0", text);
    const b = runOne(fleet, "i1", text);
    expect(b.firstTokenMs - b.arrivalMs).toBeCloseTo(3 * (a.firstTokenMs - a.arrivalMs), 6);
  });

  it("rejects prompts longer than the model or the cache", () => {
    const fleet = new VirtualFleet({ instances: 1, engine: { maxModelLen: 1000 } });
    expect(() => fleet.submit("i0", { id: 1, prompt: prompt(1000), outputTokens: 1 }, { onDone() {} })).toThrow(
      expect.objectContaining({ code: "PROMPT_TOO_LONG" }),
    );
    const small = new VirtualFleet({ instances: 1, engine: { numGpuBlocks: 4 } });
    expect(() => small.submit("i0", { id: 1, prompt: prompt(64), outputTokens: 1 }, { onDone() {} })).toThrow(
      expect.objectContaining({ code: "PROMPT_TOO_LONG" }),
    );
    expect(() => small.submit("i0", { id: 1, prompt: prompt(8), outputTokens: 0 }, { onDone() {} })).toThrow(
      expect.objectContaining({ code: "INVALID_REQUEST" }),
    );
  });
});
