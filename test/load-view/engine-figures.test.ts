/**
 * Reading an engine's figures from its `/metrics` text: only the configured families reach the
 * parser, and that reads the same figures as parsing the whole body.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DEFAULTS } from "prefix-router";
import { type PrometheusParser, familyLines, loadPrometheusParser, readEngineFigures } from "../../src/load-view/engine.js";

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

const wanted = [...names.running, ...names.waiting, ...names.kvCacheUsage];
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
    expect(readEngineFigures(parse, text, names)).toEqual({ running: 5, waiting: 4, kvCacheUsage: null });
    expect(familyLines(text, ["vllm:num_requests_waiting"])).toBe("vllm:num_requests_waiting 4\n");
    expect(() => readEngineFigures(parse, "vllm:other 1\n", names)).toThrow(/none of the metrics vllm:num_requests_running, /);
  });

  it("does not fail on a malformed line of a family it does not read", () => {
    const text = `vllm:broken{a=unquoted} 1\n${"# TYPE vllm:num_requests_waiting gauge"}\nvllm:num_requests_waiting 2\n`;
    expect(() => parse(text)).toThrow();
    expect(readEngineFigures(parse, text, names)).toEqual({ running: 0, waiting: 2, kvCacheUsage: null });
  });
});
