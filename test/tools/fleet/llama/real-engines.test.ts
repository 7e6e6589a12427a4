/**
 * Real llama.cpp engines (startLlamaFleet) with the real openai client and router: llama.cpp
 * loads the generated model and tokenizes with its BPE (bpe.ts's ids); a repeated prompt is served from the
 * slot's KV cache, faster; prefix-aware routing gets a higher engine-reported hit than random;
 * no engine outlives `close()` or a killed parent. Only relative facts are asserted: timings
 * differ from machine to machine.
 *
 * Needs node-llama-cpp (`npm run engines:llama`): skipped without it, unless
 * PREFIX_ROUTER_REQUIRE_LLAMA=1 (as in CI), which makes its absence a failure.
 */
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { routeOpenAI } from "prefix-router/openai";
import { DEFAULT_LLAMA_MODEL, startLlamaFleet, type LlamaFleet } from "prefix-router/fleet";
import { resolveNodeLlamaCpp } from "../../../../tools/fleet/llama/runtime.js";
import { createRandom } from "../../../../tools/sim/random.js";
import { renderPrompt } from "../../../../tools/fleet/template.js";
import { runEngineBench } from "../../../../tools/bench/engines/run.js";
import { tinyLlamaTokenizer } from "../../../../tools/fleet/llama/bpe.js";
import { tinyLlamaVocabularySize } from "../../../../tools/fleet/llama/gguf.js";
import { engineWorkload } from "../../../../tools/bench/engines/workloads.js";

const installed = resolveNodeLlamaCpp() !== undefined;
const required = process.env.PREFIX_ROUTER_REQUIRE_LLAMA === "1";
if (!installed && !required) {
  console.warn("real-engines.test.ts skipped: node-llama-cpp is not installed (npm run engines:llama); PREFIX_ROUTER_REQUIRE_LLAMA=1 makes this a failure");
}

/** Whether process `pid` exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  for (const start = performance.now(); performance.now() - start < timeoutMs; await new Promise((r) => setTimeout(r, 50))) {
    if (condition()) return true;
  }
  return condition();
}

/** Deterministic text of about `chars` characters, different for each `topic`. */
function document(topic: string, chars: number): string {
  let out = "";
  for (let i = 0; out.length < chars; i++) out += `${topic} clause ${i}: keep records for ${(i * 37) % 91} days, escalate after ${(i * 13) % 17} hours. `;
  return out.slice(0, chars);
}

