/**
 * Reading an engine's figures from its `/metrics` text: only the configured families reach the
 * parser, and that reads the same figures as parsing the whole body.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DEFAULTS } from "prefix-router";
import { type PrometheusParser, familyLines, loadPrometheusParser, readEngineFigures } from "../../src/load-view/engine-metrics.js";

const parse = await loadPrometheusParser();
const names = DEFAULTS.engineMetrics;

/** The figures read from the whole body, every family parsed. */
function wholeBody(text: string): unknown {
  const everything: PrometheusParser = parse;
  try {
    // Every family parsed, then the configured ones read: what familyLines must not change.
    const families = everything(text);
    const only: PrometheusParser = () => families;
    return readEngineFigures(only, "", names);
  } catch (e) {
    return (e as Error).message;
  }
}

function filtered(text: string): unknown {
  try {
    return readEngineFigures(parse, text, names);
  } catch (e) {
    return (e as Error).message;
  }
}

const wanted = [...names.running, ...names.waiting, ...names.kvCacheUsage, ...names.waitingUncachedTokens, ...names.cacheConfig];
/** Names that contain a configured one without being it. */
const nearMisses = wanted.flatMap((n) => [`${n}_total`, `${n}x`, `x${n}`, `${n.slice(0, -1)}`]);
const others = ["vllm:time_to_first_token_seconds", "process_cpu_seconds", "vllm:lora_requests_info", "python_gc_objects_collected"];

const labelValue = fc.oneof(fc.constantFrom(...wanted, 'a "quoted" one', "back\\\\slash", ""), fc.stringMatching(/^[a-z0-9 :_]{0,12}$/));
const labels = fc.array(fc.tuple(fc.constantFrom("model_name", "engine", "le_x", "adapter"), labelValue), { maxLength: 3 }).map((pairs) => {
  const unique = new Map(pairs);
  return unique.size === 0 ? "" : `{${[...unique].map(([k, v]) => `${k}="${v.replace(/"/g, '\\"')}"`).join(",")}}`;
});
const value = fc.oneof(fc.integer({ min: 0, max: 500 }).map((n) => `${n}.0`), fc.constantFrom("NaN", "+Inf", "1e3", "0.25"));

/** One family: HELP, TYPE and samples in the text format, a histogram with its suffixed series. */
const family = (name: string) =>
  fc
    .tuple(fc.constantFrom("gauge", "counter", "histogram", "untyped"), fc.array(fc.tuple(labels, value), { minLength: 0, maxLength: 4 }), fc.constantFrom(...wanted, "Requests."), fc.boolean())
    .map(([type, samples, help, meta]) => {
      const lines = meta ? [`# HELP ${name} ${help} per ${name}`, `# TYPE ${name} ${type}`] : [];
      for (const [l, v] of samples) {
        if (type === "histogram") lines.push(`${name}_bucket${l === "" ? '{le="+Inf"}' : l.replace("}", ',le="+Inf"}')} ${v}`, `${name}_sum${l} ${v}`, `${name}_count${l} ${v}`);
        else lines.push(`${name}${l} ${v}`);
      }
      return lines.join("\n");
    });

const body = fc
  .uniqueArray(fc.constantFrom(...wanted, ...nearMisses, ...others), { minLength: 0, maxLength: 12 })
  .chain((familyNames) => fc.tuple(...familyNames.map(family)))
  .chain((families) => fc.tuple(fc.constant(families), fc.constantFrom("\n", "\r\n"), fc.boolean()))
  .map(([families, eol, comment]) => (comment ? ["# a comment mentioning vllm:num_requests_running", ...families] : families).join("\n").replace(/\n/g, eol) + eol);

