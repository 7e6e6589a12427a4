import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { Tokenizer } from "@huggingface/tokenizers";
import { afterAll, describe, expect, it } from "vitest";
import { EndpointBackend, checkAgainstEngine, loadTokenizer } from "../../src/kv-events/tokenizer.js";
import { WorkerBackend } from "../../src/kv-events/tokenizer-backends.js";
import { isRouterError } from "../../src/errors.js";
import { silentLogger } from "../../src/logger.js";

const DIR = "test/fixtures/precise-tokenizer";
const FILES = { tokenizerJson: `${DIR}/tokenizer.json`, tokenizerConfig: `${DIR}/tokenizer_config.json` };
const json = JSON.parse(readFileSync(FILES.tokenizerJson, "utf8"));
const config = JSON.parse(readFileSync(FILES.tokenizerConfig, "utf8"));
const reference = new Tokenizer(json, config);
const ref = (text: string) => reference.encode(text, { add_special_tokens: false }).ids;
const chatml = (messages: { role: string; content: string }[]) =>
  `${messages.map((m) => `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`).join("")}<|im_start|>assistant\n`;
const opts = { model: "m", cacheTokens: 1 << 20, maxQueuedChars: 1 << 22, worker: false, timeoutMs: 5000, clock: { now: () => performance.now() }, logger: silentLogger };

