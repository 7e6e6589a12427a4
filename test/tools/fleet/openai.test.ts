import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_MODEL, startFleet, type LiveFleet } from "prefix-router/fleet";
import { fillerText } from "../../../tools/fleet/tokenizer.js";

const SYSTEM = "You are the support assistant of Example Corp. Policy: ".repeat(60);

let fleet: LiveFleet;
let client: OpenAI;

beforeAll(async () => {
  fleet = await startFleet({ instances: 2, timeScale: 0.005, models: [DEFAULT_MODEL, "small-model"] });
  client = new OpenAI({ baseURL: `${fleet.urls[0]}/v1`, apiKey: "unused", maxRetries: 0 });
});
afterAll(() => fleet.stop());

function chat(question: string, extra: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming> = {}) {
  return client.chat.completions
    .create({ model: DEFAULT_MODEL, messages: [{ role: "system", content: SYSTEM }, { role: "user", content: question }], max_tokens: 8, ...extra })
    .withResponse();
}

/** A minimal Prometheus text-format (0.0.4) parser that rejects anything malformed. */
function parsePrometheus(text: string): Map<string, { type: string; samples: { name: string; labels: Record<string, string>; value: number }[] }> {
  const families = new Map<string, { type: string; samples: { name: string; labels: Record<string, string>; value: number }[] }>();
  const metricName = "[a-zA-Z_:][a-zA-Z0-9_:]*";
  const sample = new RegExp(`^(${metricName})(?:\\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\[\\\\"n])*",?)*)\\})? (\\S+)$`);
  expect(text.endsWith("\n")).toBe(true);
  let current: string | undefined;
  for (const line of text.slice(0, -1).split("\n")) {
    const help = new RegExp(`^# HELP (${metricName}) .+$`).exec(line);
    if (help) continue;
    const type = new RegExp(`^# TYPE (${metricName}) (counter|gauge|histogram|summary|untyped)$`).exec(line);
    if (type) {
      expect(families.has(type[1]!)).toBe(false);
      families.set(type[1]!, { type: type[2]!, samples: [] });
      current = type[1]!;
      continue;
    }
    const m = sample.exec(line);
    if (!m) throw new Error(`malformed line: ${line}`);
    const [, name, labelText, valueText] = m;
    const fam = families.get(current!)!;
    const allowed = fam.type === "counter" ? [`${current}_total`, current] : fam.type === "histogram" ? [`${current}_bucket`, `${current}_sum`, `${current}_count`] : [current];
    expect(allowed).toContain(name);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (labelText ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k!] = v!;
    const value = valueText === "+Inf" ? Infinity : Number(valueText);
    expect(Number.isNaN(value)).toBe(false);
    fam.samples.push({ name: name!, labels, value });
  }
  return families;
}

