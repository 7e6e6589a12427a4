import { describe, expect, it } from "vitest";
import { createRouter } from "prefix-router";
import type { PrecisePrefix } from "../../src/strategies/precise-prefix/strategy.js";
import { setup as sharedSetup, stored } from "./precise-support.js";

const B = 4;
/** A toy engine: the prompt is the messages' contents joined; one token per character. */
const render = (body: unknown): string | undefined => {
  const m = (body as { messages?: { content: string }[] }).messages;
  return Array.isArray(m) ? m.map((x) => x.content).join("\n") : undefined;
};
const encode = (text: string): number[] => Array.from(text, (c) => c.charCodeAt(0));
const DOC = "A shared document that several requests start with. ".repeat(3);
const body = (q: string) => ({ model: "m", messages: [{ content: DOC }, { content: q }] });

/** A router with the tokenizer, every engine in sync (precise-support.ts), and no model: a request's `model` is not a LoRA. */
const setup = (tokenizer: unknown) => sharedSetup({}, { tokenizer, model: undefined });

describe("precise-prefix with your own tokenizer ({ render, encode })", () => {
  it("is ready at construction and tokenizes in the read: a cold prompt routes precisely without yielding", async () => {
    let ready: string | undefined;
    const router = await createRouter({
      targets: [{ id: "a" }],
      strategy: (env) => {
        const s = env.create("precise-prefix") as unknown as PrecisePrefix;
        ready = s.state; // synchronously after construction
        return s as never;
      },
      precisePrefix: { tokenizer: { render, encode }, blockSize: B },
    });
    expect(ready).toBe("ready");
    router.route({ body: body("x") }).release("success");
  });

  it("sends a cold request to the engine holding its longest run and predicts it exactly", async () => {
    const { router, strategy, apply } = await setup({ render, encode });
    const b = body("Which engine?");
    const tokens = encode(render(b) as string);
    apply("b", stored(tokens, 20));
    apply("c", stored(tokens, 6));
    const lease = router.route({ body: b }, { explain: true });
    expect(lease.target.id).toBe("b");
    expect(lease.reason).toMatchObject({ matchedBlocks: 20, matchedBy: "events", predictedCachedTokens: 20 * B, blocks: Math.floor(tokens.length / B) + (tokens.length % B === 0 ? 0 : 1) });
    lease.release("success", { promptTokens: tokens.length, cachedTokens: 20 * B });
    const stats = router.stats().precise;
    expect(stats).toMatchObject({ state: "ready", routed: { precise: 1, approximate: 0 }, predictions: { tested: 1, within10Percent: 1 } });
    expect(stats?.tokenizer).toMatchObject({ tokenized: 1, misses: 1, hits: 0, complete: 1, partial: 0 });
    // The same prompt again: from the cache, not encoded again.
    router.route({ body: b }).release("success");
    expect(strategy.tokens?.stats()).toMatchObject({ tokenized: 1, hits: 1 });
  });

  it("a body render cannot read, a throwing encode and an id out of range route approximately", async () => {
    const { router, warnings } = await setup({ render, encode: (t: string) => (t.includes("boom") ? [1, -1] : t.includes("throw") ? (() => { throw new Error("nope"); })() : encode(t)) });
    for (const b of [{ prompt: "no messages" }, body("boom"), body("throw")]) {
      const lease = router.route({ body: b }, { explain: true });
      expect(lease.reason?.matchedBy).toBeUndefined();
      lease.release("success");
    }
    expect(router.stats().precise?.routed).toEqual({ precise: 0, approximate: 3 });
    expect(router.stats().precise?.tokenizer).toMatchObject({ unreadable: 1, failures: 2 });
    expect(warnings.join("\n")).toMatch(/not an integer from 0 to 2\^32 − 1/);
  });

  it("keeps methods of a class instance bound", async () => {
    class Tok {
      readonly sep = "\n";
      render(b: unknown) {
        const m = (b as { messages: { content: string }[] }).messages;
        return m.map((x) => x.content).join(this.sep);
      }
      encode(t: string) {
        return encode(t);
      }
    }
    const { router, apply } = await setup(new Tok());
    const b = body("bound?");
    apply("c", stored(encode(render(b) as string), 10));
    expect(router.route({ body: b }).target.id).toBe("c");
  });

  it("validates render and encode", async () => {
    await expect(createRouter({ targets: [{ id: "a" }], precisePrefix: { tokenizer: { render, encode: 1 } as never } })).rejects.toThrow("Expected `precisePrefix.tokenizer.encode` to be a function, got 1");
    await expect(createRouter({ targets: [{ id: "a" }], precisePrefix: { tokenizer: { encode } as never } })).rejects.toThrow(/`precisePrefix.tokenizer.render` to be a function, got undefined/);
  });
});