describe("PromptTokenizer", () => {
  it("renders with the chat template and tokenizes like the whole prompt", async () => {
    const { tokenizer } = await loadTokenizer(FILES, opts);
    const messages = [
      { role: "system", content: "You are a helpful assistant." },
      { role: "user", content: "The router sends each request to the engine." },
    ];
    const tokens = await tokenizer.tokenize({ messages });
    expect(Array.from(tokens ?? [])).toEqual(ref(chatml(messages)));
    expect(ref("<|im_start|>")).toEqual([json.added_tokens[1].id]);
  });

  it("a read never tokenizes: it returns the cached leading segments and queues the rest", async () => {
    const { tokenizer } = await loadTokenizer(FILES, opts);
    const turn1 = [{ role: "system", content: "You are a helpful assistant." }, { role: "user", content: "First question about blocks?" }];
    const cold = tokenizer.read({ messages: turn1 });
    expect(cold?.complete).toBe(false);
    expect(cold?.tokens.length).toBe(0);
    await tokenizer.settled();
    const warm = tokenizer.read({ messages: turn1 });
    expect(warm?.complete).toBe(true);
    expect(Array.from(warm?.tokens ?? [])).toEqual(ref(chatml(turn1)));
    // The next turn: every earlier segment is cached; only the new ones are missing.
    const turn2 = [...turn1, { role: "assistant", content: "An answer." }, { role: "user", content: "And a follow-up?" }];
    const next = tokenizer.read({ messages: turn2 });
    expect(next?.complete).toBe(false);
    const known = Array.from(next?.tokens ?? []);
    expect(known.length).toBeGreaterThan(0);
    expect(ref(chatml(turn2)).slice(0, known.length)).toEqual(known);
    const before = tokenizer.stats().tokenizedChars;
    await tokenizer.settled();
    // Only the new messages' segments were tokenized, not the earlier turn again.
    expect(tokenizer.stats().tokenizedChars - before).toBeLessThan(chatml(turn2).length - chatml(turn1).length + 40);
    expect(Array.from(tokenizer.read({ messages: turn2 })?.tokens ?? [])).toEqual(ref(chatml(turn2)));
  });

  it("incremental tokenization equals full tokenization (fast-check)", async () => {
    const { tokenizer } = await loadTokenizer(FILES, opts);
    const text = fc.string({ unit: fc.constantFrom("a", "b", " ", "\n", "é", "The", " router", "<|im_end|>", "<|im_start|>", "  ", "0", "\t", "😀"), maxLength: 30 });
    const msg = fc.record({ role: fc.constantFrom("system", "user", "assistant"), content: text });
    await fc.assert(
      fc.asyncProperty(fc.array(msg, { minLength: 1, maxLength: 6 }), async (messages) => {
        // Turn by turn, as a conversation grows.
        for (let k = 1; k <= messages.length; k++) {
          const tokens = await tokenizer.tokenize({ messages: messages.slice(0, k) });
          expect(Array.from(tokens ?? [])).toEqual(ref(chatml(messages.slice(0, k))));
        }
      }),
      { numRuns: 150 },
    );
  });

  it("completion prompts get the post-processor's special tokens; text parts are joined", async () => {
    const { tokenizer } = await loadTokenizer(FILES, opts);
    expect(Array.from((await tokenizer.tokenize({ prompt: "The quick brown fox" })) ?? [])).toEqual(reference.encode("The quick brown fox").ids);
    const parts = { messages: [{ role: "user", content: [{ type: "text", text: "a" }, { type: "text", text: "b" }] }] };
    expect(Array.from((await tokenizer.tokenize(parts)) ?? [])).toEqual(ref(chatml([{ role: "user", content: "a\nb" }])));
    expect(tokenizer.read({ messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "x" } }] }] })).toBeUndefined();
    expect(tokenizer.read({ input: "x" })).toBeUndefined();
  });

  it("tokenizes off the event loop in a worker thread", async () => {
    const { tokenizer } = await loadTokenizer(FILES, { ...opts, worker: true });
    const doc = "The router sends each request to the engine that holds the longest run. ".repeat(200);
    const tokens = await tokenizer.tokenize({ messages: [{ role: "user", content: doc }] });
    expect(Array.from(tokens ?? [])).toEqual(ref(chatml([{ role: "user", content: doc }])));
    await tokenizer.close();
  });

  it("starts its worker thread when it loads, not at the first prompt", async () => {
    const here: string[] = [];
    const backend = new WorkerBackend(json, config, (texts) => texts.map((t) => (here.push(t), Uint32Array.from(ref(t)))));
    const start = backend.started();
    // Both the load and a prompt that comes during the start wait for the same worker.
    const early = backend.encode(["The quick brown fox"]);
    expect(await start).toBe(true);
    expect(await backend.started()).toBe(true);
    expect(Array.from((await early)[0] ?? [])).toEqual(ref("The quick brown fox"));
    expect(here).toEqual([]);
    await backend.close();
    // Closed: it is not started again, and a late batch is tokenized in this thread.
    expect(await backend.started()).toBe(false);
    expect(Array.from((await backend.encode(["jumps"]))[0] ?? [])).toEqual(ref("jumps"));
    expect(here).toEqual(["jumps"]);
  });

  it("a worker that cannot load the tokenizer is not used: this thread tokenizes", async () => {
    const here: string[] = [];
    const backend = new WorkerBackend({ not: "a tokenizer" }, config, (texts) => texts.map((t) => (here.push(t), Uint32Array.from(ref(t)))));
    expect(await backend.started()).toBe(false);
    expect(Array.from((await backend.encode(["over the lazy dog"]))[0] ?? [])).toEqual(ref("over the lazy dog"));
    expect(here).toEqual(["over the lazy dog"]);
    await backend.close();
  });

  it("a worker closed while it starts ends, and nothing waits for it", async () => {
    const backend = new WorkerBackend(json, config, (texts) => texts.map((t) => Uint32Array.from(ref(t))));
    const start = backend.started();
    await backend.close();
    expect(typeof (await start)).toBe("boolean");
    expect(Array.from((await backend.encode(["a"]))[0] ?? [])).toEqual(ref("a"));
  });

  it("unreadable files are ERR_TOKENIZER", async () => {
    const e = await loadTokenizer({ tokenizerJson: `${DIR}/missing.json`, tokenizerConfig: FILES.tokenizerConfig }, opts).catch((x: unknown) => x);
    expect(isRouterError(e) && e.code).toBe("ERR_TOKENIZER");
    expect(String((e as Error).message)).toContain("missing.json");
  });

  describe("against an engine's /tokenize", () => {
    let mode: "same" | "other" = "same";
    const bodies: unknown[] = [];
    const server = createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        const b = JSON.parse(body) as { prompt?: string; messages?: { role: string; content: string }[]; add_special_tokens?: boolean };
        bodies.push(b);
        let tokens = b.prompt !== undefined ? reference.encode(b.prompt, { add_special_tokens: b.add_special_tokens ?? true }).ids : ref(chatml(b.messages ?? []));
        if (mode === "other") tokens = tokens.map((t: number) => t + 1);
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ count: tokens.length, max_model_len: 32768, tokens }));
      });
    });
    const ready = new Promise<string>((resolve) => server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
    afterAll(() => new Promise<void>((r) => server.close(() => r())));

    it("agrees with the same tokenizer, and says where a different one differs", async () => {
      const url = await ready;
      const { tokenizer } = await loadTokenizer(FILES, opts);
      const engine = new EndpointBackend(url, "m", 5000);
      mode = "same";
      expect(await checkAgainstEngine(tokenizer, engine)).toBeUndefined();
      mode = "other";
      expect(await checkAgainstEngine(tokenizer, engine)).toMatch(/first difference at token 0/);
      expect(bodies.some((b) => (b as { model?: string }).model === "m" && Array.isArray((b as { messages?: unknown }).messages))).toBe(true);
    });

    it("tokenizes segments through the endpoint, incrementally", async () => {
      const url = await ready;
      mode = "same";
      const { tokenizer } = await loadTokenizer({ endpoint: url, tokenizerConfig: FILES.tokenizerConfig }, opts);
      const messages = [{ role: "system", content: "You are a helpful assistant." }, { role: "user", content: "Hello there" }];
      expect(Array.from((await tokenizer.tokenize({ messages })) ?? [])).toEqual(ref(chatml(messages)));
      expect(await checkAgainstEngine(tokenizer, new EndpointBackend(url, "m", 5000))).toBeUndefined();
    });
  });
});