describe("readEngineFigures", () => {
  it("reads the same figures as parsing the whole body (only the configured families are parsed)", () => {
    fc.assert(
      fc.property(body, (text) => {
        expect(filtered(text)).toEqual(wholeBody(text));
      }),
      { numRuns: 500 },
    );
  });

  it("sums label sets, ignores near-miss names, and tells when neither gauge is there", () => {
    const text = [
      "# HELP vllm:num_requests_running Number of requests in model execution batches.",
      "# TYPE vllm:num_requests_running gauge",
      'vllm:num_requests_running{engine="0"} 2.0',
      'vllm:num_requests_running_total{engine="0"} 100.0',
      'xvllm:num_requests_running{engine="0"} 100.0',
      'vllm:num_requests_running{engine="1",note="vllm:num_requests_waiting 9"} 3.0',
      "  vllm:num_requests_waiting 4",
      "",
    ].join("\n");
    expect(readEngineFigures(parse, text, names)).toEqual({ running: 5, waiting: 4, kvCacheUsage: null, waitingUncachedTokens: null, cache: null });
    expect(familyLines(text, ["vllm:num_requests_waiting"])).toBe("vllm:num_requests_waiting 4\n");
    expect(() => readEngineFigures(parse, "vllm:other 1\n", names)).toThrow(/none of the metrics vllm:num_requests_running, /);
  });

  it("does not fail on a malformed line of a family it does not read", () => {
    const text = `vllm:broken{a=unquoted} 1\n${"# TYPE vllm:num_requests_waiting gauge"}\nvllm:num_requests_waiting 2\n`;
    expect(() => parse(text)).toThrow();
    expect(readEngineFigures(parse, text, names)).toEqual({ running: 0, waiting: 2, kvCacheUsage: null, waitingUncachedTokens: null, cache: null });
  });

  const waiting = "vllm:num_requests_waiting 1\n";
  const tokensOf = (text: string) => readEngineFigures(parse, waiting + text, names).waitingUncachedTokens;
  const cacheOf = (text: string) => readEngineFigures(parse, waiting + text, names).cache;

  it("reads queued uncached tokens, summed over label sets: vLLM's proposed gauge, or SGLang's /v1/loads one", () => {
    expect(tokensOf('vllm:approximate_uncached_tokens_waiting{engine="0"} 1200.0\nvllm:approximate_uncached_tokens_waiting{engine="1"} 300\n')).toBe(1500);
    // SGLang's /v1/loads?format=prometheus: one sample per DP rank, no HELP.
    const loads = ["sglang_num_running_reqs", "sglang_num_waiting_reqs", "sglang_num_waiting_uncached_tokens"]
      .map((n, k) => `# TYPE ${n} gauge\n${n}{dp_rank="0"} ${[3, 2, 4096][k]}\n${n}{dp_rank="1"} ${[1, 0, 1024][k]}`)
      .join("\n");
    expect(readEngineFigures(parse, `${loads}\n`, names)).toMatchObject({ running: 4, waiting: 2, waitingUncachedTokens: 5120 });
    // The first name a target exports counts.
    expect(tokensOf('vllm:approximate_uncached_tokens_waiting 7\nsglang_num_waiting_uncached_tokens{dp_rank="0"} 9\n')).toBe(7);
    expect(tokensOf("vllm:num_tokens_waiting 7\n")).toBeNull();
  });

  it.each(["NaN", "+Inf", "-Inf", "-1", "-0.5", `${2 ** 40 + 1}`, "1e300"])("a queued-tokens sample of %s is not a count: the token figure is unknown, the request figures stand", (v) => {
    const text = `vllm:approximate_uncached_tokens_waiting{engine="0"} 100\nvllm:approximate_uncached_tokens_waiting{engine="1"} ${v}\n`;
    expect(readEngineFigures(parse, waiting + text, names)).toMatchObject({ waiting: 1, waitingUncachedTokens: null });
  });

  it("a sum of valid samples past 2^40 tokens is not believed either", () => {
    expect(tokensOf(`vllm:approximate_uncached_tokens_waiting{engine="0"} ${2 ** 40}\nvllm:approximate_uncached_tokens_waiting{engine="1"} 1\n`)).toBeNull();
    expect(tokensOf(`vllm:approximate_uncached_tokens_waiting 0\n`)).toBe(0);
  });

  it("reads vLLM's cache_config_info: block size and capacity in tokens, over data-parallel engines", () => {
    const info = (labels: string) => `vllm:cache_config_info{${labels}} 1.0\n`;
    expect(cacheOf(info('block_size="16",cache_dtype="auto",enable_prefix_caching="True",engine="0",num_gpu_blocks="75000"'))).toEqual({ blockSize: 16, capacityTokens: 1_200_000 });
    expect(cacheOf(info('block_size="16",engine="0",num_gpu_blocks="100"') + info('block_size="16",engine="1",num_gpu_blocks="50"'))).toEqual({ blockSize: 16, capacityTokens: 2400 });
    for (const bad of [
      'block_size="16"', // no num_gpu_blocks (vLLM before the engine has profiled its memory)
      'block_size="16",num_gpu_blocks="None"',
      'block_size="0",num_gpu_blocks="10"',
      'block_size="-16",num_gpu_blocks="10"',
      'block_size="16.5",num_gpu_blocks="10"',
      'block_size="1e3",num_gpu_blocks="10"',
      `block_size="16",num_gpu_blocks="${2 ** 33}"`,
      `block_size="${2 ** 21}",num_gpu_blocks="10"`,
    ]) {
      expect(cacheOf(info(bad))).toBeNull();
    }
    // Two engines that disagree on the block size: no single block size to report.
    expect(cacheOf(info('block_size="16",num_gpu_blocks="10"') + info('block_size="32",num_gpu_blocks="10"'))).toBeNull();
  });
});
