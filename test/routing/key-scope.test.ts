import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createRouter, routingInput, type KeyScope } from "prefix-router";
import { MIN_SCOPED_LENGTH, textRouting } from "../../src/routing/routing-input.js";
import { promptUnits } from "../../src/routing/prompt-length.js";

const input = (body: unknown, keyScope?: KeyScope, prefixLength = 4096) => routingInput(body, { mode: "text", prefixLength, ...(keyScope && { keyScope }) });
const words = (seed: string, n: number) => `${seed}: `.padEnd(n, `${seed} lorem ipsum `);
const ask = (system: string, ...turns: string[]) => ({
  model: "m",
  messages: [{ role: "system", content: system }, ...turns.map((content, i) => ({ role: i % 2 === 0 ? "user" : "assistant", content }))],
});

describe("key scope — text mode", () => {
  const system = words("support policy", 1500);

  it("auto: requests sharing a short system prompt share their input; prefix: each question has its own", () => {
    expect(input(ask(system, "refunds?"))).toBe(input(ask(system, "what about shipping to Norway?")));
    expect(input(ask(system, "refunds?"))).toBe(`\u0000msystem\u0000c\u0000t${system}`);
    expect(input(ask(system, "refunds?"), "prefix")).not.toBe(input(ask(system, "what about shipping to Norway?"), "prefix"));
    expect(input(ask(words("other", 1500), "refunds?"))).not.toBe(input(ask(system, "refunds?")));
  });

  it("keeps the whole prefix when the system part is short, long, or less than half of the prompt", () => {
    // Under MIN_SCOPED_LENGTH: too little to be worth one key for everybody.
    const short = words("be nice", MIN_SCOPED_LENGTH - 100);
    expect(input(ask(short, "a?"))).not.toBe(input(ask(short, "b?")));
    // Past prefixLength: the first prefixLength characters, as before.
    const long = words("long", 6000);
    expect(input(ask(long, "a?"))).toBe(input(ask(long, "a?"), "prefix"));
    // A shared system prompt then a long document (rag): the document belongs in the key.
    const doc = words("document 7", 6000);
    expect(input(ask(system, `${doc} a?`))).toBe(input(ask(system, `${doc} a?`), "prefix"));
  });

  it("multi-turn: a conversation's later turns keep their own prefix (it moves once, after its first turn)", () => {
    const early = ask(system, "hi", "hello, how can I help?", "refunds?");
    expect(input(early)).toBe(input(early, "prefix"));
    expect(input(ask(system, "hi"))).toBe(input(ask(system, "other")));
  });

  it("the leading part includes tools, instructions and every leading system or developer message", () => {
    const tools = [{ type: "function", function: { name: "f", description: words("tool", 300) } }];
    const body = (q: string) => ({ model: "m", tools, messages: [{ role: "system", content: system }, { role: "developer", content: "be brief" }, { role: "user", content: q }] });
    expect(input(body("a?"))).toBe(input(body("b?")));
    expect(input(body("a?")).endsWith("\u0000mdeveloper\u0000c\u0000tbe brief")).toBe(true);
    expect(input(body("a?")).startsWith("\u0000T")).toBe(true);
    // No system message: no scope, whatever the tools.
    const noSystem = (q: string) => ({ model: "m", tools, messages: [{ role: "user", content: words("x", 1400) + q }] });
    expect(input(noSystem("a?"))).not.toBe(input(noSystem("b?")));
  });

  it("Responses API: instructions and leading system items", () => {
    const r = (q: unknown) => ({ model: "m", instructions: system, input: q });
    expect(input(r("a?"))).toBe(input(r([{ role: "user", content: "b?" }])));
    expect(input(r("a?"))).toBe(`\u0000S${system}`);
  });

  it("hostile bodies: odd messages, roles and contents neither throw nor scope where they should not", () => {
    const odd = [null, 7, "text", [], { role: 5 }, { role: "system" }, { role: "system", content: null }, { content: "x" }];
    for (const m of odd) {
      const body = { model: "m", messages: [{ role: "system", content: system }, m, { role: "user", content: "q" }] };
      expect(() => input(body)).not.toThrow();
      expect(input(body, "prefix").startsWith(input(body))).toBe(true);
    }
    // U+0000 in the system prompt is escaped (doubled) in the input and counted so in the prompt's length.
    const nul = `${system}\u0000`;
    expect(input(ask(nul, "a?"))).toBe(input(ask(nul, "b?")));
    expect(promptUnits(ask(nul, "a?"))).toBe(input(ask(nul, "a?"), "prefix").length);
    // A part nested 5,000 levels deep past the prefix (canonical JSON reads 1,024) makes the length unknown: no scope, no throw.
    let deep: unknown = 1;
    for (let i = 0; i < 5000; i++) deep = [deep];
    const deepBody = (q: string) => ({
      model: "m",
      messages: [{ role: "system", content: system }, { role: "user", content: q }, { role: "assistant", content: words("a", 9000) }, { role: "tool", content: [deep] }],
    });
    expect(() => input(deepBody("a?"))).not.toThrow();
    expect(textRouting(deepBody("a?"), 4096, "auto").units).toBeUndefined();
    // A 4 MB question: counted, not copied; the system prompt stays most of nothing.
    const huge = ask(system, "q".repeat(4_000_000));
    expect(input(huge)).toBe(input(huge, "prefix"));
  });

  it("never cuts a surrogate pair and always gives a prefix of the prefix-scope input (property)", () => {
    const text = fc.string({ unit: "binary", maxLength: 2000 });
    const message = fc.record({ role: fc.constantFrom("system", "developer", "user", "assistant", "tool"), content: text });
    fc.assert(
      fc.property(fc.array(message, { maxLength: 6 }), fc.integer({ min: 1024, max: 5000 }), (messages, prefixLength) => {
        const body = { model: "m", messages };
        const auto = input(body, "auto", prefixLength);
        const prefix = input(body, "prefix", prefixLength);
        expect(prefix.startsWith(auto)).toBe(true);
        if (auto !== prefix) {
          expect(auto.length).toBeGreaterThanOrEqual(MIN_SCOPED_LENGTH);
          expect(2 * auto.length).toBeGreaterThanOrEqual(promptUnits(body) as number);
          expect(/[\uD800-\uDBFF]$/.test(auto)).toBe(false);
        }
      }),
    );
  });
});

