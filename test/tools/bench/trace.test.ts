import { fileURLToPath } from "node:url";
import { isBenchError, loadTrace, parseTrace, runBenchmark, traceWorkload } from "prefix-router/bench";
import type { BenchRequest, BenchRow, TraceRecord } from "prefix-router/bench";
import { describe, expect, it } from "vitest";
import { renderPrompt } from "../../../tools/fleet/template.js";

/** The Mooncake sample trace (test/fixtures; see its NOTICE.md). */
const SAMPLE = fileURLToPath(new URL("../../fixtures/mooncake_synthetic.jsonl", import.meta.url));

function expectTraceError(text: string, line: number, message: RegExp): void {
  let caught: unknown;
  try {
    parseTrace(text, { source: "t.jsonl" });
  } catch (e) {
    caught = e;
  }
  expect(isBenchError(caught)).toBe(true);
  const err = caught as { code: string; line: number; message: string };
  expect(err.code).toBe("ERR_TRACE_FORMAT");
  expect(err.line).toBe(line);
  expect(err.message).toContain(`t.jsonl:${line}:`);
  expect(err.message).toMatch(message);
}

const GOOD = '{"timestamp": 0, "input_length": 600, "output_length": 20, "hash_ids": [1, 2]}';

describe("parseTrace / loadTrace", () => {
  it("loads the Mooncake sample: 3,993 records over 17 minutes, as NOTICE.md describes", async () => {
    const records = await loadTrace(SAMPLE);
    expect(records).toHaveLength(3993);
    expect(records[0]).toEqual({ timestampMs: 0, inputTokens: 40160, outputTokens: 6, hashIds: Array.from({ length: 79 }, (_, i) => i) });
    const last = records[records.length - 1]!;
    expect(last.timestampMs).toBe(1022025);
    for (const r of records) expect(r.hashIds).toHaveLength(Math.ceil(r.inputTokens / 512));
  });

  it("skips blank lines and accepts extra fields", () => {
    const records = parseTrace(`\n${GOOD}\n\n{"timestamp": 5, "input_length": 1, "output_length": 0, "hash_ids": [9], "extra": true}\n`);
    expect(records.map((r) => r.timestampMs)).toEqual([0, 5]);
  });

  it.each([
    ["not JSON", "{timestamp: 1}", /not valid JSON/],
    ["an array", "[1, 2]", /expected a JSON object/],
    ["a missing timestamp", '{"input_length": 1, "output_length": 1, "hash_ids": [1]}', /`timestamp`/],
    ["a negative timestamp", '{"timestamp": -1, "input_length": 1, "output_length": 1, "hash_ids": [1]}', /`timestamp`/],
    ["a fractional input_length", '{"timestamp": 1, "input_length": 1.5, "output_length": 1, "hash_ids": [1]}', /`input_length`/],
    ["a string output_length", '{"timestamp": 1, "input_length": 1, "output_length": "3", "hash_ids": [1]}', /`output_length`/],
    ["empty hash_ids", '{"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": []}', /`hash_ids`/],
    ["a negative hash id", '{"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [-3]}', /integers ≥ 0/],
    ["too few hash ids", '{"timestamp": 1, "input_length": 1025, "output_length": 1, "hash_ids": [1, 2]}', /needs ⌈1025\/512⌉ = 3 hash ids, got 2/],
    ["a timestamp before the previous one", '{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1]}', /earlier than the previous/],
  ])("rejects %s with an error naming the line", (_what, bad, message) => {
    const text = `${GOOD.replace('"timestamp": 0', '"timestamp": 3')}\n\n${bad}\n${GOOD}\n`;
    expectTraceError(text, 3, message);
  });

  it("is all or nothing: a bad last line fails the whole parse", () => {
    const text = `${GOOD}\n${GOOD}\n{"timestamp": 1}`;
    expect(() => parseTrace(text)).toThrow(/trace:3:/);
  });

  it("reports an unreadable file as ERR_TRACE_READ", async () => {
    await expect(loadTrace("/nonexistent/trace.jsonl")).rejects.toMatchObject({ code: "ERR_TRACE_READ" });
  });
});

