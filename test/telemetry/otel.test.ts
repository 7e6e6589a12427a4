/**
 * OpenTelemetry end to end: the real OpenTelemetry SDK (in-memory metric and span exporters, the
 * W3C trace-context propagator) behind routed openai and SageMaker clients, against the emulated
 * fleet on loopback, which records the `traceparent` each request carried.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { InvokeEndpointCommand, InvokeEndpointWithResponseStreamCommand, SageMakerRuntimeClient } from "@aws-sdk/client-sagemaker-runtime";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader, type ResourceMetrics } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type TelemetryOptions, createRouter } from "prefix-router";
import { type OpenAITarget, routeOpenAI } from "prefix-router/openai";
import { routeSageMaker } from "prefix-router/sagemaker";
import { DEFAULT_MODEL, type LiveFleet, startFleet } from "prefix-router/fleet";

let fleet: LiveFleet;
let spans: InMemorySpanExporter;
let metrics: InMemoryMetricExporter;
let reader: PeriodicExportingMetricReader;
let telemetry: TelemetryOptions;
const clients: SageMakerRuntimeClient[] = [];

beforeAll(async () => {
  fleet = await startFleet({ instances: 3, timeScale: 0.002, defaultMaxTokens: 4, seed: 3 });
});

afterAll(async () => {
  for (const c of clients) c.destroy();
  await fleet?.stop();
});

beforeEach(() => {
  spans = new InMemorySpanExporter();
  metrics = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  reader = new PeriodicExportingMetricReader({ exporter: metrics, exportIntervalMillis: 3_600_000 });
  telemetry = {
    meterProvider: new MeterProvider({ readers: [reader] }),
    tracerProvider: new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }),
    propagator: new W3CTraceContextPropagator(),
  };
});

/** Every data point of the metric `name` from a fresh collection: its attributes and value. */
async function points(name: string): Promise<{ attributes: Record<string, unknown>; value: unknown }[]> {
  metrics.reset();
  await reader.forceFlush();
  const all: ResourceMetrics[] = metrics.getMetrics();
  const out: { attributes: Record<string, unknown>; value: unknown }[] = [];
  for (const rm of all.slice(-1)) {
    for (const sm of rm.scopeMetrics) {
      for (const m of sm.metrics) {
        if (m.descriptor.name !== name) continue;
        for (const p of m.dataPoints) out.push({ attributes: { ...p.attributes }, value: p.value });
      }
    }
  }
  return out;
}

const sum = (ps: { value: unknown }[]) => ps.reduce((s, p) => s + (p.value as number), 0);
const count = (ps: { value: unknown }[]) => ps.reduce((s, p) => s + (p.value as { count: number }).count, 0);

/** A long shared beginning (≈ 1,300 tokens), then a question. */
function body(question: string): OpenAI.Chat.ChatCompletionCreateParamsNonStreaming {
  const policy = "Refunds are granted within thirty days of purchase with a receipt. ".repeat(80);
  return { model: DEFAULT_MODEL, messages: [{ role: "system", content: policy }, { role: "user", content: question }], max_tokens: 4 };
}

/** The `traceparent` a span's context is written as. */
const traceparentOf = (span: ReadableSpan) => `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`;