describe("key scope — the router", () => {
  it("sends requests sharing a short system prompt to the same target by default", async () => {
    const targets = ["a", "b", "c", "d"].map((id) => ({ id }));
    const auto = await createRouter({ targets });
    const prefix = await createRouter({ targets, keyScope: "prefix" });
    const system = words("assistant of ACME", 1500);
    const firstOf = (router: typeof auto, q: string) => router.rank({ body: ask(system, q) }).targets[0]!.id;
    const questions = Array.from({ length: 24 }, (_, i) => `question ${i}?`);
    expect(new Set(questions.map((q) => firstOf(auto, q))).size).toBe(1);
    expect(new Set(questions.map((q) => firstOf(prefix, q))).size).toBeGreaterThan(1);
    // The key's prefix is what a lease predicts once warm.
    expect(auto.route({ body: ask(system, "x") }).key).toBe(auto.route({ body: ask(system, "y") }).key);
  });

  it("rejects a bad keyScope or prefixAware option with typed errors naming them", async () => {
    const targets = [{ id: "a" }];
    await expect(createRouter({ targets, keyScope: "system" as KeyScope })).rejects.toThrow(new RangeError('Expected `keyScope` to be one of "auto", "prefix", got "system"'));
    await expect(createRouter({ targets, keyScope: 1 as unknown as KeyScope })).rejects.toThrow(TypeError);
    await expect(createRouter({ targets, prefixAware: null as never })).rejects.toThrow(new TypeError("Expected `prefixAware` to be an object, got null"));
    await expect(createRouter({ targets, prefixAware: { spreadRunningKeys: "yes" as never } })).rejects.toThrow(/`prefixAware.spreadRunningKeys` to be a boolean or "auto", got "yes"/);
  });
});
