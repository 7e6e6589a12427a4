/**
 * The tiny model's tokenizer: a real byte-level BPE, and three implementations that must agree
 * token for token — llama.cpp's own tokenizer reading the GGUF (through node-llama-cpp, the
 * reference), `@huggingface/tokenizers` reading the generated `tokenizer.json`, and bpe.ts (what
 * the fleet's tools use). Strings: ASCII, any Unicode, whitespace runs, digits, the control
 * tokens, the bench's prompts; and the chat template of `tokenizer_config.json` renders exactly
 * what the fleet's server renders.
 *
 * The llama.cpp part needs node-llama-cpp (`npm run engines:llama`): skipped without it, unless
 * PREFIX_ROUTER_REQUIRE_LLAMA=1.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Template } from "@huggingface/jinja";
import { Tokenizer } from "@huggingface/tokenizers";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { engineWorkload } from "../../../../tools/bench/engines/workloads.js";
import { TINY_LLAMA_CONTROL_TOKENS, tinyBpeCorpus, tinyLlamaTokenizer, trainBpe } from "../../../../tools/fleet/llama/bpe.js";
import { tinyLlamaGguf } from "../../../../tools/fleet/llama/gguf.js";
import { loadNodeLlamaCpp, resolveNodeLlamaCpp, type Llama, type LlamaModel } from "../../../../tools/fleet/llama/runtime.js";
import { tinyLlamaTokenizerConfig, tinyLlamaTokenizerFiles, writeTinyLlamaTokenizer } from "../../../../tools/fleet/llama/tokenizer-files.js";
import { renderPrompt } from "../../../../tools/fleet/template.js";

const installed = resolveNodeLlamaCpp() !== undefined;
const required = process.env.PREFIX_ROUTER_REQUIRE_LLAMA === "1";

const dir = mkdtempSync(join(tmpdir(), "prefix-router-tokenizer-test-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The HF tokenizer as a user would load it: from the files on disk. */
async function loadHf(): Promise<Tokenizer> {
  await writeTinyLlamaTokenizer(dir);
  const read = (name: string) => JSON.parse(readFileSync(join(dir, name), "utf8")) as object;
  return new Tokenizer(read("tokenizer.json"), read("tokenizer_config.json"));
}

/** The bench's rendered prompts: system prompts, questions, a follow-up with an answer. */
function benchPrompts(): string[] {
  const out: string[] = [];
  for (const name of ["short-prompts", "long-documents"] as const) {
    for (const s of engineWorkload(name, 7, { sessions: 6 }).sessions) {
      const messages = [
        { role: "system", content: s.system },
        { role: "user", content: s.turns[0]! },
      ];
      out.push(renderPrompt({ messages }));
      out.push(renderPrompt({ messages: [...messages, { role: "assistant", content: "Ledger 12, refund ✓ — déjà vu." }, { role: "user", content: s.turns.at(-1)! }] }));
    }
  }
  return out;
}

const whitespace = fc.stringMatching(/^[ \t\r\n\u00a0\u2003\u3000]{0,12}$/);
const pieces = fc.constantFrom("'s", "'LL", "don't", "2026", "3.14", "<|eot_id|>", "<|begin_of_text|>", "<|eot_id", "|>", "\n\n", "  ", "Ġ", "é", "日本", "🙂", "\u0301", "ledger", "Refund", "?!", "...", "\ud800");
/** Strings of every shape the prompts have, and worse. */
const texts = fc.oneof(
  fc.string({ unit: "grapheme-ascii", maxLength: 80 }),
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.string({ unit: "binary", maxLength: 30 }),
  fc.array(fc.oneof(pieces, whitespace, fc.string({ maxLength: 6 }), fc.integer({ min: 0, max: 1e9 }).map(String)), { maxLength: 16 }).map((a) => a.join("")),
);

