/**
 * Export the router's OpenTelemetry metrics to Prometheus, and put its stats of several processes
 * together.
 *
 *   npx tsx examples/otel-prometheus.ts
 *       starts a 3-instance emulated vLLM fleet on loopback, sends a few requests through a routed
 *       openai client, and prints what a Prometheus scrape of http://127.0.0.1:9464/metrics gets.
 *
 * In an application only the first lines matter: a MeterProvider with the Prometheus exporter,
 * handed to the router (or registered globally with `metrics.setGlobalMeterProvider`, which the
 * router uses by default).
 */
import { PrometheusExporter } from "@opentelemetry/exporter-prometheus";
import { MeterProvider } from "@opentelemetry/sdk-metrics";
import OpenAI from "openai";
import { mergeStats } from "prefix-router";
import { getRouter, routeOpenAI } from "prefix-router/openai";
import { DEFAULT_MODEL, startFleet } from "prefix-router/fleet";

const exporter = new PrometheusExporter({ host: "127.0.0.1", port: 9464 }); // serves /metrics
const meterProvider = new MeterProvider({ readers: [exporter] });

const fleet = await startFleet({ instances: 3, timeScale: 0.01, defaultMaxTokens: 8 });
const client = await routeOpenAI(new OpenAI({ apiKey: "unused", baseURL: "http://vllm-fleet/v1" }), {
  targets: fleet.instances.map((i) => ({ id: i.id, baseURL: `${i.url}/v1` })),
  telemetry: { meterProvider },
  logger: console, // ejections, spill storms, stale cache predictions
});

try {
  const policy = "Refunds are granted within thirty days of purchase with a receipt. ".repeat(80);
  for (let i = 0; i < 6; i++) {
    await client.chat.completions.create({
      model: DEFAULT_MODEL,
      messages: [
        { role: "system", content: policy },
        { role: "user", content: `Question ${i}?` },
      ],
      max_tokens: 8,
    });
  }
  const scrape = await (await fetch("http://127.0.0.1:9464/metrics")).text();
  const wanted = /^(prefix_router|gen_ai)_\w*(_total|_count)\{/;
  console.log(scrape.split("\n").filter((line) => wanted.test(line)).join("\n"));

  // stats() is JSON: collect it from every process, merge, read fleet-wide percentiles.
  const fromEachProcess = [JSON.stringify(getRouter(client)!.stats())];
  const merged = mergeStats(fromEachProcess.map((json) => JSON.parse(json)));
  console.log(`TTFT P99 over every process: ${merged.totals.ttftMs?.p99} ms; predicted vs served cached tokens: ${merged.totals.predictedCachedTokens} / ${merged.totals.cachedTokens}`);
} finally {
  await exporter.shutdown();
  await fleet.stop();
}
