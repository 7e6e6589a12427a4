import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { createRouter } from "prefix-router";
import { B, FILES, conversation, setup, stored, tokensOf } from "./precise-support.js";

describe("precise-prefix", () => {
  it("sends a request to the engine holding its longest run, and predicts run × blockSize tokens", async () => {
    const { router, strategy, apply } = await setup();
    const body = conversation("Which engine holds it?");
    const tokens = tokensOf(body);
    apply("b", stored(tokens, 20));
    apply("c", stored(tokens, 8, 1n));
    await strategy.tokens?.tokenize(body);
    const lease = router.route({ body }, { explain: true });
    expect(lease.target.id).toBe("b");
    expect(lease.kind).toBe("preferred");
    expect(lease.reason).toMatchObject({ matchedBlocks: 20, longestMatchBlocks: 20, blocks: Math.floor(tokens.length / B) + 1, matchedBy: "events", predictedCachedTokens: 20 * B });
    lease.release("success", { promptTokens: tokens.length, cachedTokens: 20 * B });
    const stats = router.stats().precise;
    expect(stats).toMatchObject({ state: "ready", routed: { precise: 1, approximate: 0 }, predictions: { tested: 1, within10Percent: 1 }, feed: { eventsPerSecond: 0 } });
    expect(stats?.index.held).toBe(28);
  });

  it("routes a cold prompt on longest-prefix while it is tokenized off the decision, then precisely", async () => {
    const { router, strategy, apply } = await setup();
    const body = conversation("A cold question?");
    apply("c", stored(tokensOf(body), 30));
    const cold = router.route({ body }, { explain: true });
    expect(cold.reason?.matchedBy).toBeUndefined();
    cold.release("success");
    await strategy.tokens?.settled();
    const warm = router.route({ body }, { explain: true });
    expect(warm.target.id).toBe("c");
    expect(warm.reason?.matchedBy).toBe("events");
    warm.release("success");
    expect(router.stats().precise?.routed).toEqual({ precise: 1, approximate: 1 });
  });

  it("a follow-up turn routes on its earlier turns' tokens before its new message is tokenized", async () => {
    const { router, strategy, apply } = await setup();
    const turn1 = conversation("First question?");
    await strategy.tokens?.tokenize(turn1);
    apply("a", stored(tokensOf(turn1), Math.floor(tokensOf(turn1).length / B)));
    const turn2 = { model: "m", messages: [...turn1.messages, { role: "assistant", content: "An answer." }, { role: "user", content: "And then?" }] };
    const lease = router.route({ body: turn2 }, { explain: true });
    expect(lease.target.id).toBe("a");
    expect(lease.reason?.matchedBy).toBe("events");
    expect(lease.reason?.matchedBlocks).toBeGreaterThan(20);
    lease.release("success");
  });

  it("a follow-up turn skips the blocks its engine held at the last turn only while the engine lost nothing", async () => {
    const { router, strategy, apply, sink } = await setup();
    const turn1 = conversation("Turn one?");
    await strategy.tokens?.tokenize(turn1);
    const n = Math.floor(tokensOf(turn1).length / B);
    apply("b", stored(tokensOf(turn1), n));
    router.route({ body: turn1 }).release("success");
    const turn2 = { model: "m", messages: [...turn1.messages, { role: "assistant", content: "Yes." }, { role: "user", content: "Turn two?" }] };
    await strategy.tokens?.tokenize(turn2);
    const a = router.route({ body: turn2 }, { explain: true });
    expect(a.reason?.matchedBlocks).toBe(n);
    a.release("success");
    // b evicts block 7: the next decision must see it, not the remembered run.
    sink.apply("b", { ts: 0, dataParallelRank: undefined, events: [{ type: "BlockRemoved", blockHashes: [8n], medium: undefined }] });
    const turn3 = { model: "m", messages: [...turn2.messages, { role: "assistant", content: "Sure." }, { role: "user", content: "Turn three?" }] };
    const c = router.route({ body: turn3 }, { explain: true });
    expect(c.reason).toMatchObject({ matchedBlocks: 7, longestMatchBlocks: 7 });
    c.release("success");
  });

  it("an engine whose feed is not in sync is matched on what this router sent it, not on its events", async () => {
    const { router, strategy, apply, synced } = await setup();
    const body = conversation("Out of sync?");
    const tokens = tokensOf(body);
    await strategy.tokens?.tokenize(body);
    apply("b", stored(tokens, 25));
    synced.clear(); // b's events (and everyone's) no longer count
    const lease = router.route({ body }, { explain: true });
    expect(lease.reason?.longestMatchBlocks).toBe(0);
    lease.release("success");
    // What this router sent an out-of-sync engine counts for it (the approximate index).
    const again = router.route({ body }, { explain: true });
    expect(again.target.id).toBe(lease.target.id);
    expect(again.reason).toMatchObject({ matchedBy: "approximate", matchedBlocks: Math.floor(tokens.length / B) });
    again.release("success");
  });

  it("its own decisions count as pending on their engine until they expire", async () => {
    const { router, strategy, clock } = await setup();
    const first = conversation("Pending one?");
    await strategy.tokens?.tokenize(first);
    const lease = router.route({ body: first }, { explain: true });
    expect(lease.reason?.matchedBlocks).toBe(0);
    lease.release("success");
    const second = router.route({ body: first }, { explain: true });
    expect(second.target.id).toBe(lease.target.id);
    expect(second.reason).toMatchObject({ matchedBy: "events", matchedBlocks: Math.floor(tokensOf(first).length / B) });
    second.release("success");
    expect(router.stats().precise?.index.pending).toBeGreaterThan(0);
    clock.t += 5001;
    const third = router.route({ body: first }, { explain: true });
    expect(third.reason?.longestMatchBlocks).toBe(0);
    third.release("success");
  });

  it("keeps the spill bounds: a full holder spills", async () => {
    const { router, strategy, apply } = await setup({ concurrencyThreshold: 1 });
    const body = conversation("Full holder?");
    await strategy.tokens?.tokenize(body);
    apply("b", stored(tokensOf(body), 20));
    const held = router.route({ body });
    expect(held.target.id).toBe("b");
    const next = router.route({ body }, { explain: true });
    expect(next.target.id).not.toBe("b");
    expect(next.kind).toBe("spillover");
    held.release("success");
    next.release("success");
  });

  it("clears an engine on the feed's clear: its blocks stop matching", async () => {
    const { router, strategy, apply, sink } = await setup();
    const body = conversation("Cleared?");
    await strategy.tokens?.tokenize(body);
    apply("b", stored(tokensOf(body), 20));
    sink.clear("b");
    const lease = router.route({ body }, { explain: true });
    expect(lease.reason?.longestMatchBlocks).toBe(0);
    lease.release("success");
  });

  it("without a tokenizer every request routes on longest-prefix, with a warning", async () => {
    const { router, warnings, strategy } = await setup({}, { tokenizer: undefined });
    expect(strategy.state).toBe("off");
    expect(warnings.join("\n")).toMatch(/no `precisePrefix.tokenizer`/);
    router.route({ body: conversation("x") }).release("success");
    expect(router.stats().precise?.routed).toEqual({ precise: 0, approximate: 1 });
  });

  describe("the start-up check against the engine's /tokenize", () => {
    const server = createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        const b = JSON.parse(body) as { messages: { role: string; content: string }[] };
        const tokens = tokensOf(b).map((t) => t + 1); // another tokenizer
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ count: tokens.length, max_model_len: 4096, tokens }));
      });
    });
    const url = new Promise<string>((resolve) => server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
    afterAll(() => new Promise<void>((r) => server.close(() => r())));

    it("a mismatch is a clear warning and the approximate strategy, never silent zero hits", async () => {
      const { router, strategy, warnings } = await setup({}, { checkUrl: await url });
      expect(strategy.state).toBe("mismatch");
      expect(warnings.join("\n")).toMatch(/does not match the engine's.*first difference at token 0.*approximate strategy/s);
      const body = conversation("y");
      await strategy.tokens?.tokenize(body);
      router.route({ body }).release("success");
      expect(router.stats().precise?.routed.approximate).toBe(1);
    });
  });

  it("a run shorter than an eighth of the request ranks as none: the prompt goes to its own home, whichever engine holds the run", async () => {
    const body = conversation("Where is this document computed?");
    const tokens = tokensOf(body);
    const blocks = Math.floor(tokens.length / B) + 1;
    const negligible = Math.ceil(blocks / 8);
    expect(negligible).toBeGreaterThanOrEqual(3);
    // Every engine holds the first block (the template's start); one also holds a few more by chance.
    const route = async (holder: string, run: number) => {
      const { router, strategy, apply } = await setup();
      await strategy.tokens?.tokenize(body);
      for (const e of ["a", "b", "c"]) apply(e, stored(tokens, e === holder ? run : 1, BigInt(e.charCodeAt(0))));
      const lease = router.route({ body }, { explain: true });
      lease.release("success");
      return { target: lease.target.id, reason: lease.reason };
    };
    const homes = await Promise.all(["a", "b", "c"].map((holder) => route(holder, negligible - 1)));
    expect(new Set(homes.map((h) => h.target)).size).toBe(1);
    // What the chosen engine holds is still what it predicts.
    for (const [k, h] of homes.entries()) expect(h.reason).toMatchObject({ matchedBlocks: h.target === ["a", "b", "c"][k] ? negligible - 1 : 1, longestMatchBlocks: negligible - 1, matchedBy: "events" });
    // An eighth of it is a run that counts: it goes to its holder.
    for (const holder of ["a", "b", "c"]) expect((await route(holder, negligible)).target).toBe(holder);
  });

  it("an engine below its share takes a common start first on evidence, not on a process's first picks", async () => {
    const { router, strategy, apply } = await setup();
    const bodies = Array.from({ length: 30 }, (_, k) => conversation(`Question number ${k}?`));
    for (const body of bodies) await strategy.tokens?.tokenize(body);
    const [t0, t1] = [tokensOf(bodies[0]!), tokensOf(bodies[1]!)];
    let same = 0;
    while (t0[same] === t1[same]) same++;
    const start = Math.floor(same / B);
    expect(start).toBeGreaterThan(Math.floor(t0.length / B) / 2);
    // a and b hold the shared start, most of each request; c holds none of it and has had none of this process's picks.
    apply("a", stored(t0, start, 1n));
    apply("b", stored(t0, start, 2n));
    const targets: string[] = [];
    for (const body of bodies) {
      const lease = router.route({ body });
      targets.push(lease.target.id);
      lease.release("success");
      if (lease.target.id === "c") break;
    }
    // One pick is no evidence that c is starved (another process may be sending it plenty)…
    expect(["a", "b"]).toContain(targets[0]);
    // …a few dozen are: an engine just added still takes its share.
    expect(targets).toContain("c");
  });

  it("validates its options with messages naming the option, range and value", async () => {
    await expect(createRouter({ targets: [{ id: "a" }], precisePrefix: { blockSize: 0 } })).rejects.toThrow("Expected `precisePrefix.blockSize` to be an integer from 1 to 1024, got 0");
    await expect(createRouter({ targets: [{ id: "a" }], precisePrefix: { feed: {} as never } })).rejects.toThrow(/`precisePrefix.feed` to be an object with an inSync/);
    await expect(createRouter({ targets: [{ id: "a" }], precisePrefix: { tokenizer: { endpoint: "ftp://x" } } })).rejects.toThrow(/`precisePrefix.tokenizer.endpoint` to be an http\(s\) URL/);
    await expect(createRouter({ targets: [{ id: "a" }], precisePrefix: { capacityBlocks: 10 } })).rejects.toThrow(/from 1024 to 67108864, got 10/);
    await expect(createRouter({ targets: [{ id: "a" }], precisePrefix: { tokenizeWaitMs: 20_000 } })).rejects.toThrow(/`precisePrefix.tokenizeWaitMs` to be an integer from 0 to 10000, got 20000/);
    await expect(createRouter({ targets: [{ id: "a" }], precisePrefix: { spreadRunningPrefixes: "yes" as never } })).rejects.toThrow('Expected `precisePrefix.spreadRunningPrefixes` to be a boolean or "auto", got "yes"');
    // An option this version does not know is refused, with the nearest known one.
    await expect(createRouter({ targets: [{ id: "a" }], precisePrefix: { blockSiz: 16 } as never })).rejects.toThrow("Unknown option `precisePrefix.blockSiz` — did you mean `precisePrefix.blockSize`?");
  });
});