describe.skipIf(!installed && !required)("real llama.cpp engines", () => {
  let fleet: LlamaFleet;
  const reported = { prompt: 0, cached: 0 };
  const count = (u: OpenAI.CompletionUsage | undefined): void => {
    reported.prompt += u?.prompt_tokens ?? Number.NaN;
    reported.cached += u?.prompt_tokens_details?.cached_tokens ?? Number.NaN;
  };

  beforeAll(async () => {
    // Three engines of two slots: fewer slots per engine than the workload below has prefixes.
    // Two layers instead of four: half the prefill work, the same behaviour.
    fleet = await startLlamaFleet({ instances: 3, slots: 2, contextSize: 2048, seed: 1, model: { layers: 2 } });
  }, 120_000);
  afterAll(() => fleet?.close());

  it("finds node-llama-cpp (set PREFIX_ROUTER_REQUIRE_LLAMA=1 only where it is installed)", () => {
    expect(installed, "node-llama-cpp is not installed: npm run engines:llama").toBe(true);
  });

  it("tokenizes with llama.cpp as bpe.ts does, control tokens parsed unless parse_special is false, and detokenizes back", async () => {
    const engine = fleet.targets[0]!.url;
    const post = async (path: string, body: unknown): Promise<Record<string, unknown>> => {
      const res = await fetch(`${engine}${path}`, { method: "POST", body: JSON.stringify(body) });
      expect(res.status).toBe(200);
      return (await res.json()) as Record<string, unknown>;
    };
    const tok = tinyLlamaTokenizer();
    for (const text of ["Hello, world", "héllo wörld 😀 ▁x", "spaces before punctuation , . ? !", "<|begin_of_text|> is text here", "\u0000\t\r\n \u00ff"]) {
      const { tokens } = (await post("/tokenize", { content: text })) as { tokens: number[] };
      expect(tokens).toEqual(tok.encode(text));
      expect((await post("/detokenize", { tokens })).content).toBe(text.replace("<|begin_of_text|>", ""));
      const plain = (await post("/tokenize", { content: text, parse_special: false })) as { tokens: number[] };
      expect(plain.tokens).toEqual(tok.encode(text, false));
      expect((await post("/detokenize", { tokens: plain.tokens })).content).toBe(text);
    }
    expect(((await post("/tokenize", { content: "<|eot_id|>" })) as { tokens: number[] }).tokens).toEqual([260]);
    const bad = await fetch(`${engine}/detokenize`, { method: "POST", body: JSON.stringify({ tokens: [1, tinyLlamaVocabularySize()] }) });
    expect(bad.status).toBe(400);
  });

  it("serves a repeated prompt from the slot's cache: cached tokens reported, a lower time to first token", async () => {
    const client = new OpenAI({ baseURL: fleet.targets[0]!.baseURL, apiKey: "unused", maxRetries: 0 });
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
      { role: "system", content: `${document("Refunds — règles", 1500)} ✓` },
      { role: "user", content: "May I return an opened item?" },
    ];
    const ask = async () => {
      const start = performance.now();
      const { data: stream, response } = await client.chat.completions
        .create({ model: DEFAULT_LLAMA_MODEL, messages, max_tokens: 4, stream: true, stream_options: { include_usage: true } })
        .withResponse();
      let ttftMs = Number.NaN;
      let usage: OpenAI.CompletionUsage | undefined;
      let text = "";
      for await (const chunk of stream) {
        if (Number.isNaN(ttftMs)) ttftMs = performance.now() - start;
        text += chunk.choices[0]?.delta.content ?? "";
        if (chunk.usage) usage = chunk.usage;
      }
      count(usage);
      return { ttftMs, usage, text, engineTtftMs: Number(response.headers.get("x-prefix-router-ttft-ms")) };
    };
    const cold = await ask();
    const warm = await ask();
    // The engine's own count: the rendered chat prompt in the tiny model's BPE tokens.
    const promptTokens = tinyLlamaTokenizer().encode(renderPrompt({ messages })).length;
    expect(cold.usage?.prompt_tokens).toBe(promptTokens);
    expect(cold.usage?.completion_tokens).toBe(4);
    expect(cold.usage?.prompt_tokens_details?.cached_tokens).toBe(0);
    // Everything but the last prompt token, which is evaluated again for the first output token.
    expect(warm.usage?.prompt_tokens_details?.cached_tokens).toBe(promptTokens - 1);
    expect(warm.text).toBe(cold.text);
    expect(warm.ttftMs).toBeLessThan(cold.ttftMs);
    expect(warm.engineTtftMs).toBeLessThan(cold.engineTtftMs);
  });

  it("gets a higher engine-reported cache hit with prefix-aware routing than with random routing", async () => {
    const PREFIXES = 5;
    const REPEATS = 3;
    const run = async (strategy: "random" | "prefix-aware"): Promise<number> => {
      const client = await routeOpenAI(new OpenAI({ apiKey: "unused", baseURL: "http://fleet.invalid/v1", maxRetries: 0 }), {
        targets: fleet.targets.map((t) => ({ id: t.id, baseURL: t.baseURL })),
        strategy,
        prefixLength: 1024,
        random: createRandom(11),
      });
      const shuffle = createRandom(5);
      const order = Array.from({ length: PREFIXES * REPEATS }, (_, i) => i % PREFIXES);
      for (let i = order.length - 1; i > 0; i--) {
        const j = Math.floor(shuffle() * (i + 1));
        [order[i], order[j]] = [order[j]!, order[i]!];
      }
      let prompt = 0;
      let cached = 0;
      for (const [i, k] of order.entries()) {
        const res = await client.chat.completions.create({
          model: DEFAULT_LLAMA_MODEL,
          // Each strategy has its own documents: what one run cached does not help the other.
          messages: [
            { role: "system", content: document(`${strategy} policy ${k}`, 1100) },
            { role: "user", content: `Question ${i}?` },
          ],
          max_tokens: 1,
        });
        count(res.usage);
        prompt += res.usage?.prompt_tokens ?? Number.NaN;
        cached += res.usage?.prompt_tokens_details?.cached_tokens ?? Number.NaN;
      }
      return cached / prompt;
    };
    const random = await run("random");
    const prefixAware = await run("prefix-aware");
    expect(prefixAware).toBeGreaterThan(random);
  });

  it("bench --engine llama: every session played for each strategy, the engine's prompt tokens the ideal's (the same tokenizer)", { timeout: 240_000 }, async () => {
    const res = await runEngineBench({
      engines: ["llama"],
      workload: engineWorkload("short-prompts", 1, { sessions: 6, prefixChars: 500 }),
      strategies: ["random", "prefix-aware"],
      instances: 2,
      slots: 2,
      contextSize: 2048,
      concurrency: 2,
      maxTokens: 2,
      seed: 1,
      model: { layers: 2 },
    });
    for (const run of res.runs) {
      expect(run.records).toHaveLength(6);
      for (const r of run.records) {
        expect(r.error).toBeUndefined();
        expect(r.promptTokens).toBe(r.idealPromptTokens);
        expect(r.cachedTokens).toBeLessThan(r.promptTokens);
      }
    }
    expect(res.timing).toBeDefined();
  });

  it("counts in /metrics, under vLLM's names, the tokens usage reported", async () => {
    const total = { queries: 0, hits: 0 };
    for (const t of fleet.targets) {
      const text = await (await fetch(`${t.url}/metrics`)).text();
      const sample = (name: string): number => Number(new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, "m").exec(text)?.[1]);
      total.queries += sample("vllm:prefix_cache_queries_total");
      total.hits += sample("vllm:prefix_cache_hits_total");
      expect([sample("vllm:num_requests_running"), sample("vllm:num_requests_waiting")]).toEqual([0, 0]);
    }
    expect(total).toEqual({ queries: reported.prompt, hits: reported.cached });
  });

  it("leaves no engine process after close()", async () => {
    await fleet.close();
    for (const t of fleet.targets) expect(alive(t.pid), `engine ${t.id} (pid ${t.pid})`).toBe(false);
    await fleet.close();
  });

  it("leaves no engine process when the process that started the fleet is killed", async () => {
    const tsx = createRequire(import.meta.url).resolve("tsx/esm");
    const parent = spawn(process.execPath, ["--import", tsx, fileURLToPath(new URL("./fixtures/llama-parent.ts", import.meta.url))], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const line = await new Promise<string>((resolve, reject) => {
      let out = "";
      parent.stdout.on("data", (c: Buffer) => {
        out += c.toString();
        if (out.includes("\n")) resolve(out.split("\n")[0]!);
      });
      parent.once("exit", (code) => reject(new Error(`the fleet's parent exited (${code}) before reporting its engines`)));
    });
    const { pids } = JSON.parse(line) as { pids: number[] };
    expect(pids.every(alive)).toBe(true);
    parent.kill("SIGKILL");
    expect(await until(() => !pids.some(alive), 15_000)).toBe(true);
  }, 120_000);
});