describe("the tiny model's BPE", () => {
  it("is learned deterministically: hundreds of merges, each a token, the control tokens at 256–260", () => {
    const a = trainBpe(tinyBpeCorpus());
    const b = tinyLlamaTokenizer().model;
    expect(a.tokens).toEqual(b.tokens);
    expect(a.merges).toEqual(b.merges);
    expect(a.merges.length).toBeGreaterThan(300);
    expect(a.tokens.slice(256, 261)).toEqual([...TINY_LLAMA_CONTROL_TOKENS]);
    expect(new Set(a.tokens).size).toBe(a.tokens.length);
    for (const [x, y] of a.merges) expect(a.tokens).toContain(x + y);
  });

  it("reads the bench's prompts at several characters a token, and decodes them back", () => {
    const tok = tinyLlamaTokenizer();
    for (const p of benchPrompts()) {
      const ids = tok.encode(p);
      expect(p.length / ids.length).toBeGreaterThan(3);
      expect(tok.decode(ids)).toBe(p.replace(/<\|(begin_of_text|start_header_id|end_header_id|eot_id)\|>/g, ""));
    }
  });

  it("bpe.ts and @huggingface/tokenizers with tokenizer.json give the same ids", async () => {
    const hf = await loadHf();
    const tok = tinyLlamaTokenizer();
    for (const p of benchPrompts()) expect(hf.encode(p).ids).toEqual(tok.encode(p));
    fc.assert(
      fc.property(texts, (s) => {
        expect(hf.encode(s).ids).toEqual(tok.encode(s));
      }),
      { numRuns: 2000 },
    );
  });

  it("tokenizer_config.json's chat template renders what the fleet's server renders", () => {
    const template = new Template(tinyLlamaTokenizerConfig().chat_template as string);
    const render = (body: { messages: unknown[]; tools?: unknown[] }) =>
      template.render({ ...body, bos_token: "<|begin_of_text|>", add_generation_prompt: true });
    const content = fc.oneof(
      fc.string(),
      fc.constant(null),
      fc.array(fc.oneof(fc.string(), fc.record({ type: fc.constant("text"), text: fc.string() }), fc.record({ type: fc.constantFrom("image_url", "input_audio") }))),
    );
    const call = fc.record({ id: fc.string(), type: fc.constant("function"), function: fc.record({ name: fc.string(), arguments: fc.string() }) });
    const message = fc.record({ role: fc.constantFrom("system", "user", "assistant", "tool", "developer"), content }, { requiredKeys: ["role", "content"] });
    const assistantWithCalls = fc.record({ role: fc.constant("assistant"), content, tool_calls: fc.array(call, { maxLength: 3 }) });
    const tool = fc.record({ type: fc.constant("function"), function: fc.record({ name: fc.string(), description: fc.string(), parameters: fc.record({ type: fc.constant("object"), properties: fc.dictionary(fc.stringMatching(/^[a-z_]{1,8}$/), fc.record({ type: fc.constantFrom("string", "integer") })) }) }) });
    fc.assert(
      fc.property(fc.array(fc.oneof(message, assistantWithCalls), { minLength: 1, maxLength: 5 }), fc.option(fc.array(tool, { maxLength: 3 }), { nil: undefined }), (messages, tools) => {
        const body = tools === undefined ? { messages } : { messages, tools };
        expect(render(body)).toBe(renderPrompt(body));
      }),
      { numRuns: 300 },
    );
  });

  it("the committed fixture files are what the generator writes (regenerate: see docs/real-engines.md)", () => {
    const files = tinyLlamaTokenizerFiles();
    const fixtures = join(import.meta.dirname, "fixtures", "tiny-llama-tokenizer");
    if (process.env.PREFIX_ROUTER_WRITE_FIXTURES === "1") for (const [n, t] of Object.entries(files)) writeFileSync(join(fixtures, n), t);
    for (const [n, t] of Object.entries(files)) expect(readFileSync(join(fixtures, n), "utf8")).toBe(t);
  });
});

describe.skipIf(!installed && !required)("llama.cpp's tokenizer on the GGUF", () => {
  let llama: Llama;
  let model: LlamaModel;

  beforeAll(async () => {
    const path = join(dir, "tiny.gguf");
    writeFileSync(path, tinyLlamaGguf({ layers: 1 }));
    const mod = await loadNodeLlamaCpp();
    llama = await mod.getLlama({ gpu: false, build: "never", skipDownload: true, usePrebuiltBinaries: true, progressLogs: false, logLevel: "error", maxThreads: 1 });
    model = await llama.loadModel({ modelPath: path, gpuLayers: 0 });
  }, 120_000);
  afterAll(async () => {
    await model?.dispose();
    await llama?.dispose();
  });

  it("gives the ids bpe.ts and @huggingface/tokenizers give, control tokens parsed (as llama-server does)", async () => {
    const hf = await loadHf();
    const tok = tinyLlamaTokenizer();
    for (const p of benchPrompts()) {
      expect(model.tokenize(p, true)).toEqual(tok.encode(p));
      expect(hf.encode(p).ids).toEqual(tok.encode(p));
    }
    fc.assert(
      fc.property(texts, (s) => {
        const ids = model.tokenize(s, true);
        expect(hf.encode(s).ids).toEqual(ids);
        expect(tok.encode(s)).toEqual(ids);
      }),
      { numRuns: 3000 },
    );
  });

  it("decodes to the same bytes as bpe.ts (no spaces cleaned)", () => {
    const tok = tinyLlamaTokenizer();
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 40 }), (s) => {
        const ids = tok.encode(s, false);
        expect(model.detokenize(ids, false)).toBe(tok.decode(ids));
        expect(tok.decode(ids)).toBe(s);
      }),
      { numRuns: 500 },
    );
  });
});
