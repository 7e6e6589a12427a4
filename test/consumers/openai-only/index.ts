// ESM: every entry point an OpenAI user may import, with openai installed and no AWS SDK.
import OpenAI from "openai";
import { type RouterStats, canonicalize, createRouter } from "prefix-router";
import { routeOpenAI as fromRoot } from "prefix-router/openai";
import { DEFAULT_RESPONSE_AFFINITY, type OpenAITarget, type RoutedRequestInfo, createRoutedFetch, getRouter, routeOpenAI } from "prefix-router/openai";
import { startFleet } from "prefix-router/fleet";
import { runBenchmark } from "prefix-router/bench";

const targets: OpenAITarget[] = [{ id: "a", baseURL: "http://127.0.0.1:8000/v1" }];
const client: OpenAI = await routeOpenAI(new OpenAI({ apiKey: "x" }), {
  targets,
  responseAffinity: { maxEntries: DEFAULT_RESPONSE_AFFINITY.maxEntries },
  onRequestEnd: (info: RoutedRequestInfo) => void info.ttftMs,
});
const same: OpenAI = await fromRoot(new OpenAI({ apiKey: "x" }), { targets });
const response = await client.responses.create({ model: "m", input: "hi", previous_response_id: "resp_1" });
const stats: RouterStats | undefined = getRouter(same)?.stats();
const { fetch } = await createRoutedFetch({ targets });
const router = await createRouter({ targets: [{ id: "a" }] });
export const used = [response.output_text, stats?.totals.affinity, fetch, router.route({ body: canonicalize({}) }), startFleet, runBenchmark];
