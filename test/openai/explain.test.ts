/**
 * Explained decisions through the OpenAI adapter, against the emulated fleet on loopback: the
 * `x-prefix-router-reason` response header only with `explainHeader: true` and never on the
 * request sent to a replica, and the reason's figures on the request's OpenTelemetry span (the
 * real SDK's in-memory exporter).
 */
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FetchLike, type OpenAITarget, REASON_HEADER, createRoutedFetch, routeOpenAI } from "prefix-router/openai";
import { DEFAULT_MODEL, type LiveFleet, startFleet } from "prefix-router/fleet";

let fleet: LiveFleet;
let targets: OpenAITarget[];

beforeAll(async () => {
  fleet = await startFleet({ instances: 3, timeScale: 0.002, defaultMaxTokens: 4, seed: 5 });
  targets = fleet.instances.map((i) => ({ id: i.id, baseURL: `${i.url}/v1` }));
});

afterAll(async () => {
  await fleet?.stop();
});

const policy = "Refunds are granted within thirty days of purchase with a receipt. ".repeat(80);
const chat = (q: string) => JSON.stringify({ model: DEFAULT_MODEL, messages: [{ role: "system", content: policy }, { role: "user", content: q }], max_tokens: 4 });

/** The real fetch, recording the headers of every request sent to a replica. */
function recordingFetch(): { fetch: FetchLike; sent: Headers[] } {
  const sent: Headers[] = [];
  const fetch: FetchLike = (input, init) => {
    sent.push(new Headers(init?.headers));
    return globalThis.fetch(input, init);
  };
  return { fetch, sent };
}

describe("the reason header", () => {
  it("with explainHeader: every routed response says why, in name=value pairs; the replica never sees it", async () => {
    const { fetch: underlying, sent } = recordingFetch();
    const { fetch } = await createRoutedFetch({ targets, fetch: underlying, baseURL: "http://fleet.invalid/v1", explainHeader: true, concurrencyThreshold: 1 });
    const first = await fetch("http://fleet.invalid/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: chat("one?") });
    await first.json();
    expect(first.headers.get(REASON_HEADER)).toBe("kind=preferred;rank=0;inflight=0;threshold=1;predictedCachedTokens=0");
    const second = await fetch("http://fleet.invalid/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: chat("two?") });
    await second.json();
    // The key's 4,096 characters at the characters per token learned from the first response.
    expect(second.headers.get(REASON_HEADER)).toMatch(/^kind=preferred;rank=0;inflight=0;threshold=1;predictedCachedTokens=10\d\d$/);
    // Two at once on a threshold of 1: the second spills, naming the first choice as full.
    const [a, b] = await Promise.all(
      ["three?", "four?"].map((q) => fetch("http://fleet.invalid/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: chat(q) })),
    );
    await Promise.all([a!.json(), b!.json()]);
    const reasons = [a!, b!].map((r) => r.headers.get(REASON_HEADER) ?? "");
    expect(reasons.filter((r) => r.startsWith("kind=spillover;rank=1;inflight=0;threshold=1;preferred=")).length).toBe(1);
    expect(reasons.some((r) => r.includes(";preferredInflight=1;passedOver=full;"))).toBe(true);
    expect(sent).toHaveLength(4);
    for (const h of sent) expect(h.has(REASON_HEADER)).toBe(false);
  });

  it("without explainHeader: no header, and the lease is not asked to explain", async () => {
    const { fetch: underlying, sent } = recordingFetch();
    const { fetch } = await createRoutedFetch({ targets, fetch: underlying, baseURL: "http://fleet.invalid/v1", telemetry: false });
    const res = await fetch("http://fleet.invalid/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: chat("plain?") });
    await res.json();
    expect(res.headers.get(REASON_HEADER)).toBeNull();
    expect(sent[0]?.has(REASON_HEADER)).toBe(false);
    await expect(createRoutedFetch({ targets, explainHeader: "yes" as unknown as boolean })).rejects.toThrow(/`explainHeader` to be a boolean/);
  });

  it("routeOpenAI: the header reaches the openai client's raw response", async () => {
    const client = await routeOpenAI(new OpenAI({ apiKey: "x", baseURL: "http://fleet.invalid/v1", maxRetries: 0 }), { targets, explainHeader: true });
    const { response } = await client.chat.completions.create(JSON.parse(chat("raw?")) as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming).withResponse();
    expect(response.headers.get(REASON_HEADER)).toMatch(/^kind=preferred;rank=0;inflight=\d+;threshold=32;predictedCachedTokens=\d+$/);
  });
});

describe("the reason on the request's span", () => {
  it("prefix_router.reason.* attributes: kind, rank, load against the threshold, the first choice passed over, predicted tokens", async () => {
    const spans = new InMemorySpanExporter();
    const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
    const { fetch } = await createRoutedFetch({ targets, baseURL: "http://fleet.invalid/v1", concurrencyThreshold: 1, strategy: "longest-prefix", telemetry: { tracerProvider } });
    const send = (q: string) => fetch("http://fleet.invalid/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: chat(q) });
    await (await send("warm?")).json();
    const [a, b] = await Promise.all([send("x?"), send("y?")]);
    await Promise.all([a!.json(), b!.json()]);
    expect(a!.headers.get(REASON_HEADER)).toBeNull();
    const finished = spans.getFinishedSpans();
    expect(finished).toHaveLength(3);
    const warm = finished[0]!.attributes;
    expect(warm).toMatchObject({ "prefix_router.reason.kind": "preferred", "prefix_router.reason.rank": 0, "prefix_router.reason.threshold": 1, "prefix_router.reason.matched_blocks": 0 });
    const all = finished.slice(1).map((s) => s.attributes);
    const spilled = all.find((x) => x["prefix_router.reason.preferred"] !== undefined)!;
    expect(spilled).toMatchObject({ "prefix_router.reason.preferred_inflight": 1, "prefix_router.reason.passed_over": "full", "prefix_router.reason.inflight": 0 });
    const held = all.find((x) => x !== spilled)!;
    expect(held["prefix_router.reason.matched_blocks"]).toBeGreaterThan(0);
    expect(held["prefix_router.reason.matched_blocks"]).toBe(held["prefix_router.reason.longest_match_blocks"]);
    expect(held["prefix_router.reason.blocks"]).toBeGreaterThan(held["prefix_router.reason.matched_blocks"] as number);
    expect(held["prefix_router.reason.predicted_cached_tokens"]).toBe(held["prefix_router.cached_tokens.predicted"]);
  });
});
