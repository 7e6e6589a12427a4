/**
 * What a real llama.cpp engine's prefix reuse is worth, measured on this machine: one engine of
 * one slot (startLlamaFleet), a prefix of P tokens and a suffix of S tokens (default 2,048 and
 * 128, in the tiny model's BPE tokens). Each trial sends a new prefix with a new suffix
 * (cold: only the `<|begin_of_text|>` token is reused), then the same prefix with another
 * suffix (warm: the slot reuses the prefix and evaluates the suffix), then that prompt again
 * (repeat: all but one token reused).
 * Also times generating the model. Needs node-llama-cpp (npm run engines:llama).
 *
 *   npx tsx bench/llama-ttft.ts                      # 5 trials, 2,048 + 128
 *   npx tsx bench/llama-ttft.ts --trials=9 --prefix=4096 --suffix=256
 *
 * TTFT is the engine's (x-prefix-router-ttft-ms: from the request's arrival to its first token)
 * and the client's (from sending to the first streamed chunk); medians, then cold ÷ warm.
 */
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { startLlamaFleet } from "prefix-router/fleet";
import { tinyLlamaTokenizer } from "../tools/fleet/llama/bpe.js";
import { tinyLlamaGguf } from "../tools/fleet/llama/gguf.js";

const { values } = parseArgs({ options: { trials: { type: "string" }, prefix: { type: "string" }, suffix: { type: "string" } } });
const trials = Number(values.trials ?? 5);
const prefixTokens = Number(values.prefix ?? 2048);
const suffixTokens = Number(values.suffix ?? 128);

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** About `n` tokens (the tiny model's BPE) of lowercase words drawn from `seed`, starting with a space. */
function text(seed: number, n: number): string {
  let out = "";
  let x = seed * 2654435761 + 1;
  // Random letters take about 1.5 tokens a character, words of them a little less: 4 characters a token is plenty.
  while (out.length < 4 * n) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    out += ((x & 7) === 0 ? " " : "") + String.fromCharCode(97 + ((x >>> 16) % 26));
  }
  const tok = tinyLlamaTokenizer();
  return tok.decode(tok.encode(` ${out}`, false).slice(0, n));
}

const genMs: number[] = [];
let modelBytes = 0;
for (let i = 0; i < 5; i++) {
  const t = performance.now();
  modelBytes = tinyLlamaGguf({ seed: i }).length;
  genMs.push(performance.now() - t);
}

const started = performance.now();
const fleet = await startLlamaFleet({ instances: 1, slots: 1, contextSize: Math.max(2048, prefixTokens + suffixTokens + 64) });
const startMs = performance.now() - started;
const url = fleet.targets[0]!.baseURL;
// The completions route prepends `<|begin_of_text|>` (one token): the prefix is shortened by as much.
const BOS = 1;

async function ttft(prompt: string): Promise<{ engine: number; client: number; cached: number; prompt: number }> {
  const t = performance.now();
  const res = await fetch(`${url}/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ prompt, max_tokens: 1, stream: true, stream_options: { include_usage: true } }),
  });
  const reader = res.body!.getReader();
  let client = Number.NaN;
  let body = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (Number.isNaN(client)) client = performance.now() - t;
    body += new TextDecoder().decode(value);
  }
  const usage = JSON.parse(/data: (\{.*"usage".*\})/.exec(body)![1]!).usage as { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } };
  return { engine: Number(res.headers.get("x-prefix-router-ttft-ms")), client, cached: usage.prompt_tokens_details.cached_tokens, prompt: usage.prompt_tokens };
}

const rows: Record<"cold" | "warm" | "repeat", { engine: number; client: number; cached: number; prompt: number }[]> = { cold: [], warm: [], repeat: [] };
try {
  await ttft(text(999, 64)); // warms the process up (first-call allocations)
  for (let i = 0; i < trials; i++) {
    const prefix = text(1000 + i, prefixTokens - BOS);
    rows.cold.push(await ttft(prefix + text(2000 + i, suffixTokens)));
    const warm = prefix + text(3000 + i, suffixTokens);
    rows.warm.push(await ttft(warm));
    rows.repeat.push(await ttft(warm));
  }
} finally {
  await fleet.close();
}

console.log(`Node ${process.version}, ${trials} trials, prefix ${prefixTokens} + suffix ${suffixTokens} tokens, one engine, one slot, one thread`);
console.log(`model: ${(modelBytes / 1e6).toFixed(1)} MB, generated in ${median(genMs).toFixed(0)} ms (median of 5); engine started in ${(startMs / 1000).toFixed(1)} s`);
console.log("| request | prompt tokens | cached tokens | engine TTFT ms (median) | client TTFT ms (median) |");
console.log("|---|---:|---:|---:|---:|");
for (const [name, r] of Object.entries(rows)) {
  console.log(`| ${name} | ${r[0]!.prompt} | ${r[0]!.cached} | ${median(r.map((x) => x.engine)).toFixed(1)} | ${median(r.map((x) => x.client)).toFixed(1)} |`);
}
const ratio = (a: "cold", b: "warm" | "repeat", k: "engine" | "client"): string => (median(rows[a].map((x) => x[k])) / median(rows[b].map((x) => x[k]))).toFixed(1);
console.log(`cold ÷ warm: ${ratio("cold", "warm", "engine")}× (engine), ${ratio("cold", "warm", "client")}× (client); cold ÷ repeat: ${ratio("cold", "repeat", "engine")}× (engine)`);
