import { WORKLOAD_NAMES, builtinWorkload } from "prefix-router/bench";
import type { BenchRequest } from "prefix-router/bench";
import { describe, expect, it } from "vitest";
import { countTokens } from "../../../tools/fleet/tokenizer.js";
import { renderPrompt } from "../../../tools/fleet/template.js";
import { syntheticText } from "../../../tools/bench/text.js";
import { agentWorkload, sharegptWorkload } from "../../../tools/bench/workloads-sessions.js";
import { longContextWorkload } from "../../../tools/bench/workloads-single-turn.js";

const take = (it: Iterable<BenchRequest>, n: number) => {
  const out: BenchRequest[] = [];
  for (const r of it) {
    out.push(r);
    if (out.length === n) break;
  }
  return out;
};

describe("syntheticText", () => {
  it("has exactly 4 characters per token, is a pure function of its key, and differs from the start", () => {
    expect(syntheticText(1, 512)).toHaveLength(2048);
    expect(syntheticText(1, 0)).toBe("");
    expect(syntheticText(1, 300)).toBe(syntheticText(1, 300));
    expect(countTokens(syntheticText(42, 777))).toBe(777);
    const starts = new Set(Array.from({ length: 2000 }, (_, k) => syntheticText(k, 16).slice(0, 40)));
    expect(starts.size).toBe(2000);
  });
});

describe("workloads", () => {
  it.each(WORKLOAD_NAMES)("%s: deterministic, time-ordered, inside the duration, renderable", (name) => {
    const w = builtinWorkload(name);
    const settings = { seed: 3, durationMs: 60_000, rateMultiplier: 1 };
    const a = [...w.requests(settings)];
    const b = [...w.requests(settings)];
    expect(a.length).toBeGreaterThan(10);
    expect(b).toEqual(a);
    for (let i = 1; i < a.length; i++) expect(a[i]!.arrivalMs).toBeGreaterThanOrEqual(a[i - 1]!.arrivalMs);
    expect(a.at(-1)!.arrivalMs).toBeLessThan(60_000);
    expect(new Set(a.map((r) => r.id)).size).toBe(a.length);
    for (const r of a.slice(0, 20)) {
      expect(r.outputTokens).toBeGreaterThanOrEqual(1);
      expect(r.body.max_tokens).toBe(r.outputTokens);
      expect(renderPrompt(r.body).length).toBeGreaterThan(0);
    }
    // Doubling the rate roughly doubles the requests.
    const fast = [...w.requests({ ...settings, rateMultiplier: 2 })];
    expect(fast.length / a.length).toBeGreaterThan(1.4);
    expect(fast.length / a.length).toBeLessThan(2.6);
  });

  it("long-context: every request is one 8,000-token document then a short question", () => {
    const reqs = take(longContextWorkload({ documents: 5 }).requests({ seed: 1, durationMs: 60_000, rateMultiplier: 1 }), 40);
    const docs = new Set(reqs.map((r) => r.body.messages[0]!.content.slice(0, 32_000)));
    expect(docs.size).toBeLessThanOrEqual(5);
    for (const r of reqs) {
      const text = r.body.messages[0]!.content;
      expect(text.length - 32_000).toBeGreaterThan(0);
      expect(text.length - 32_000).toBeLessThan(2000);
    }
  });

  it("sharegpt and agent: each turn resends the previous turn's whole history", () => {
    for (const w of [sharegptWorkload({ meanTurns: 6 }), agentWorkload()]) {
      const reqs = [...w.requests({ seed: 2, durationMs: 120_000, rateMultiplier: 1 })];
      const prompts = reqs.map((r) => renderPrompt(r.body).replace(/<\|start_header_id\|>assistant<\|end_header_id\|>\n\n$/, ""));
      let continued = 0;
      for (let i = 0; i < reqs.length; i++) {
        for (let j = i + 1; j < reqs.length; j++) {
          if (prompts[j]!.startsWith(prompts[i]!)) {
            continued++;
            break;
          }
        }
      }
      // Most turns are continued by a later one (the last turn of a session is not).
      expect(continued / reqs.length).toBeGreaterThan(0.4);
    }
  });

  it("agent: tools come first and are shared by every session of a configuration", () => {
    const reqs = [...agentWorkload({ agentTypes: 1 }).requests({ seed: 2, durationMs: 60_000, rateMultiplier: 1 })];
    const tools = new Set(reqs.map((r) => JSON.stringify(r.body.tools)));
    expect(tools.size).toBe(1);
    expect(renderPrompt(reqs[0]!.body)).toContain("<|start_header_id|>tools<|end_header_id|>");
  });
});
