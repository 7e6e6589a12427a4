/**
 * When a llama fleet engine publishes a prompt's blocks: at admission, before evaluating it — as
 * vLLM's scheduler publishes a request's blocks when it allocates them, before the forward pass.
 * A router process that did not send the request learns where it went a prefill earlier.
 *
 * node-llama-cpp is not needed: the engine runs over sequences that record what it asks of them
 * (the real engine's events are checked against `/slots` in kv-events-engine.test.ts).
 */
import { describe, expect, it } from "vitest";
import { LlamaEngine } from "../../../../tools/fleet/llama/engine.js";
import type { KvEvent } from "../../../../tools/fleet/llama/kv-events.js";

/** A context sequence that holds tokens and evaluates by appending them (and one output token). */
class RecordingSequence {
  contextTokens: number[] = [];
  constructor(private readonly onEvaluate: (tokens: number[]) => void) {}
  get nextTokenIndex(): number {
    return this.contextTokens.length;
  }
  async eraseContextTokenRanges(ranges: { start: number; end: number }[]): Promise<void> {
    for (const { start, end } of ranges) this.contextTokens.splice(start, end - start);
  }
  async *evaluate(tokens: number[]): AsyncGenerator<number> {
    this.onEvaluate(tokens);
    this.contextTokens.push(...tokens);
    for (let i = 0; i < 2; i++) {
      this.contextTokens.push(7);
      yield 7;
    }
  }
}

function engineWith(slots: number, onEvaluate: (tokens: number[]) => void, events: KvEvent[]): LlamaEngine {
  const context = { contextSize: 4096, getSequence: () => new RecordingSequence(onEvaluate) };
  return new LlamaEngine({
    model: {} as never,
    context: context as never,
    slots,
    slotPromptSimilarity: 0.1,
    clock: { now: () => performance.now() },
    vocabularySize: 1000,
    kvEvents: { publish: (batch) => void events.push(...batch) },
  });
}

/** Tokens of stored blocks, as held: a block's tokens joined, by its chain position. */
function storedTokens(events: readonly KvEvent[]): number[] {
  return events.flatMap((e) => (e.type === "BlockStored" ? [...e.tokenIds] : []));
}

describe("a llama fleet engine's KV events", () => {
  it("publish a prompt's whole blocks when its slot is chosen, before the prompt is evaluated", async () => {
    const events: KvEvent[] = [];
    const prompt = Array.from({ length: 100 }, (_, i) => 100 + i);
    let publishedAtEvaluation: number[] = [];
    const engine = engineWith(2, () => (publishedAtEvaluation = storedTokens(events)), events);
    const result = await engine.generate(prompt, 2);
    expect(result.finishReason).toBe("length");
    // 100 tokens: 6 whole blocks of 16, all published before the evaluation started.
    expect(publishedAtEvaluation).toEqual(prompt.slice(0, 96));
    // At the end the slot holds the prompt and the 2 tokens evaluated after it: no 7th block yet.
    expect(storedTokens(events)).toEqual(prompt.slice(0, 96));
  });

  it("publish, at admission, only the new blocks of a prompt whose start the slot kept, and remove what it overwrote", async () => {
    const events: KvEvent[] = [];
    let atEvaluation: KvEvent[] = [];
    let evaluated: number[] = [];
    const engine = engineWith(
      1,
      (tokens) => {
        atEvaluation = events.slice();
        evaluated = tokens;
      },
      events,
    );
    const first = Array.from({ length: 64 }, (_, i) => i + 1);
    await engine.generate(first, 1);
    const second = [...first.slice(0, 40), ...Array.from({ length: 40 }, (_, i) => 500 + i)];
    events.length = 0;
    await engine.generate(second, 1);
    // The slot kept 40 tokens: blocks 0 and 1 stay; the first prompt's blocks 2 and 3 go, the
    // second's blocks 2 to 4 come — all before the 40 new tokens are evaluated.
    expect(evaluated).toEqual(second.slice(40));
    expect(atEvaluation.flatMap((e) => (e.type === "BlockRemoved" ? e.blockHashes : []))).toHaveLength(2);
    expect(storedTokens(atEvaluation)).toEqual(second.slice(32, 80));
  });
});
