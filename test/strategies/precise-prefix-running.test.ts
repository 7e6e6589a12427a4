/**
 * `precise-prefix` on engines whose cache is private to a running request (llama.cpp's slots),
 * and waiting for a cold prompt's tokens (`router.settle`, `tokenizeWaitMs`).
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { createRouter } from "prefix-router";
import { withAttempts } from "../../src/adapter/attempts.js";
import type { PrecisePrefix } from "../../src/strategies/precise-prefix/strategy.js";
import { B, DOC, conversation, setup, stored, tokensOf } from "./precise-support.js";

/** A session whose system prompt is long enough for the closed loop to judge its answers (≥ 256 tokens predicted). */
const longConversation = (question: string) => ({ model: "m", messages: [{ role: "system", content: DOC.repeat(4) }, { role: "user", content: question }] });

/**
 * Engine b holds the prompt of session "One?" (its slot's blocks), and `ask` routes a session's
 * question. The first request, "One?", runs in that slot: other questions share its system prompt.
 */
async function heldByB(extra: Record<string, unknown> = {}) {
  // Shares never bind here: what is tested is the running prefix alone.
  const s = await setup({ longestPrefix: { loadFactor: 100 } }, extra);
  const body = longConversation("One?");
  await s.strategy.tokens?.tokenize(body);
  const n = Math.floor(tokensOf(body).length / B);
  s.apply("b", stored(tokensOf(body), n));
  const ask = async (question: string) => {
    const b = longConversation(question);
    await s.strategy.tokens?.tokenize(b);
    return s.router.route({ body: b }, { explain: true });
  };
  return { ...s, ask, held: n };
}

describe("precise-prefix: a prefix running on a private cache", () => {
  it('"auto": sends a second request to the engine running its prefix until the answers say that engine starts such requests cold, then sends it elsewhere', async () => {
    const { router, ask } = await heldByB();
    const first = await ask("One?");
    expect(first.target.id).toBe("b");
    // No evidence yet: b may share a running request's blocks (vLLM does).
    // Questions that differ from their first token: each matches only the system prompt.
    for (const question of ["Why?", "How much?"]) {
      const concurrent = await ask(question);
      expect(concurrent.target.id).toBe("b");
      // b answers from a cold cache: a llama.cpp slot is private to its request.
      concurrent.release("success", { promptTokens: 400, cachedTokens: 0 });
    }
    const spread = await ask("Spread?");
    expect(spread.target.id).not.toBe("b");
    expect(spread.reason).toMatchObject({ preferred: "b", passedOver: "load" });
    // The prediction is where it went: there, nothing of the prompt is held.
    expect(spread.reason?.matchedBlocks).toBeLessThan(3);
    spread.release("success");
    expect(router.stats().precise?.spreadRunning).toBe(1);
    first.release("success");
  });

  it('"auto" never spreads on engines that answer such requests warm (vLLM and SGLang share running blocks)', async () => {
    const { ask, held } = await heldByB();
    const first = await ask("One?");
    for (let k = 0; k < 5; k++) {
      const concurrent = await ask(`Shared ${k}?`);
      expect(concurrent.target.id).toBe("b");
      concurrent.release("success", { promptTokens: 400, cachedTokens: held * B });
    }
    first.release("success");
  });

  it("true spreads from the first concurrent request; false never", async () => {
    const always = await heldByB({ spreadRunningPrefixes: true });
    const a1 = await always.ask("One?");
    const a2 = await always.ask("Two?");
    expect([a1.target.id, a2.target.id]).toEqual(["b", expect.not.stringMatching(/^b$/)]);
    a1.release("success");
    a2.release("success");
    const never = await heldByB({ spreadRunningPrefixes: false });
    const n1 = await never.ask("One?");
    const n2 = await never.ask("Two?");
    expect([n1.target.id, n2.target.id]).toEqual(["b", "b"]);
    n2.release("success", { promptTokens: 400, cachedTokens: 0 });
    const n3 = await never.ask("Three?");
    expect(n3.target.id).toBe("b");
    n1.release("success");
    n3.release("success");
  });

  it("a failed request stops running: its blocks free the engine for the next", async () => {
    const { ask } = await heldByB({ spreadRunningPrefixes: true });
    const first = await ask("One?");
    first.release("connect-error");
    const next = await ask("Next?");
    expect(next.target.id).toBe("b");
    next.release("success");
  });
});

