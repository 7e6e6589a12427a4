/**
 * Random against prefix-aware routing in front of real llama.cpp engines (startLlamaFleet): the
 * workload of test/fleet/llama/real-engines.test.ts, with its size as options. P documents of
 * ≈ 1,100 characters (about 250 tokens of the tiny model's BPE), each asked R questions, in a shuffled order, one
 * request at a time, through routeOpenAI and the real openai client; each strategy gets
 * documents of its own, so one run's cache does not help the other. Prints the engine-reported
 * hit (Σ cached_tokens ÷ Σ prompt_tokens) and the client's TTFT. Needs node-llama-cpp.
 *
 *   npx tsx bench/llama-routing.ts                       # 3 engines × 2 slots, 5 documents × 3
 *   npx tsx bench/llama-routing.ts --instances=4 --slots=4 --prefixes=12 --repeats=4
 */
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import OpenAI from "openai";
import { routeOpenAI } from "prefix-router/openai";
import { DEFAULT_LLAMA_MODEL, startLlamaFleet } from "prefix-router/fleet";
import { createRandom } from "../tools/sim/random.js";

const { values } = parseArgs({
  options: { instances: { type: "string" }, slots: { type: "string" }, prefixes: { type: "string" }, repeats: { type: "string" }, layers: { type: "string" } },
});
const instances = Number(values.instances ?? 3);
const slots = Number(values.slots ?? 2);
const prefixes = Number(values.prefixes ?? 5);
const repeats = Number(values.repeats ?? 3);
const layers = Number(values.layers ?? 2);

function document(topic: string, chars: number): string {
  let out = "";
  for (let i = 0; out.length < chars; i++) out += `${topic} clause ${i}: keep records for ${(i * 37) % 91} days, escalate after ${(i * 13) % 17} hours. `;
  return out.slice(0, chars);
}

const pct = (xs: number[], q: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;

const fleet = await startLlamaFleet({ instances, slots, contextSize: 2048, seed: 1, model: { layers } });
try {
  const rows: string[] = [];
  for (const strategy of ["random", "prefix-aware"] as const) {
    const client = await routeOpenAI(new OpenAI({ apiKey: "unused", baseURL: "http://fleet.invalid/v1", maxRetries: 0 }), {
      targets: fleet.targets.map((t) => ({ id: t.id, baseURL: t.baseURL })),
      strategy,
      prefixLength: 1024,
      random: createRandom(11),
    });
    const shuffle = createRandom(5);
    const order = Array.from({ length: prefixes * repeats }, (_, i) => i % prefixes);
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(shuffle() * (i + 1));
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    let prompt = 0;
    let cached = 0;
    const ttft: number[] = [];
    for (const [i, k] of order.entries()) {
      const start = performance.now();
      const stream = await client.chat.completions.create({
        model: DEFAULT_LLAMA_MODEL,
        messages: [
          { role: "system", content: document(`${strategy} policy ${k}`, 1100) },
          { role: "user", content: `Question ${i}?` },
        ],
        max_tokens: 1,
        stream: true,
        stream_options: { include_usage: true },
      });
      let first = Number.NaN;
      for await (const chunk of stream) {
        if (Number.isNaN(first)) first = performance.now() - start;
        if (chunk.usage) {
          prompt += chunk.usage.prompt_tokens;
          cached += chunk.usage.prompt_tokens_details?.cached_tokens ?? 0;
        }
      }
      ttft.push(first);
    }
    rows.push(`| ${strategy} | ${((100 * cached) / prompt).toFixed(1)} % | ${pct(ttft, 0.5).toFixed(0)} | ${pct(ttft, 0.9).toFixed(0)} |`);
  }
  console.log(`${instances} engines × ${slots} slots (${layers} layers), ${prefixes} documents × ${repeats} questions, one request at a time; Node ${process.version}`);
  console.log("| strategy | engine-reported hit | P50 TTFT ms | P90 TTFT ms |");
  console.log("|---|---:|---:|---:|");
  for (const r of rows) console.log(r);
} finally {
  await fleet.close();
}