describe("traceWorkload", () => {
  const records: TraceRecord[] = [
    { timestampMs: 0, inputTokens: 1200, outputTokens: 5, hashIds: [10, 11, 12] },
    { timestampMs: 10, inputTokens: 1100, outputTokens: 0, hashIds: [10, 11, 13] },
    { timestampMs: 20, inputTokens: 700, outputTokens: 7, hashIds: [20, 21] },
    { timestampMs: 30, inputTokens: 300, outputTokens: 7, hashIds: [10] },
  ];
  const content = (r: BenchRequest) => r.body.messages[0]!.content;
  const sharedPrefix = (a: string, b: string) => {
    let i = 0;
    while (i < a.length && a[i] === b[i]) i++;
    return i;
  };

  it("turns hash ids into text that shares exactly the blocks the trace shares", () => {
    const reqs = [...traceWorkload(records).requests({ seed: 1, durationMs: Infinity, rateMultiplier: 1 })];
    expect(reqs.map((r) => r.arrivalMs)).toEqual([0, 10, 20, 30]);
    // 4 characters per token, exactly the trace's input length.
    expect(reqs.map((r) => content(r).length)).toEqual([4800, 4400, 2800, 1200]);
    // Two shared blocks of 512 tokens = 4,096 characters, then different text.
    expect(sharedPrefix(content(reqs[0]!), content(reqs[1]!))).toBe(4096);
    // The final partial block is a prefix of its id's full block.
    expect(content(reqs[0]!).startsWith(content(reqs[3]!))).toBe(true);
    expect(sharedPrefix(content(reqs[0]!), content(reqs[2]!))).toBeLessThan(8);
    // Output length 0 is served as 1 token (the engine generates at least one).
    expect(reqs[1]!.outputTokens).toBe(1);
    // The rendered prompts share the same prefix plus the template's header.
    const p0 = renderPrompt(reqs[0]!.body);
    const p1 = renderPrompt(reqs[1]!.body);
    expect(sharedPrefix(p0, p1)).toBe(p0.indexOf(content(reqs[0]!)) + 4096);
  });

  it("is deterministic per seed, compresses time with the rate multiplier and stops at the duration", () => {
    const w = traceWorkload(records);
    const a = [...w.requests({ seed: 3, durationMs: Infinity, rateMultiplier: 1 })];
    const b = [...w.requests({ seed: 3, durationMs: Infinity, rateMultiplier: 1 })];
    const c = [...w.requests({ seed: 4, durationMs: Infinity, rateMultiplier: 1 })];
    expect(a).toEqual(b);
    expect(content(c[0]!)).not.toBe(content(a[0]!));
    const fast = [...w.requests({ seed: 3, durationMs: 10, rateMultiplier: 2 })];
    expect(fast.map((r) => r.arrivalMs)).toEqual([0, 5]);
  });

  it("replays the Mooncake sample: the text-level ideal equals the trace's own block-level sharing", async () => {
    const records = (await loadTrace(SAMPLE)).slice(0, 1200);
    // The ideal computed on hash ids alone: leading ids seen before × 512 tokens.
    const seen = new Set<number>();
    let hit = 0;
    let total = 0;
    for (const r of records) {
      let k = 0;
      while (k < r.hashIds.length && seen.has(r.hashIds[k]!)) k++;
      hit += Math.min(k * 512, r.inputTokens - 1);
      total += r.inputTokens;
      for (const id of r.hashIds) seen.add(id);
    }
    const rows = await runBenchmark({ workloads: [traceWorkload(records)], strategies: ["random", "prefix-aware"] });
    expect(rows.map((r) => r.strategy)).toEqual(["random", "prefix-aware"]);
    const [random, prefixAware] = rows as [BenchRow, BenchRow];
    for (const r of rows) {
      expect(r.workload).toBe("trace");
      expect(r.requests + r.rejected).toBe(1200);
      expect(r.tokenHitRate).toBeGreaterThan(0);
      expect(r.tokenHitRate).toBeLessThanOrEqual(r.idealHitRate + 1e-9);
    }
    expect(Math.abs(random.idealHitRate - hit / total)).toBeLessThan(0.01);
    expect(prefixAware.tokenHitRate).toBeGreaterThan(random.tokenHitRate);
  });
});
