/**
 * What one `engine` scrape costs the event loop once the body has arrived: decoding it and reading
 * the load gauges. Side by side on the same bodies: the engine view's reading (only the
 * configured families reach `parse-prometheus-text-format`, see `familyLines`) and parsing the
 * whole body with it. Bodies in vLLM's shape — a few gauges, then histograms of 30 buckets per
 * engine (data-parallel engines multiply them) — up to the default `maxBodyBytes` (4 MiB).
 *
 *   npx tsx bench/metrics-parse.ts [--time=1000]
 */
import { DEFAULTS } from "prefix-router";
import { loadPrometheusParser, readEngineFigures } from "../src/load-view/engine-metrics.js";

const time = Number(process.argv.find((a) => a.startsWith("--time="))?.slice(7) ?? 1000);
const parse = await loadPrometheusParser();

const HISTOGRAMS = [
  "time_to_first_token_seconds",
  "time_per_output_token_seconds",
  "e2e_request_latency_seconds",
  "request_queue_time_seconds",
  "request_prefill_time_seconds",
  "request_decode_time_seconds",
  "request_inference_time_seconds",
  "request_prompt_tokens",
  "request_generation_tokens",
  "iteration_tokens_total",
  "request_max_num_generation_tokens",
  "request_params_n",
  "request_params_max_tokens",
  "inter_token_latency_seconds",
];

/** A vLLM-shaped body: gauges and counters, then every histogram per engine, until at least `bytes`. */
function body(engines: number, minBytes = 0): string {
  const lines: string[] = [];
  let rounds = 0;
  do {
    for (let e = 0; e < engines; e++) {
      const labels = `model_name="meta-llama/Llama-3.1-70B-Instruct",engine="${e}"`;
      for (const g of ["num_requests_running", "num_requests_waiting", "kv_cache_usage_perc"]) {
        if (rounds === 0) lines.push(`# HELP vllm:${g} ${g}.`, `# TYPE vllm:${g} gauge`);
        lines.push(`vllm:${g}{${labels}} ${(e + 1) * 2}.0`);
      }
      for (const h of HISTOGRAMS) {
        const name = `vllm:${h}${rounds === 0 ? "" : `_${rounds}`}`;
        lines.push(`# HELP ${name} Histogram of ${h}.`, `# TYPE ${name} histogram`);
        for (let b = 0; b < 30; b++) lines.push(`${name}_bucket{${labels},le="${(0.001 * 2 ** b).toPrecision(3)}"} ${b * 17}.0`);
        lines.push(`${name}_bucket{${labels},le="+Inf"} 510.0`, `${name}_sum{${labels}} 1234.5`, `${name}_count{${labels}} 510.0`);
      }
    }
    rounds++;
  } while (lines.join("\n").length < minBytes);
  return `${lines.join("\n")}\n`;
}

function medianMs(fn: () => unknown): number {
  for (let k = 0; k < 3; k++) fn();
  const samples: number[] = [];
  const end = performance.now() + time;
  while (performance.now() < end || samples.length < 5) {
    const t0 = performance.now();
    fn();
    samples.push(performance.now() - t0);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)]!;
}

const rows: [string, string][] = [
  ["1 engine", body(1)],
  ["8 engines (data parallel)", body(8)],
  [`${DEFAULTS.loadView.engineMaxBodyBytes / 2 ** 20} MiB (the default maxBodyBytes)`, body(8, DEFAULTS.loadView.engineMaxBodyBytes - 64 * 1024)],
];
console.log(`Node ${process.version}; median per body over ${time} ms per cell`);
console.log("decode: the bytes to text in 64 KiB chunks, as the view does while they arrive (one chunk at a time, not one block);");
console.log("reading: the engine view's readEngineFigures (familyLines, then the parser on those lines); whole-body: the parser on the whole text\n");
console.log("| body | size | decode ms (all chunks) | reading ms | whole-body parse ms | whole-body ÷ reading |");
console.log("|---|---:|---:|---:|---:|---:|");
for (const [name, text] of rows) {
  const bytes = new TextEncoder().encode(text);
  const chunks: Uint8Array[] = [];
  for (let o = 0; o < bytes.length; o += 65_536) chunks.push(bytes.subarray(o, o + 65_536));
  const decode = (): string => {
    const decoder = new TextDecoder();
    const parts = chunks.map((c) => decoder.decode(c, { stream: true }));
    parts.push(decoder.decode());
    return parts.join("");
  };
  const decoded = decode();
  const figures = readEngineFigures(parse, decoded, DEFAULTS.engineMetrics);
  const decodeMs = medianMs(decode);
  const reading = medianMs(() => readEngineFigures(parse, decoded, DEFAULTS.engineMetrics));
  const whole = medianMs(() => parse(decoded));
  console.log(`| ${name}, running ${figures.running} | ${(bytes.length / 1024).toFixed(0)} KB | ${decodeMs.toFixed(2)} | ${reading.toFixed(2)} | ${whole.toFixed(1)} | ${(whole / reading).toFixed(0)}× |`);
}