describe("precise-prefix: waiting for a cold prompt's tokens", () => {
  it("router.settle waits for a prompt this process has not tokenized, then it routes on the events", async () => {
    const { router, apply } = await setup();
    const body = conversation("A cold question?");
    const n = Math.floor(tokensOf(body).length / B);
    apply("c", stored(tokensOf(body), n));
    const prepared = router.prepare({ body });
    const waiting = router.settle(prepared);
    expect(waiting).toBeInstanceOf(Promise);
    await waiting;
    const lease = router.route(prepared, { explain: true });
    expect(lease.target.id).toBe("c");
    expect(lease.reason).toMatchObject({ matchedBy: "events", matchedBlocks: n });
    lease.release("success");
    // Tokenized now: nothing to wait for.
    expect(router.settle(router.prepare({ body }))).toBeUndefined();
  });

  it("does not wait for a next turn's new message when its earlier turns are known, nor with tokenizeWaitMs 0", async () => {
    const { router, strategy } = await setup();
    const turn1 = conversation("First?");
    await strategy.tokens?.tokenize(turn1);
    const turn2 = { model: "m", messages: [...turn1.messages, { role: "assistant", content: "An answer." }, { role: "user", content: "And then?" }] };
    expect(router.settle(router.prepare({ body: turn2 }))).toBeUndefined();
    const off = await setup({}, { tokenizeWaitMs: 0 });
    expect(off.router.settle(off.router.prepare({ body: conversation("Cold?") }))).toBeUndefined();
  });

  it("waits at most tokenizeWaitMs for a tokenizer that does not answer", async () => {
    const sockets = new Set<import("node:net").Socket>();
    // Answers /tokenize (a token per character) until `hang`, then never.
    let hang = false;
    const server = createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        if (hang) return;
        const b = JSON.parse(body) as { prompt?: string; messages?: { content: string }[] };
        const text = b.prompt ?? (b.messages ?? []).map((m) => m.content).join("");
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ tokens: Array.from(text, (c) => c.charCodeAt(0)) }));
      });
    });
    server.on("connection", (s) => sockets.add(s));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      let strategy: PrecisePrefix | undefined;
      const router = await createRouter({
        targets: [{ id: "a" }, { id: "b" }],
        strategy: (env) => (strategy = env.create("precise-prefix") as unknown as PrecisePrefix) as never,
        precisePrefix: { tokenizer: { endpoint, chatTemplate: "{% for m in messages %}{{ m.content }}{% endfor %}" }, tokenizeWaitMs: 30, tokenizeTimeoutMs: 60_000, feed: { inSync: () => true } },
        logger: { debug() {}, info() {}, warn() {}, error() {} },
      });
      await strategy?.ready;
      expect(strategy?.state).toBe("ready");
      hang = true;
      const started = performance.now();
      const waiting = router.settle(router.prepare({ body: conversation("Nobody tokenizes this?") }));
      expect(waiting).toBeInstanceOf(Promise);
      await waiting;
      // Resolved by its timer, not by the tokenizer (which would take the whole tokenizeTimeoutMs).
      expect(performance.now() - started).toBeLessThan(30_000);
      router.route({ body: conversation("Nobody tokenizes this?") }).release("success");
      await router.close();
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    }
  });

  it("the adapters wait before the first attempt: a cold prompt's first route is precise", async () => {
    const { router, apply } = await setup();
    const body = conversation("Through an adapter?");
    apply("b", stored(tokensOf(body), 25));
    const seen = await withAttempts(
      router,
      { request: { body }, maxAttempts: 1, facts: { operation: "chat", provider: "openai", model: "m", streaming: false }, explain: true },
      async (lease) => {
        lease.release("success");
        return { target: lease.target.id, matchedBy: lease.reason?.matchedBy };
      },
      () => ({ retry: false, outcome: "server-error" }),
    );
    expect(seen).toEqual({ target: "b", matchedBy: "events" });
  });

  it("a request that does not wait is read once: its route takes what settle read", async () => {
    const { router, strategy } = await setup();
    const body = conversation("Read once?");
    await strategy.tokens?.tokenize(body);
    const before = router.stats().precise?.tokenizer?.complete ?? 0;
    const prepared = router.prepare({ body });
    expect(router.settle(prepared)).toBeUndefined();
    router.route(prepared).release("success");
    expect(router.stats().precise?.tokenizer?.complete).toBe(before + 1);
  });
});