/** A loopback port nothing listens on (it was listening a moment ago). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function receivedAnywhere(): string[] {
  return fleet.instances.flatMap((i) => i.traceparents());
}

describe("OpenTelemetry — openai client", () => {
  let client: OpenAI;
  beforeEach(async () => {
    const targets: OpenAITarget[] = fleet.instances.map((i) => ({ id: i.id, baseURL: `${i.url}/v1` }));
    client = await routeOpenAI(new OpenAI({ apiKey: "x", baseURL: "http://fleet.invalid/v1", maxRetries: 0 }), { targets, telemetry });
  });

  it("one span per request, with target, strategy, pick kind, routing key, predicted and actual cached tokens; the replica got its traceparent", async () => {
    await client.chat.completions.create(body("first?"));
    await client.chat.completions.create(body("second?"));
    const [first, second] = spans.getFinishedSpans();
    expect(spans.getFinishedSpans()).toHaveLength(2);
    expect(second!.name).toBe(`chat ${DEFAULT_MODEL}`);
    expect(second!.kind).toBe(2); // CLIENT
    const a = second!.attributes;
    expect(a).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": DEFAULT_MODEL,
      "prefix_router.strategy": "prefix-aware",
      "prefix_router.target": first!.attributes["prefix_router.target"],
      "prefix_router.pick.kind": "preferred",
      "prefix_router.rank": 0,
      "prefix_router.attempts": 1,
      "prefix_router.outcome": "success",
      "server.address": "127.0.0.1",
    });
    // The key's 4,096 characters at the characters per token learned from the first response.
    expect(a["prefix_router.cached_tokens.predicted"]).toBeGreaterThanOrEqual(1000);
    expect(a["prefix_router.cached_tokens.predicted"]).toBeLessThanOrEqual(1100);
    expect(a["prefix_router.routing_key"]).toMatch(/^[0-9a-f]{16}$/);
    expect(first!.attributes["prefix_router.cached_tokens.predicted"]).toBe(0);
    expect(a["gen_ai.usage.input_tokens"]).toBeGreaterThan(1300);
    expect(a["gen_ai.usage.cache_read.input_tokens"]).toBeGreaterThan(1200);
    expect(second!.events.map((e) => e.name)).toEqual(["prefix_router.attempt"]);
    expect(receivedAnywhere()).toEqual(expect.arrayContaining([traceparentOf(first!), traceparentOf(second!)]));
    const served = fleet.instance(String(a["prefix_router.target"]));
    expect(served.traceparents()).toContain(traceparentOf(second!));
  });

  it("a streamed request's span ends with its body, with the time to the first chunk", async () => {
    const stream = await client.chat.completions.create({ ...body("stream?"), stream: true, stream_options: { include_usage: true } });
    expect(spans.getFinishedSpans()).toHaveLength(0);
    for await (const _ of stream) {
      // read to the end
    }
    const [span] = spans.getFinishedSpans();
    expect(span!.attributes["gen_ai.response.time_to_first_chunk"]).toBeGreaterThan(0);
    expect(span!.attributes["gen_ai.usage.cache_read.input_tokens"]).toBeTypeOf("number");
    expect(receivedAnywhere()).toContain(traceparentOf(span!));
    const ttfc = await points("gen_ai.client.operation.time_to_first_chunk");
    expect(count(ttfc)).toBe(1);
    expect(ttfc[0]!.attributes).toMatchObject({ "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai" });
  });

  it("metrics: requests by target, strategy and kind; decision time; in flight back to 0; GenAI duration and tokens; predicted vs cached", async () => {
    for (let i = 0; i < 3; i++) await client.chat.completions.create(body(`q${i}?`));
    const requests = await points("prefix_router.requests");
    expect(sum(requests)).toBe(3);
    expect(requests[0]!.attributes).toMatchObject({ "prefix_router.strategy": "prefix-aware", "prefix_router.pick.kind": "preferred" });
    expect(requests[0]!.attributes["prefix_router.target"]).toMatch(/^i\d$/);
    expect(count(await points("prefix_router.decision.duration"))).toBe(3);
    expect(sum(await points("prefix_router.inflight"))).toBe(0);
    const duration = await points("gen_ai.client.operation.duration");
    expect(count(duration)).toBe(3);
    expect(duration[0]!.attributes).toMatchObject({ "gen_ai.operation.name": "chat", "gen_ai.request.model": DEFAULT_MODEL, "server.address": "127.0.0.1" });
    expect(count(await points("gen_ai.client.operation.time_to_first_chunk"))).toBe(0);
    const usage = await points("gen_ai.client.token.usage");
    expect(usage.map((p) => p.attributes["gen_ai.token.type"])).toEqual(["input"]);
    const tokens = await points("prefix_router.tokens");
    const byType = (t: string) => sum(tokens.filter((p) => p.attributes["prefix_router.token.type"] === t));
    expect(byType("prompt")).toBeGreaterThan(3 * 1300);
    expect(byType("predicted_cached")).toBeGreaterThanOrEqual(2 * 1000);
    expect(byType("predicted_cached")).toBeLessThanOrEqual(2 * 1100);
    expect(byType("cached")).toBeGreaterThan(2 * 1200);
    expect(sum(await points("prefix_router.predictions"))).toBe(2);
  });

  it("a request that fails on every attempt: attempts as events, an error status, error.type", async () => {
    const port = await closedPort();
    const dead = [{ id: "dead-1", baseURL: `http://127.0.0.1:${port}/v1` }, { id: "dead-2", baseURL: `http://127.0.0.1:${port}/v1` }];
    const failing = await routeOpenAI(new OpenAI({ apiKey: "x", baseURL: "http://fleet.invalid/v1", maxRetries: 0 }), { targets: dead, telemetry });
    await expect(failing.chat.completions.create(body("anyone?"))).rejects.toThrow();
    const [span] = spans.getFinishedSpans();
    expect(span!.status.code).toBe(2); // ERROR
    expect(span!.attributes).toMatchObject({ "prefix_router.attempts": 2, "prefix_router.outcome": "connect-error", "error.type": "ECONNREFUSED" });
    expect(span!.events.map((e) => [e.name, e.attributes?.["prefix_router.attempt"], e.attributes?.["prefix_router.outcome"]])).toEqual([
      ["prefix_router.attempt", 1, "connect-error"],
      ["prefix_router.attempt", 2, "connect-error"],
      ["exception", undefined, undefined],
    ]);
    const duration = await points("gen_ai.client.operation.duration");
    expect(duration[0]!.attributes["error.type"]).toBe("ECONNREFUSED");
  });
});

describe("OpenTelemetry — SageMaker client", () => {
  it("InvokeEndpoint and InvokeEndpointWithResponseStream: a span each, traceparent on the wire, cached tokens read from the body", async () => {
    const clientFor = (url: string) => {
      const c = new SageMakerRuntimeClient({ endpoint: url, region: "us-east-1", credentials: { accessKeyId: "t", secretAccessKey: "t" }, maxAttempts: 1 });
      clients.push(c);
      return c;
    };
    const base = clientFor(fleet.urls[0]!);
    const sm = await routeSageMaker(base, {
      targets: fleet.instances.map((inst, i) => ({ id: inst.id, endpointName: `llm-${inst.id}`, ...(i === 0 ? {} : { client: clientFor(inst.url) }) })),
      telemetry,
    });
    const payload = JSON.stringify(body("sagemaker?"));
    await sm.send(new InvokeEndpointCommand({ EndpointName: "e", Body: payload, ContentType: "application/json" }));
    const out = await sm.send(new InvokeEndpointWithResponseStreamCommand({ EndpointName: "e", Body: payload, ContentType: "application/json" }));
    for await (const _ of out.Body!) {
      // read to the end
    }
    const [invoke, stream] = spans.getFinishedSpans();
    for (const span of [invoke!, stream!]) {
      expect(span.name).toBe(`chat ${DEFAULT_MODEL}`);
      expect(span.attributes).toMatchObject({ "gen_ai.provider.name": "aws.sagemaker", "prefix_router.attempts": 1, "prefix_router.outcome": "success" });
      expect(fleet.instance(String(span.attributes["prefix_router.target"])).traceparents()).toContain(traceparentOf(span));
    }
    expect(stream!.attributes["prefix_router.cached_tokens.predicted"]).toBeGreaterThanOrEqual(1000);
    expect(stream!.attributes["prefix_router.cached_tokens.predicted"]).toBeLessThanOrEqual(1100);
    expect(stream!.attributes["gen_ai.usage.cache_read.input_tokens"]).toBeGreaterThan(1200);
    expect(stream!.attributes["gen_ai.response.time_to_first_chunk"]).toBeGreaterThan(0);
    expect(invoke!.attributes["gen_ai.response.time_to_first_chunk"]).toBeUndefined();
    expect(sum(await points("prefix_router.requests"))).toBe(2);
  });
});

describe("OpenTelemetry — defaults", () => {
  it("without an SDK the global providers record nothing, and routing works", async () => {
    const router = await createRouter({ targets: [{ id: "a" }, { id: "b" }] });
    router.route({ body: body("x") }).release();
    expect(router.stats().totals.routed).toBe(1);
  });

  it("checks the telemetry option", async () => {
    await expect(createRouter({ targets: [{ id: "a" }], telemetry: { meterProvider: {} as never } })).rejects.toThrow(
      "Expected `telemetry.meterProvider` to be an object with a getMeter() method, got an object",
    );
    await expect(createRouter({ targets: [{ id: "a" }], telemetry: "on" as never })).rejects.toThrow(TypeError);
    await expect(createRouter({ targets: [{ id: "a" }], telemetry: false })).resolves.toBeDefined();
  });
});
