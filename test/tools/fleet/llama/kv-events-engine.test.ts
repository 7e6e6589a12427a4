/**
 * KV events from a real llama.cpp engine (startLlamaFleet with `kvEvents.onBatch`): one engine
 * of 4 slots, a few requests one at a time. After each, the events a subscriber received
 * describe exactly what the slots' KV caches hold (`GET /slots`: node-llama-cpp's own record) in
 * 16-token blocks; a prompt's blocks are its tokens as the engine's tokenizer gives them; a slot
 * taken over by another prompt removes the old prompt's blocks.
 *
 * Needs node-llama-cpp (`npm run engines:llama`): skipped without it, unless
 * PREFIX_ROUTER_REQUIRE_LLAMA=1.
 */
import { performance } from "node:perf_hooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLlamaFleet, type LlamaFleet } from "prefix-router/fleet";
import { tinyLlamaTokenizer } from "../../../../tools/fleet/llama/bpe.js";
import type { KvEventBatch } from "../../../../tools/fleet/llama/kv-events.js";
import { resolveNodeLlamaCpp } from "../../../../tools/fleet/llama/runtime.js";
import { renderPrompt } from "../../../../tools/fleet/template.js";
import { HeldBlocks, expectedPrefixes } from "./kv-events-model.js";

const installed = resolveNodeLlamaCpp() !== undefined;
const required = process.env.PREFIX_ROUTER_REQUIRE_LLAMA === "1";

function document(topic: string, chars: number): string {
  let out = "";
  for (let i = 0; out.length < chars; i++) out += `${topic} clause ${i}: keep records for ${(i * 37) % 91} days, escalate after ${(i * 13) % 17} hours. `;
  return out.slice(0, chars);
}

describe.skipIf(!installed && !required)("KV events of a real llama.cpp engine", () => {
  let fleet: LlamaFleet;
  const batches: KvEventBatch[] = [];
  const held = new HeldBlocks();

  beforeAll(async () => {
    fleet = await startLlamaFleet({
      instances: 1,
      slots: 4,
      contextSize: 1024,
      seed: 3,
      model: { layers: 1 },
      kvEvents: {
        onBatch: (engine, batch) => {
          expect(engine).toBe("i0");
          batches.push(batch);
          held.apply(batch.events);
        },
      },
    });
  }, 120_000);
  afterAll(() => fleet?.close());

  const slots = async (): Promise<{ id: number; tokens: number[]; is_processing: boolean }[]> => (await (await fetch(`${fleet.targets[0]!.url}/slots`)).json()) as never;

  /** Sends a chat request; returns the slot that served it and its prompt's tokens (bpe.ts). */
  const ask = async (system: string): Promise<{ slot: number; prompt: number[] }> => {
    const messages = [
      { role: "system", content: system },
      { role: "user", content: "What applies?" },
    ];
    const res = await fetch(`${fleet.targets[0]!.baseURL}/chat/completions`, { method: "POST", body: JSON.stringify({ messages, max_tokens: 5 }) });
    expect(res.status).toBe(200);
    await res.json();
    return { slot: Number(res.headers.get("x-prefix-router-slot")), prompt: tinyLlamaTokenizer().encode(renderPrompt({ messages })) };
  };

  /** Waits until the events received describe what `/slots` shows, and returns both. */
  const settled = async () => {
    let expected = new Set<string>();
    for (const start = performance.now(); performance.now() - start < 5_000; await new Promise((r) => setTimeout(r, 20))) {
      const state = await slots();
      expected = expectedPrefixes(state.map((s) => s.tokens));
      if (state.every((s) => !s.is_processing) && sameSet(held.prefixes(), expected)) return { state, expected };
    }
    expect(held.prefixes()).toEqual(expected);
    throw new Error("unreachable");
  };

  it("describe exactly the slots' tokens in 16-token blocks, request after request; a slot taken over removes the old blocks", async () => {
    const topics = ["Refunds", "Shipping", "Warranty", "Invoices", "Returns"].map((t, i) => document(`${t} ${i}`, 500 + 90 * i));
    const served: { slot: number; prompt: number[] }[] = [];
    for (const topic of topics.slice(0, 4)) {
      served.push(await ask(topic));
      const { state } = await settled();
      const mine = served.at(-1)!;
      // The slot holds the prompt as the engine's tokenizer gives it, then what it generated.
      expect(state[mine.slot]!.tokens.slice(0, mine.prompt.length)).toEqual(mine.prompt);
      expect(state[mine.slot]!.tokens.length).toBeGreaterThanOrEqual(mine.prompt.length);
    }
    expect(new Set(served.map((s) => s.slot)).size).toBe(4);
    const before = held.size;
    const oldest = (await slots())[served[0]!.slot]!.tokens;
    // A fifth prompt takes the least recently used slot, the first prompt's.
    const removedBefore = batches.flatMap((b) => b.events).filter((e) => e.type === "BlockRemoved").length;
    const fifth = await ask(topics[4]!);
    expect(fifth.slot).toBe(served[0]!.slot);
    await settled();
    const removed = batches.flatMap((b) => b.events).filter((e) => e.type === "BlockRemoved");
    expect(removed.length).toBeGreaterThan(removedBefore);
    const gone = expectedPrefixes([oldest]);
    const now = held.prefixes();
    // The chat template's first tokens make less than a block: nothing of the old prompt is held.
    for (const p of gone) expect(now.has(p)).toBe(false);
    expect(held.size).toBeLessThan(before + Math.ceil(fifth.prompt.length / 16) + 1);
    // The same prompt again reuses its slot: only the blocks past what it kept change.
    const again = await ask(topics[4]!);
    expect(again.slot).toBe(fifth.slot);
    await settled();
    for (const b of batches) {
      expect(b.ts).toBeGreaterThan(1.7e9);
      for (const e of b.events) if (e.type === "BlockStored") expect(e.blockSize).toBe(16);
    }
  });
});

function sameSet(a: Set<string>, b: Set<string>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}
