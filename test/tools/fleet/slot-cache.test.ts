import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { VirtualFleet, type VirtualResult } from "prefix-router/fleet";
import { Engine } from "../../../tools/fleet/engine.js";
import { resolveEngineConfig } from "../../../tools/fleet/config.js";
import { SlotScheduler, type SlotChoice } from "../../../tools/fleet/llama/slots.js";

/** Token-level keys (block size 1): prompt `p` is its tokens. */
const keys = (p: readonly number[]) => Float64Array.from(p);

/** Runs `prompts` one after the other on a slot engine; returns each one's cached tokens. */
function sequential(slots: number, similarity: number, prompts: readonly (readonly number[])[]): number[] {
  const engine = new Engine({ id: "i0", config: { slots, slotPromptSimilarity: similarity, blockSizeTokens: 1 } });
  const cached: number[] = [];
  let t = 0;
  prompts.forEach((p, i) => {
    engine.enqueue({ id: i, promptTokens: p.length, blockKeys: keys(p), outputTokens: 2 }, { onDone: (r) => cached.push(r.cachedTokens) }, t);
    while (!engine.isIdle()) engine.processNext();
    t = engine.now + 1;
  });
  return cached;
}

/** The same through llama/slots.ts's scheduler: request, granted at once, released holding its prompt. */
function reference(slots: number, similarity: number, prompts: readonly (readonly number[])[]): number[] {
  const s = new SlotScheduler(slots, similarity);
  return prompts.map((p) => {
    let choice: SlotChoice | undefined;
    s.request(p as number[], (c) => (choice = c));
    s.release(choice!.slot, p as number[]);
    return choice!.reused;
  });
}

describe("emulated slot cache (llama.cpp's slots)", () => {
  it("reuses what llama/slots.ts's scheduler reuses, request after request (property)", () => {
    // Prompts: one of a few shared heads + a short tail, so slots hold, lose and regain heads.
    const prompt = fc.tuple(fc.nat(5), fc.array(fc.nat(3), { minLength: 1, maxLength: 4 })).map(([h, tail]) => [...Array.from({ length: 20 + 3 * h }, (_, i) => 100 * (h + 1) + i), ...tail]);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4 }), fc.constantFrom(0, 0.1, 0.5), fc.array(prompt, { minLength: 1, maxLength: 30 }), (slots, sim, prompts) => {
        expect(sequential(slots, sim, prompts)).toEqual(reference(slots, sim, prompts));
      }),
      { numRuns: 60 },
    );
  });

  it("a second request for a prompt running in one slot starts cold in another; the next one is warm", () => {
    const engine = new Engine({ id: "i0", config: { slots: 2, blockSizeTokens: 1 } });
    const p = Array.from({ length: 200 }, (_, i) => i);
    const done: VirtualResult[] = [];
    const req = (id: number) => ({ id, promptTokens: p.length, blockKeys: keys(p), outputTokens: 4 });
    engine.enqueue(req(0), { onDone: (r) => done.push(r) }, 0);
    while (!engine.isIdle()) engine.processNext();
    engine.enqueue(req(1), { onDone: (r) => done.push(r) }, engine.now);
    engine.enqueue(req(2), { onDone: (r) => done.push(r) }, engine.now);
    while (!engine.isIdle()) engine.processNext();
    // Cold, then warm in the slot holding it, and cold beside it for the one running at the same time.
    expect(done.map((r) => r.cachedTokens)).toEqual([0, 199, 0]);
    expect(engine.slotKeys().map((k) => k.length)).toEqual([200, 200]);
    engine.enqueue(req(3), { onDone: (r) => done.push(r) }, engine.now);
    engine.enqueue(req(4), { onDone: (r) => done.push(r) }, engine.now);
    while (!engine.isIdle()) engine.processNext();
    expect(done.slice(3).map((r) => r.cachedTokens)).toEqual([199, 199]);
  });

  it("runs at most K requests: the rest wait in FIFO order", () => {
    const engine = new Engine({ id: "i0", config: { slots: 2, blockSizeTokens: 1 } });
    const admitted: number[] = [];
    for (let i = 0; i < 5; i++) {
      const p = Array.from({ length: 50 }, (_, k) => 1000 * i + k);
      engine.enqueue({ id: i, promptTokens: 50, blockKeys: keys(p), outputTokens: 3 }, { onAdmit: () => admitted.push(i), onDone: () => {} }, 0);
    }
    let maxRunning = 0;
    while (!engine.isIdle()) {
      engine.processNext();
      maxRunning = Math.max(maxRunning, engine.stats().running);
    }
    expect(maxRunning).toBe(2);
    expect(admitted).toEqual([0, 1, 2, 3, 4]);
  });

  it("a restart empties the slots; a cancelled request's slot keeps only what it computed", () => {
    const engine = new Engine({ id: "i0", config: { slots: 1, blockSizeTokens: 1, maxNumBatchedTokens: 64 } });
    const p = Array.from({ length: 300 }, (_, i) => i);
    const ticket = engine.enqueue({ id: 0, promptTokens: 300, blockKeys: keys(p), outputTokens: 4 }, { onDone: () => {} }, 0);
    // Frontend, then two 64-token chunks.
    for (let i = 0; i < 3; i++) engine.processNext();
    expect(ticket.cancel()).toBe(true);
    expect(engine.slotKeys()[0]!.length).toBe(128);
    engine.restart();
    expect(engine.slotKeys()[0]!.length).toBe(0);
  });

  it("through the virtual fleet: the same system prompt is warm on the instance that ran it", () => {
    const fleet = new VirtualFleet({ instances: ["a", "b"], engine: { slots: 2 } });
    const run = (id: string, prompt: string): VirtualResult => {
      let out: VirtualResult | undefined;
      fleet.submit(id, { id: prompt.length, prompt, outputTokens: 2 }, { onDone: (r) => (out = r) });
      fleet.runUntilIdle();
      return out!;
    };
    const system = "policy ".repeat(400);
    expect(run("a", `${system}refunds?`).cachedTokens).toBe(0);
    expect(run("a", `${system}shipping?`).cachedTokens).toBeGreaterThan(600);
    expect(run("b", `${system}shipping?`).cachedTokens).toBe(0);
  });

  it("checks its options", () => {
    expect(() => resolveEngineConfig({ slots: -1 })).toThrow(/`slots` to be an integer ≥ 0/);
    expect(() => resolveEngineConfig({ slots: 1.5 })).toThrow(/`slots`/);
    expect(() => resolveEngineConfig({ slotPromptSimilarity: 1 })).toThrow(/`slotPromptSimilarity` to be a number from 0 to below 1/);
  });
});
