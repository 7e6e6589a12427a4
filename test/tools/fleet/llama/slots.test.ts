/**
 * llama-server's slot selection and waiting queue (slots.ts), without llama.cpp: table-driven
 * choices, the laws every choice obeys, and the FIFO queue.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DEFAULT_SLOT_PROMPT_SIMILARITY, SlotScheduler, chooseSlot, commonPrefixLength, type SlotChoice, type SlotView } from "../../../../tools/fleet/llama/slots.js";

const toks = (s: string): number[] => [...s].map((c) => c.charCodeAt(0));
const idle = (text: string, lastUsed: number): SlotView => ({ tokens: toks(text), busy: false, lastUsed });
const busy = (text: string, lastUsed: number): SlotView => ({ tokens: toks(text), busy: true, lastUsed });

describe("commonPrefixLength", () => {
  it("counts the equal leading tokens", () => {
    expect(commonPrefixLength([1, 2, 3], [1, 2, 4])).toBe(2);
    expect(commonPrefixLength([1, 2], [1, 2, 3])).toBe(2);
    expect(commonPrefixLength([], [1])).toBe(0);
    expect(commonPrefixLength([5], [6])).toBe(0);
  });
});

describe("chooseSlot", () => {
  const cases: { name: string; slots: SlotView[]; prompt: string; similarity?: number; want: Partial<SlotChoice> | undefined }[] = [
    {
      name: "the idle slot sharing the largest part of the prompt",
      slots: [idle("abcdXXXX", 0), idle("abcdefXX", 1), idle("", -1)],
      prompt: "abcdefgh",
      want: { slot: 1, by: "similarity", commonPrefix: 6, reused: 6 },
    },
    {
      name: "ties in similarity go to the lowest slot",
      slots: [idle("abcdefQQ", 3), idle("abcdefRR", 1)],
      prompt: "abcdefgh",
      want: { slot: 0, by: "similarity" },
    },
    {
      name: "a busy slot is never shared: the same prompt starts cold elsewhere",
      slots: [busy("abcdefgh", 0), idle("zzzzzzzz", 2), idle("yyyyyyyy", 1)],
      prompt: "abcdefgh",
      want: { slot: 2, by: "lru", commonPrefix: 0, reused: 0 },
    },
    {
      name: "a shared fraction at or below the threshold falls back to the least recently used slot",
      slots: [idle("aXXXXXXXXX", 5), idle("bbbbbbbbbb", 4)],
      prompt: "aYYYYYYYYY",
      similarity: 0.1,
      want: { slot: 1, by: "lru", commonPrefix: 0 },
    },
    {
      name: "the LRU slot still reuses what it shares below the threshold",
      slots: [idle("aXXXXXXXXXX", 0), idle("bbbbbbbbbbb", 4)],
      prompt: "aYYYYYYYYYY",
      want: { slot: 0, by: "lru", commonPrefix: 1, reused: 1 },
    },
    {
      name: "never-used slots come first, the highest of them (llama-server's <=)",
      slots: [idle("", -1), idle("", -1), idle("qqqq", 0)],
      prompt: "abcd",
      want: { slot: 1, by: "lru" },
    },
    {
      name: "a whole-prompt match still evaluates its last token",
      slots: [idle("abcdefgh", 0)],
      prompt: "abcdefgh",
      want: { slot: 0, by: "similarity", commonPrefix: 8, reused: 7 },
    },
    {
      name: "a slot holding the prompt and more (a previous answer) reuses the whole prompt but one",
      slots: [idle("abcdefgh12345", 0)],
      prompt: "abcdefgh",
      want: { slot: 0, commonPrefix: 8, reused: 7 },
    },
    {
      name: "similarity 0: least recently used only",
      slots: [idle("abcdefgh", 9), idle("zzzz", 2)],
      prompt: "abcdefgh",
      similarity: 0,
      want: { slot: 1, by: "lru", commonPrefix: 0 },
    },
    {
      name: "every slot busy: none",
      slots: [busy("a", 0), busy("b", 1)],
      prompt: "a",
      want: undefined,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const got = chooseSlot(c.slots, toks(c.prompt), c.similarity ?? DEFAULT_SLOT_PROMPT_SIMILARITY);
      if (c.want === undefined) expect(got).toBeUndefined();
      else expect(got).toMatchObject(c.want);
    });
  }

  const slotArb = fc.record({
    tokens: fc.array(fc.integer({ min: 0, max: 2 }), { maxLength: 12 }),
    busy: fc.boolean(),
    lastUsed: fc.integer({ min: -1, max: 20 }),
  });

  it("picks an idle slot whenever one exists, by llama-server's two rules", () => {
    fc.assert(
      fc.property(
        fc.array(slotArb, { minLength: 1, maxLength: 6 }),
        fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 1, maxLength: 12 }),
        fc.constantFrom(0, 0.1, 0.5, 0.9),
        (slots, prompt, similarity) => {
          const got = chooseSlot(slots, prompt, similarity);
          const idleSlots = slots.map((s, i) => ({ ...s, i })).filter((s) => !s.busy);
          if (idleSlots.length === 0) {
            expect(got).toBeUndefined();
            return;
          }
          expect(got).toBeDefined();
          const c = got!;
          expect(slots[c.slot]!.busy).toBe(false);
          expect(c.commonPrefix).toBe(commonPrefixLength(slots[c.slot]!.tokens, prompt));
          expect(c.reused).toBe(Math.min(c.commonPrefix, prompt.length - 1));
          const sim = (s: { tokens: number[] }): number => (s.tokens.length === 0 ? 0 : commonPrefixLength(s.tokens, prompt) / prompt.length);
          const best = Math.max(...idleSlots.map(sim));
          if (similarity > 0 && best > similarity) {
            expect(c.by).toBe("similarity");
            expect(sim(slots[c.slot]!)).toBe(best);
          } else {
            expect(c.by).toBe("lru");
            expect(slots[c.slot]!.lastUsed).toBe(Math.min(...idleSlots.map((s) => s.lastUsed)));
          }
        },
      ),
    );
  });
});

describe("SlotScheduler", () => {
  it("grants idle slots at once and queues the rest in arrival order", () => {
    const s = new SlotScheduler(2);
    const granted: string[] = [];
    const ask = (name: string, prompt: string) => s.request(toks(prompt), (c) => granted.push(`${name}@${c.slot}`));
    ask("a", "aaaa");
    ask("b", "bbbb");
    ask("c", "cccc");
    const d = ask("d", "dddd");
    ask("e", "eeee");
    expect(granted).toEqual(["a@1", "b@0"]);
    expect([s.running, s.waiting]).toEqual([2, 3]);
    // A client gone while waiting leaves the queue; one already served cannot.
    expect(d.cancel()).toBe(true);
    expect(d.cancel()).toBe(false);
    expect(s.waiting).toBe(2);
    s.release(0, toks("bbbbXY"));
    expect(granted).toEqual(["a@1", "b@0", "c@0"]);
    s.release(1, toks("aaaaZ"));
    s.release(0, toks("cccc"));
    expect(granted).toEqual(["a@1", "b@0", "c@0", "e@1"]);
    expect([s.running, s.waiting]).toEqual([1, 0]);
    expect(() => s.release(0, [])).toThrow("Slot 0 is not busy");
  });

  it("keeps what a slot held for the next request, and serves a repeat from it", () => {
    const s = new SlotScheduler(2);
    const choices: SlotChoice[] = [];
    s.request(toks("system prompt: one"), (c) => choices.push(c));
    s.release(choices[0]!.slot, toks("system prompt: one -> answer"));
    s.request(toks("system prompt: two"), (c) => choices.push(c));
    expect(choices[1]).toMatchObject({ slot: choices[0]!.slot, by: "similarity", reused: "system prompt: ".length });
    expect(s.heldTokens).toBe("system prompt: one -> answer".length);
  });

  it("serves the head of the queue first even when a later request would fit the freed slot better", () => {
    const s = new SlotScheduler(1);
    const order: string[] = [];
    s.request(toks("xxxx"), () => order.push("first"));
    s.request(toks("yyyy"), () => order.push("second"));
    s.request(toks("xxxx"), () => order.push("third"));
    s.release(0, toks("xxxx"));
    expect(order).toEqual(["first", "second"]);
  });

  it("rejects a slot count or threshold out of range, naming the option", () => {
    expect(() => new SlotScheduler(0)).toThrow("Expected `slots` to be an integer ≥ 1, got 0");
    expect(() => new SlotScheduler(2, 1)).toThrow("Expected `slotPromptSimilarity` to be a number from 0 (inclusive) to 1 (exclusive), got 1");
    expect(() => new SlotScheduler(2, Number.NaN)).toThrow(RangeError);
  });
});