describe("OpenAI-compatible API with the official client", () => {
  it("reports cached_tokens 0 the first time and the shared prefix the next time, with the serving instance", async () => {
    const first = await chat("What is the refund policy?");
    expect(first.response.headers.get("x-prefix-router-instance")).toBe("i0");
    expect(first.data.usage?.prompt_tokens_details?.cached_tokens).toBe(0);
    expect(first.data.choices[0]?.message.content).toBe(fillerText(8));
    expect(first.data.choices[0]?.finish_reason).toBe("length");
    expect(first.data.object).toBe("chat.completion");
    const second = await chat("How do I reset my password?");
    const prompt = second.data.usage!.prompt_tokens;
    const cached = second.data.usage!.prompt_tokens_details!.cached_tokens!;
    // The shared part is the template header + system prompt: everything up to the user turn.
    const sharedChars = "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n".length + SYSTEM.length + "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n".length;
    expect(cached).toBe(Math.floor(sharedChars / 64) * 16);
    expect(cached).toBeLessThan(prompt);
    expect(second.response.headers.get("x-prefix-router-cached-tokens")).toBe(String(cached));
    expect(Number(second.response.headers.get("x-prefix-router-ttft-ms"))).toBeLessThan(Number(first.response.headers.get("x-prefix-router-ttft-ms")));
  });

  it("streams chat completions ending with a usage chunk", async () => {
    const { data: stream, response } = await client.chat.completions
      .create({
        model: DEFAULT_MODEL,
        messages: [{ role: "system", content: SYSTEM }, { role: "user", content: "Streaming question" }],
        max_tokens: 6,
        stream: true,
        stream_options: { include_usage: true },
      })
      .withResponse();
    expect(response.headers.get("x-prefix-router-instance")).toBe("i0");
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks[0]?.choices[0]?.delta.role).toBe("assistant");
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
    expect(text).toBe("Lorem ipsum dolor sit am");
    const finish = chunks.filter((c) => c.choices[0]?.finish_reason);
    expect(finish.map((c) => c.choices[0]?.finish_reason)).toEqual(["length"]);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage?.completion_tokens).toBe(6);
    expect(last.usage?.prompt_tokens_details?.cached_tokens).toBeGreaterThan(0);
    expect(chunks.slice(0, -1).every((c) => c.usage === undefined)).toBe(true);
  });

  it("serves /v1/completions, streaming and not, and finish_reason stop without a limit", async () => {
    const prompt = "Once upon a time ".repeat(40);
    const a = await client.completions.create({ model: DEFAULT_MODEL, prompt, max_tokens: 3 });
    expect(a.choices[0]?.text).toBe("Lorem ipsum ");
    expect(a.usage?.prompt_tokens).toBe(Math.ceil(("<|begin_of_text|>" + prompt).length / 4));
    expect((a.usage as { prompt_tokens_details?: { cached_tokens: number } }).prompt_tokens_details?.cached_tokens).toBe(0);
    const s = await client.completions.create({ model: DEFAULT_MODEL, prompt, stream: true });
    let text = "";
    let finish: string | null | undefined;
    for await (const c of s) {
      text += c.choices[0]?.text ?? "";
      finish = c.choices[0]?.finish_reason ?? finish;
    }
    expect(text.length).toBe(64 * 4); // defaultMaxTokens
    expect(finish).toBe("stop");
  });

  it("lists models and keeps caches per model", async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual([DEFAULT_MODEL, "small-model"]);
    const q = { messages: [{ role: "user" as const, content: "model separation ".repeat(30) }], max_tokens: 1 };
    await client.chat.completions.create({ model: DEFAULT_MODEL, ...q });
    const other = await client.chat.completions.create({ model: "small-model", ...q });
    expect(other.usage?.prompt_tokens_details?.cached_tokens).toBe(0);
  });

  it("maps errors to the client's classes", async () => {
    await expect(client.chat.completions.create({ model: "no-such-model", messages: [{ role: "user", content: "x" }] })).rejects.toBeInstanceOf(
      OpenAI.NotFoundError,
    );
    await expect(client.chat.completions.create({ model: DEFAULT_MODEL, messages: [] })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    await expect(
      client.chat.completions.create({ model: DEFAULT_MODEL, messages: [{ role: "user", content: "x" }], max_tokens: 200_000 }),
    ).rejects.toThrow(/maximum context length/);
  });

  it("answers /health and serves /metrics as Prometheus text with vLLM's names", async () => {
    expect((await fetch(`${fleet.urls[1]}/health`)).status).toBe(200);
    const res = await fetch(`${fleet.urls[0]}/metrics`);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const families = parsePrometheus(await res.text());
    for (const [name, type] of [
      ["vllm:num_requests_running", "gauge"],
      ["vllm:num_requests_waiting", "gauge"],
      ["vllm:kv_cache_usage_perc", "gauge"],
      ["vllm:prefix_cache_queries", "counter"],
      ["vllm:prefix_cache_hits", "counter"],
      ["vllm:time_to_first_token_seconds", "histogram"],
    ] as const) {
      expect(families.get(name)?.type).toBe(type);
    }
    const stats = fleet.instance("i0").stats();
    expect(families.get("vllm:prefix_cache_queries")!.samples[0]!.value).toBe(stats.promptTokens);
    expect(families.get("vllm:prefix_cache_hits")!.samples[0]!.value).toBe(stats.cachedTokens);
    expect(families.get("vllm:prefix_cache_hits")!.samples[0]!.labels).toEqual({ model_name: DEFAULT_MODEL, engine: "0" });
    const ttft = families.get("vllm:time_to_first_token_seconds")!.samples;
    const buckets = ttft.filter((s) => s.name.endsWith("_bucket"));
    for (let i = 1; i < buckets.length; i++) expect(buckets[i]!.value).toBeGreaterThanOrEqual(buckets[i - 1]!.value);
    expect(buckets.at(-1)!.labels.le).toBe("+Inf");
    expect(buckets.at(-1)!.value).toBe(ttft.find((s) => s.name.endsWith("_count"))!.value);
    expect(buckets.at(-1)!.value).toBe(stats.completed);
  });

  it("says which instance served each response", async () => {
    const other = new OpenAI({ baseURL: `${fleet.urls[1]}/v1`, apiKey: "unused", maxRetries: 0 });
    const r = await other.chat.completions.create({ model: DEFAULT_MODEL, messages: [{ role: "user", content: "hi" }], max_tokens: 1 }).withResponse();
    expect(r.response.headers.get("x-prefix-router-instance")).toBe("i1");
    expect(fleet.stats().i1?.requests).toBeGreaterThanOrEqual(1);
  });
});
