/**
 * The same routing as a plain `fetch`, for any client that accepts one.
 *
 *   npx tsx examples/fetch-routed.ts            (against a 7-instance emulated fleet)
 *
 * With the Vercel AI SDK:   createOpenAI({ baseURL: "http://vllm-fleet/v1", apiKey: "unused", fetch })
 * With LangChain:           new ChatOpenAI({ configuration: { baseURL: "http://vllm-fleet/v1", fetch } })
 * The base URL those clients use is never contacted: pass the same one as `baseURL` here and
 * every request under it goes to the target the router picks.
 */
import { TARGET_HEADER, createRoutedFetch } from "prefix-router/openai";
import { DEFAULT_MODEL, startFleet } from "prefix-router/fleet";

const fleet = await startFleet({ instances: 7, timeScale: 0.01, defaultMaxTokens: 16 });
try {
  const { fetch, router } = await createRoutedFetch({
    targets: fleet.instances.map((i) => ({ id: i.id, baseURL: `${i.url}/v1` })),
    baseURL: "http://vllm-fleet/v1",
    // Names the serving target on each response: for debugging, never forward it to untrusted callers.
    targetHeader: true,
    onRequestEnd: (r) =>
      console.log(
        `${r.target.id} ${r.kind} attempt ${r.attempt}: ${r.status} ${r.outcome}, ` +
          `ttft ${r.ttftMs?.toFixed(1)} ms, total ${r.durationMs.toFixed(1)} ms, cached ${r.cachedTokens ?? "-"}/${r.promptTokens ?? "-"} tokens`,
      ),
  });

  const document = "Clause: the tenant may terminate with 30 days notice. ".repeat(150);
  for (const question of ["Summarise the lease.", "Can I leave early?", "What notice is needed?"]) {
    // A hand-written call: JSON in, JSON out.
    const response = await fetch("http://vllm-fleet/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: DEFAULT_MODEL,
        messages: [
          { role: "system", content: document },
          { role: "user", content: question },
        ],
        max_tokens: 16,
      }),
    });
    const completion = (await response.json()) as { usage?: { prompt_tokens_details?: { cached_tokens?: number } } };
    console.log(`  -> served by ${response.headers.get(TARGET_HEADER)}, cached ${completion.usage?.prompt_tokens_details?.cached_tokens} tokens`);
  }

  // A request without a prompt goes by least-outstanding.
  const models = await fetch("http://vllm-fleet/v1/models");
  console.log(`models: ${JSON.stringify(((await models.json()) as { data: { id: string }[] }).data.map((m) => m.id))}`);

  const stats = router.stats();
  console.log(`in flight ${stats.totals.inflight}, cached-token ratio ${stats.totals.cachedTokenRatio?.toFixed(3)}`);
} finally {
  await fleet.stop();
}
