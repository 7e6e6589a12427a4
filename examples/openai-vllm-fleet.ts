/**
 * Route an openai client across a vLLM fleet, streaming included, and print what the router saw.
 *
 *   npx tsx examples/openai-vllm-fleet.ts
 *       starts a 7-instance emulated vLLM fleet on loopback (100× faster than real time) and uses it;
 *   VLLM_URLS=http://10.0.0.10:8000/v1,http://10.0.0.11:8000/v1 MODEL=meta-llama/Llama-3.1-70B-Instruct \
 *     npx tsx examples/openai-vllm-fleet.ts
 *       uses your own fleet (vLLM reports cached tokens with --enable-prompt-tokens-details).
 *
 * Workload: 12 support tenants, each with its own long policy document as system prompt, ask 10
 * rounds of streamed questions, all tenants at once in each round. Each tenant's requests land
 * on one replica (its `prompt_cache_key` is the tenant id), whose prefix cache then serves the
 * policy document from the second round on.
 */
import OpenAI from "openai";
import { getRouter, routeOpenAI } from "prefix-router/openai";
import { DEFAULT_MODEL, startFleet } from "prefix-router/fleet";

const urls = process.env.VLLM_URLS?.split(",").filter((u) => u.length > 0);
const model = process.env.MODEL ?? DEFAULT_MODEL;
const fleet = urls === undefined ? await startFleet({ instances: 7, timeScale: 0.01, defaultMaxTokens: 32 }) : undefined;
const targets = urls?.map((baseURL, i) => ({ id: `vllm-${i}`, baseURL })) ?? fleet!.instances.map((i) => ({ id: i.id, baseURL: `${i.url}/v1` }));

// The client an application already has. Its baseURL is replaced by the targets' on every request.
const client = await routeOpenAI(new OpenAI({ apiKey: process.env.OPENAI_API_KEY ?? "unused", baseURL: "http://vllm-fleet/v1" }), {
  targets,
  concurrencyThreshold: 8,
  ejection: { consecutiveFailures: 3, baseEjectionMs: 5_000 },
});

function policy(tenant: string): string {
  const rules = Array.from({ length: 120 }, (_, i) => `${tenant} policy §${i}: refunds within ${i + 14} days, escalate case type ${i}.`);
  return `You are the support assistant of ${tenant}.\n${rules.join("\n")}`;
}

const tenants = ["acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne", "wonka", "tyrell", "cyberdyne", "soylent", "aperture"];
try {
  for (let round = 0; round < 10; round++) {
    await Promise.all(
      tenants.map(async (tenant) => {
        const i = round * tenants.length + tenants.indexOf(tenant);
        const stream = await client.chat.completions.create({
          model,
          messages: [
            { role: "system", content: policy(tenant) },
            { role: "user", content: `Question ${i}: can I return an opened item?` },
          ],
          prompt_cache_key: tenant,
          stream: true,
          stream_options: { include_usage: true }, // the last chunk carries usage, cached tokens included
          max_tokens: 32,
        });
        for await (const _chunk of stream) {
          // an application would render chunk.choices[0]?.delta.content here
        }
      }),
    );
  }

  const { targets: perTarget, totals } = getRouter(client)!.stats();
  const ms = (v: number | undefined) => (v === undefined ? "-" : v.toFixed(1));
  console.table(
    perTarget.map((t) => ({
      target: t.id,
      share: `${(t.share * 100).toFixed(1)} %`,
      spillover: `${(t.spilloverRate * 100).toFixed(1)} %`,
      "ttft p50 ms": ms(t.ttftMs?.p50),
      "ttft p90 ms": ms(t.ttftMs?.p90),
      "ttft p99 ms": ms(t.ttftMs?.p99),
      "cached tokens": t.cachedTokenRatio === null ? "-" : `${(t.cachedTokenRatio * 100).toFixed(1)} %`,
      inflight: t.inflight,
    })),
  );
  console.log(
    `routed ${totals.routed}, spillover ${(totals.spilloverRate * 100).toFixed(1)} %, ` +
      `cached-token ratio ${totals.cachedTokenRatio === null ? "n/a" : `${(totals.cachedTokenRatio * 100).toFixed(1)} %`}, ` +
      `TTFT p50 ${ms(totals.ttftMs?.p50)} ms (wall clock; the emulated fleet runs ${urls === undefined ? "100×" : "1×"} real time)`,
  );
} finally {
  await fleet?.stop();
}
