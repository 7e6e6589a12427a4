import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { DEFAULT_MODEL, VirtualFleet, startFleet, type VirtualResult } from "prefix-router/fleet";
import { renderPrompt } from "../../../tools/fleet/template.js";

/** Documents, users and routes: shared prefixes, misses, and (with a small cache) evictions. */
function workload(): { instance: number; body: { model: string; messages: { role: "system" | "user"; content: string }[]; max_tokens: number } }[] {
  const docs = Array.from({ length: 4 }, (_, d) => `Document ${d}. `.repeat(40 + 30 * d));
  const out = [];
  for (let i = 0; i < 24; i++) {
    const d = (i * 5) % 4;
    out.push({
      instance: (d + (i % 3 === 0 ? 1 : 0)) % 2,
      body: {
        model: DEFAULT_MODEL,
        messages: [
          { role: "system" as const, content: docs[d]! },
          { role: "user" as const, content: `Question ${i}: ${"why ".repeat(i)}` },
        ],
        max_tokens: 3 + (i % 4),
      },
    });
  }
  return out;
}

describe("live and virtual modes", () => {
  it("agree on cache-hit accounting for the same request sequence", async () => {
    const engine = { numGpuBlocks: 60 };
    const reqs = workload();

    const virtual = new VirtualFleet({ instances: 2, engine });
    const expected: VirtualResult[] = [];
    for (const [i, r] of reqs.entries()) {
      virtual.submit(`i${r.instance}`, { id: i, prompt: renderPrompt(r.body), outputTokens: r.body.max_tokens, model: DEFAULT_MODEL }, {
        onDone: (res) => expected.push(res),
      });
      virtual.runUntilIdle();
    }

    const fleet = await startFleet({ instances: 2, timeScale: 0.005, engine });
    try {
      const clients = fleet.urls.map((u) => new OpenAI({ baseURL: `${u}/v1`, apiKey: "unused", maxRetries: 0 }));
      const live: { instance: string | null; prompt: number; cached: number }[] = [];
      for (const r of reqs) {
        const { data, response } = await clients[r.instance]!.chat.completions.create(r.body).withResponse();
        live.push({
          instance: response.headers.get("x-prefix-router-instance"),
          prompt: data.usage!.prompt_tokens,
          cached: data.usage!.prompt_tokens_details!.cached_tokens!,
        });
      }
      expect(live).toEqual(expected.map((e) => ({ instance: e.instance, prompt: e.promptTokens, cached: e.cachedTokens })));
      // The workload exercises hits, misses and evictions.
      expect(live.some((l) => l.cached === 0)).toBe(true);
      expect(live.filter((l) => l.cached > 0).length).toBeGreaterThan(5);
      const vs = virtual.instanceStats();
      const ls = fleet.stats();
      for (const id of ["i0", "i1"]) {
        expect(ls[id]).toMatchObject({ promptTokens: vs[id]!.promptTokens, cachedTokens: vs[id]!.cachedTokens, requests: vs[id]!.requests });
      }
    } finally {
      await fleet.stop();
    }
  });
});
