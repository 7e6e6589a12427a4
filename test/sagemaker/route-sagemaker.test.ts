/**
 * routeSageMaker end to end: the real AWS SDK v3 client against the emulated fleet's SageMaker
 * Runtime endpoints on loopback. Each instance is its own server, so each target carries its
 * own client (the first uses the wrapped client). What went on the wire is read by a
 * finalizeRequest-step middleware on the clients (inside the SDK's retry loop: one entry per
 * HTTP attempt); which instance served is read from the response's `CustomAttributes`.
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import {
  InvokeEndpointAsyncCommand,
  InvokeEndpointCommand,
  InvokeEndpointWithResponseStreamCommand,
  ModelError,
  ModelStreamError,
  SageMakerRuntime,
  SageMakerRuntimeClient,
  ServiceUnavailable,
  ValidationError,
} from "@aws-sdk/client-sagemaker-runtime";
import type { ServiceInputTypes, ServiceOutputTypes } from "@aws-sdk/client-sagemaker-runtime";
import type { FinalizeRequestMiddleware, SerializeMiddleware } from "@smithy/types";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { canonicalize, createRouter, isRouterError } from "prefix-router";
import { getRouter } from "prefix-router/openai";
import { routeSageMaker as routeSageMakerFromRoot } from "prefix-router/sagemaker";
import { DEFAULT_SAGEMAKER_MODE, type RouteSageMakerOptions, type SageMakerTarget, routeSageMaker } from "prefix-router/sagemaker";
import { DEFAULT_MODEL, type FaultKnobs, type LiveFleet, startFleet } from "prefix-router/fleet";

const LORA = "support-lora";

interface Sent {
  port: number;
  path: string;
  headers: Record<string, string>;
  body: string;
}

let fleet: LiveFleet;
/** Every HTTP attempt any test client made, in order. */
let sent: Sent[] = [];
const clients: SageMakerRuntimeClient[] = [];

beforeAll(async () => {
  fleet = await startFleet({
    instances: 7,
    timeScale: 0.005,
    models: [DEFAULT_MODEL, LORA],
    sagemaker: { variants: ["AllTraffic", "blue", "green"], inferenceComponents: { "ic-base": DEFAULT_MODEL, "ic-lora": LORA } },
  });
});

afterEach(async () => {
  sent = [];
  for (const inst of fleet.instances) {
    if (inst.faults.down || inst.faults.notReady || inst.faults.errorRate > 0 || inst.faults.streamErrorRate > 0 || inst.faults.resetStreamRate > 0) {
      await inst.setFaults({ down: false, notReady: false, errorRate: 0, errorStatus: 500, streamErrorRate: 0, resetStreamRate: 0 });
    }
  }
});

afterAll(async () => {
  for (const c of clients) c.destroy();
  await fleet.stop();
});

const recorder: FinalizeRequestMiddleware<ServiceInputTypes, ServiceOutputTypes> = (next) => async (args) => {
  const req = (args as { request: { port?: number; path: string; headers: Record<string, string>; body?: unknown } }).request;
  const body = req.body;
  sent.push({
    port: req.port ?? 0,
    path: req.path,
    headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k.toLowerCase(), v])),
    body: typeof body === "string" ? body : body instanceof Uint8Array ? new TextDecoder().decode(body) : "",
  });
  return next(args);
};

/** A real SDK client for one instance, recording what it sends. */
function clientFor(url: string, sdkAttempts = 1): SageMakerRuntimeClient {
  const client = new SageMakerRuntimeClient({
    endpoint: url,
    region: "us-east-1",
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
    maxAttempts: sdkAttempts,
  });
  client.middlewareStack.add(recorder, { step: "finalizeRequest", priority: "low", name: "testRecorder" });
  clients.push(client);
  return client;
}

/** One target per instance; the first one sends through the wrapped client. */
function instanceTargets(base: SageMakerRuntimeClient, extra: Partial<SageMakerTarget> = {}): SageMakerTarget[] {
  return fleet.instances.map((inst, i) => ({
    id: inst.id,
    endpointName: `llm-${inst.id}`,
    ...(i === 0 ? {} : { client: clientFor(inst.url) }),
    ...extra,
  }));
}

async function routed(options: Partial<RouteSageMakerOptions> = {}, base = clientFor(fleet.urls[0] as string)) {
  return routeSageMaker(base, { targets: instanceTargets(base), ...options });
}

/** A chat body whose first 4 KiB (canonical) are the system prompt of `topic`. */
function chatBody(topic: string, question: string, maxTokens = 4): Record<string, unknown> {
  const policy = `Policy for ${topic}. ` + "Refunds are granted within thirty days of purchase with a receipt. ".repeat(90);
  return {
    messages: [
      { role: "system", content: policy },
      { role: "user", content: question },
    ],
    max_tokens: maxTokens,
  };
}

const json = (v: unknown, indent?: number): string => JSON.stringify(v, null, indent);
const text = (b: Uint8Array | undefined): string => new TextDecoder().decode(b);

/** The instance id and token counts the fleet reports in `CustomAttributes`. */
function servedBy(attributes: string | undefined): { instance: string; prompt: number; cached: number } {
  const fields = Object.fromEntries((attributes ?? "").split(",").map((kv) => kv.split("=") as [string, string]));
  return { instance: fields.instance ?? "", prompt: Number(fields.prompt_tokens), cached: Number(fields.cached_tokens) };
}

const portOf = (id: string): number => fleet.instance(id).port;
const invoke = (body: string | Uint8Array, extra: Record<string, unknown> = {}) =>
  new InvokeEndpointCommand({ EndpointName: "users-endpoint", Body: body, ContentType: "application/json", ...extra });
const invokeStream = (body: string | Uint8Array, extra: Record<string, unknown> = {}) =>
  new InvokeEndpointWithResponseStreamCommand({ EndpointName: "users-endpoint", Body: body, ContentType: "application/json", ...extra });

function statsOf(sm: { router: { stats(): { targets: { id: string }[] } } }, id: string) {
  const s = sm.router.stats().targets.find((t) => t.id === id);
  if (s === undefined) throw new Error(`no stats for ${id}`);
  return s as ReturnType<Awaited<ReturnType<typeof routed>>["router"]["stats"]>["targets"][number];
}

describe("affinity", () => {
  it("sends every request of a prefix to the key's first choice, whose cache then serves it", async () => {
    const sm = await routed();
    const topics = Array.from({ length: 12 }, (_, i) => `product line ${i}`);
    const used = new Set<string>();
    for (const topic of topics) {
      const expected = sm.router.rank({ body: json(chatBody(topic, "q")) }).targets[0]?.id;
      for (let q = 0; q < 3; q++) {
        const out = await sm.send(invoke(json(chatBody(topic, `question ${q}?`))));
        const served = servedBy(out.CustomAttributes);
        expect(served.instance).toBe(expected);
        if (q > 0) expect(served.cached).toBeGreaterThan(1000);
        used.add(served.instance);
      }
    }
    expect(used.size).toBeGreaterThan(3);
    const totals = sm.router.stats().totals;
    expect(totals.routed).toBe(36);
    expect(totals.preferred).toBe(36);
    expect(totals.inflight).toBe(0);
    // 24 of the 36 requests re-read a ~1,500-token prompt from cache.
    expect(totals.cachedTokenRatio).toBeGreaterThan(0.5);
  });

  it("routes equivalent bodies (key order, whitespace, bytes or text) to the same target and sends identical bytes", async () => {
    const sm = await routed();
    const body = chatBody("warranty", "Does it cover water damage?");
    const reordered = { max_tokens: body.max_tokens, messages: body.messages };
    const variants: (string | Uint8Array)[] = [json(body), json(reordered, 2), new TextEncoder().encode(`\n ${json(body, 4)}\n`)];
    const served: string[] = [];
    for (const v of variants) served.push(servedBy((await sm.send(invoke(v))).CustomAttributes).instance);
    expect(new Set(served).size).toBe(1);
    expect(sent.map((s) => s.body)).toEqual(variants.map(() => canonicalize(body)));
  });
});

describe("spillover", () => {
  it("goes down the key's ranking when the preferred target is at concurrencyThreshold, and back once leases end", async () => {
    const sm = await routed({ concurrencyThreshold: 1 });
    const body = json(chatBody("hot prefix", "q", 8));
    const ranking = sm.router.rank({ body }).targets.map((t) => t.id);
    const streams = [];
    for (let i = 0; i < 3; i++) streams.push(await sm.send(invokeStream(body)));
    expect(streams.map((s) => servedBy(s.CustomAttributes).instance)).toEqual(ranking.slice(0, 3));
    expect(sm.router.stats().totals).toMatchObject({ inflight: 3, preferred: 1, spillover: 2 });
    for (const s of streams) for await (const _ of s.Body ?? []) void _;
    expect(sm.router.stats().totals.inflight).toBe(0);
    const again = await sm.send(invoke(body));
    expect(servedBy(again.CustomAttributes).instance).toBe(ranking[0]);
  });
});

describe("streaming lease", () => {
  it("holds the lease until the event stream ends, then records TTFT and the usage of the last SSE chunk", async () => {
    const sm = await routed();
    const body = json(chatBody("streams", "Tell me more.", 6));
    const first = sm.router.rank({ body }).targets[0]?.id as string;
    const warm = servedBy((await sm.send(invoke(body))).CustomAttributes); // warms the cache
    const out = await sm.send(invokeStream(body));
    expect(statsOf(sm, first).inflight).toBe(1);
    let payload = "";
    for await (const event of out.Body ?? []) {
      expect(statsOf(sm, first).inflight).toBe(1);
      payload += text(event.PayloadPart?.Bytes);
    }
    const s = statsOf(sm, first);
    expect(s.inflight).toBe(0);
    expect(s.ttftMs?.count).toBe(2);
    expect(s.failures).toBe(0);
    const usageLine = payload.split("\n").find((l) => l.includes('"usage"')) as string;
    const usage = (JSON.parse(usageLine.slice("data: ".length)) as { usage: { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } } }).usage;
    expect(usage.prompt_tokens_details.cached_tokens).toBeGreaterThan(1000);
    // Both requests' usage is counted: the warm-up's from its JSON body, the stream's from its last SSE chunk.
    expect(s.cachedTokens).toBe(warm.cached + usage.prompt_tokens_details.cached_tokens);
    expect(s.promptTokens).toBe(warm.prompt + usage.prompt_tokens);
  });

  it("releases the lease once when the consumer breaks out early, and the stream then stays ended", async () => {
    const sm = await routed();
    const body = json(chatBody("early exit", "q", 40));
    const first = sm.router.rank({ body }).targets[0]?.id as string;
    const out = await sm.send(invokeStream(body));
    const stream = out.Body;
    if (stream === undefined) throw new Error("no body");
    for await (const _ of stream) break;
    expect(statsOf(sm, first)).toMatchObject({ inflight: 0, failures: 0 });
    const again = await stream[Symbol.asyncIterator]().next();
    expect(again.done).toBe(true);
    expect(sm.router.stats().totals.inflight).toBe(0);
  });

  /** A routed client whose first choice for `topic` has `faults` set, and the stream it answered. */
  async function faultyStream(topic: string, faults: Partial<FaultKnobs>) {
    const sm = await routed();
    const body = json(chatBody(topic, "q", 10));
    const first = sm.router.rank({ body }).targets[0]?.id as string;
    await fleet.instance(first).setFaults(faults);
    return { sm, first, out: await sm.send(invokeStream(body)) };
  }

  it("releases the lease as a server error when the stream fails with ModelStreamError, and never retries it", async () => {
    const { sm, first, out } = await faultyStream("stream error", { streamErrorRate: 1 });
    const events: unknown[] = [];
    await expect(
      (async () => {
        for await (const e of out.Body ?? []) events.push(e);
      })(),
    ).rejects.toBeInstanceOf(ModelStreamError);
    expect(events.length).toBeGreaterThan(0);
    expect(statsOf(sm, first)).toMatchObject({ inflight: 0, failures: 1, routed: 1 });
    expect(sm.router.stats().totals.routed).toBe(1);
    expect(sent).toHaveLength(1);
  });

  it("releases the lease as a connection failure when the connection is reset mid-stream", async () => {
    const { sm, first, out } = await faultyStream("stream reset", { resetStreamRate: 1 });
    await expect(
      (async () => {
        for await (const _ of out.Body ?? []) void _;
      })(),
    ).rejects.toThrow();
    expect(statsOf(sm, first)).toMatchObject({ inflight: 0, failures: 1 });
    expect(sm.router.stats().totals.routed).toBe(1);
  });

  it("releases the lease of a stream dropped unread once it is garbage-collected", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const sm = await routed();
    const body = json(chatBody("abandoned", "q", 4));
    await (async () => {
      const out = await sm.send(invokeStream(body));
      expect(out.Body).toBeDefined();
    })();
    expect(sm.router.stats().totals.inflight).toBe(1);
    for (let i = 0; i < 50 && sm.router.stats().totals.inflight > 0; i++) {
      gc();
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(sm.router.stats().totals.inflight).toBe(0);
  });
});

describe("tenants", () => {
  it("gives each PrefixAwareId its own placement for the same body, and forwards it unchanged", async () => {
    const sm = await routed();
    const body = json(chatBody("shared system prompt", "q"));
    const firstOf = (tenant: string) => sm.router.rank({ body, tenant }).targets[0]?.id;
    const a = "tenant-a";
    const b = ["tenant-b", "tenant-c", "tenant-d", "tenant-e", "tenant-f"].find((t) => firstOf(t) !== firstOf(a)) as string;
    expect(b).toBeDefined();
    const outA = await sm.send(invoke(body, { PrefixAwareId: a }));
    const outB = await sm.send(invoke(body, { PrefixAwareId: b }));
    expect(servedBy(outA.CustomAttributes).instance).toBe(firstOf(a));
    expect(servedBy(outB.CustomAttributes).instance).toBe(firstOf(b));
    expect(sent.map((s) => s.headers["x-amzn-sagemaker-prefix-aware-id"])).toEqual([a, b]);
  });

  it("puts the tenant header on the request itself when the SDK did not serialize PrefixAwareId", async () => {
    const base = clientFor(fleet.urls[0] as string);
    // An SDK whose model predates PrefixAwareId: drop what the serializer produced.
    const dropHeader: SerializeMiddleware<ServiceInputTypes, ServiceOutputTypes> = (next) => async (args) => {
      const headers = (args as { request?: { headers?: Record<string, string> } }).request?.headers ?? {};
      for (const h of Object.keys(headers)) if (h.toLowerCase() === "x-amzn-sagemaker-prefix-aware-id") delete headers[h];
      return next(args);
    };
    base.middlewareStack.add(dropHeader, { step: "serialize", priority: "low", name: "dropPrefixAwareId" });
    const sm = await routeSageMaker(base, { targets: [{ id: "only", endpointName: "llm" }] });
    await sm.send(invoke(json(chatBody("old sdk", "q")), { PrefixAwareId: "tenant-old" }));
    await sm.send(invoke(json(chatBody("old sdk", "q"))));
    expect(sent.map((s) => s.headers["x-amzn-sagemaker-prefix-aware-id"])).toEqual(["tenant-old", undefined]);
  });

  it("rejects a PrefixAwareId that is not 1-64 printable ASCII with ERR_INVALID_TENANT, sending nothing", async () => {
    const sm = await routed();
    const error = await sm.send(invoke(json(chatBody("t", "q")), { PrefixAwareId: "x".repeat(65) })).catch((e: unknown) => e);
    expect(isRouterError(error) && error.code).toBe("ERR_INVALID_TENANT");
    expect(sent).toHaveLength(0);
  });

  it("feeds PrefixAwareId and, with isolation, cache_salt in the canonical body from one tenant function", async () => {
    const decisions: (string | undefined)[] = [];
    const sm = await routed({
      tenant: ({ body }) => (body as { user?: string }).user,
      isolation: "tenant",
      onDecision: (d) => decisions.push(d.tenant),
    });
    const body = { ...chatBody("tenant function", "q"), user: "acme" };
    const out = await sm.send(invoke(json(body, 2)));
    await sm.send(invoke(json(body), { PrefixAwareId: "globex" }));
    await sm.send(invoke(json(chatBody("tenant function", "q"))));
    expect(decisions).toEqual(["acme", "globex", undefined]);
    expect(sent.map((s) => s.headers["x-amzn-sagemaker-prefix-aware-id"])).toEqual(["acme", "globex", undefined]);
    expect(sent[0]!.body).toBe(canonicalize({ ...body, cache_salt: "acme" }));
    expect(JSON.parse(sent[1]!.body)).toMatchObject({ cache_salt: "globex" });
    expect(JSON.parse(sent[2]!.body)).not.toHaveProperty("cache_salt");
    expect(servedBy(out.CustomAttributes).instance).toBe(sm.router.rank({ body, tenant: "acme" }).targets[0]?.id);
  });

  it('with isolation: "tenant" two tenants sending the same body share no cached tokens on the engine; without it they share', async () => {
    const body = json(chatBody("one engine, two tenants", "same question"));
    const cached = async (sm: Awaited<ReturnType<typeof routeSageMaker>>, tenant: string) =>
      servedBy((await sm.send(invoke(body, { PrefixAwareId: tenant }))).CustomAttributes).cached;
    const only = [{ id: "only", endpointName: "llm" }];
    const isolated = await routeSageMaker(clientFor(fleet.urls[3] as string), { targets: only, isolation: "tenant" });
    expect([await cached(isolated, "iso-a"), await cached(isolated, "iso-b")]).toEqual([0, 0]);
    expect(await cached(isolated, "iso-b")).toBeGreaterThan(500);
    const shared = await routeSageMaker(clientFor(fleet.urls[3] as string), { targets: only });
    // Only the chat template's first block can be cached from other tests' requests.
    expect(await cached(shared, "share-a")).toBeLessThan(100);
    expect(await cached(shared, "share-b")).toBeGreaterThan(500);
  });

  it("refuses isolation without canonicalizeBody: the body must be rewritten to carry cache_salt", async () => {
    const base = clientFor(fleet.urls[0] as string);
    await expect(routeSageMaker(base, { targets: [{ id: "a", endpointName: "e" }], isolation: "tenant", canonicalizeBody: false })).rejects.toThrow(
      'Expected `canonicalizeBody` to be true with `isolation: "tenant"`',
    );
  });
});

describe("targets: endpoints, variants, inference components", () => {
  it("sets the chosen target's EndpointName, TargetVariant and InferenceComponentName, replacing the command's", async () => {
    const base = clientFor(fleet.urls[0] as string);
    const targets: SageMakerTarget[] = [
      { id: "blue", endpointName: "ep-blue", targetVariant: "blue" },
      { id: "green", endpointName: "ep-green", targetVariant: "green", client: clientFor(fleet.urls[1] as string) },
      { id: "lora", endpointName: "ep-lora", inferenceComponentName: "ic-lora", client: clientFor(fleet.urls[2] as string) },
    ];
    const sm = await routeSageMaker(base, { targets });
    const seen = new Map<string, { variant: string | undefined; model: string }>();
    for (let i = 0; sent.length < 40 && seen.size < 3; i++) {
      const out = await sm.send(
        // The command's own variant does not exist: it must be replaced (or removed).
        invoke(json(chatBody(`topic ${i}`, "q")), { TargetVariant: "no-such-variant", InferenceComponentName: "no-such-ic" }),
      );
      const req = sent.at(-1) as Sent;
      const target = targets.find((t) => req.path === `/endpoints/${t.endpointName}/invocations`) as SageMakerTarget;
      expect(target).toBeDefined();
      expect(req.port).toBe(fleet.instances[targets.indexOf(target)]?.port);
      expect(req.headers["x-amzn-sagemaker-target-variant"]).toBe(target.targetVariant);
      expect(req.headers["x-amzn-sagemaker-inference-component"]).toBe(target.inferenceComponentName);
      seen.set(target.id, { variant: out.InvokedProductionVariant, model: (JSON.parse(text(out.Body)) as { model: string }).model });
    }
    expect(seen.get("blue")).toEqual({ variant: "blue", model: DEFAULT_MODEL });
    expect(seen.get("green")).toEqual({ variant: "green", model: DEFAULT_MODEL });
    expect(seen.get("lora")).toEqual({ variant: "AllTraffic", model: LORA });
  });

  it("restricts targets to those serving the command's TargetModel", async () => {
    const base = clientFor(fleet.urls[0] as string);
    const sm = await routeSageMaker(base, {
      targets: [
        { id: "base-0", endpointName: "llm", models: [DEFAULT_MODEL] },
        { id: "lora-1", endpointName: "llm", inferenceComponentName: "ic-lora", models: [LORA], client: clientFor(fleet.urls[1] as string) },
        { id: "lora-2", endpointName: "llm", inferenceComponentName: "ic-lora", models: [LORA], client: clientFor(fleet.urls[2] as string) },
      ],
    });
    for (let i = 0; i < 8; i++) {
      const out = await sm.send(invoke(json(chatBody(`lora topic ${i}`, "q")), { TargetModel: LORA }));
      expect(["i1", "i2"]).toContain(servedBy(out.CustomAttributes).instance);
    }
    expect(sent.every((s) => s.headers["x-amzn-sagemaker-target-model"] === LORA)).toBe(true);
    const error = await sm.send(invoke(json(chatBody("x", "q")), { TargetModel: "unknown" })).catch((e: unknown) => e);
    expect(isRouterError(error) && error.code).toBe("ERR_NO_ELIGIBLE_TARGET");
  });
});

describe("bodies on the wire", () => {
  it("sends a JSON body in canonical form by default, and as given with canonicalizeBody: false", async () => {
    const body = { messages: [{ role: "user", content: "Hi ☃ \u2028" }], max_tokens: 2, temperature: 0.5 };
    const pretty = json(body, 2);
    const on = await routed();
    await on.send(invoke(pretty));
    await on.send(invoke(pretty, { ContentType: "application/vnd.example+json; charset=utf-8" }));
    await on.send(invoke(pretty, { ContentType: undefined }));
    const off = await routed({ canonicalizeBody: false });
    await off.send(invoke(pretty));
    expect(sent.map((s) => s.body)).toEqual([canonicalize(body), canonicalize(body), canonicalize(body), pretty]);
    // Both modes route the same way: the routing input is the canonical form either way.
    expect(sent[3]?.port).toBe(sent[0]?.port);
  });

  it("never rewrites a non-JSON content type or a body that does not parse", async () => {
    const sm = await routed();
    const csv = "1.50,2.00\n3,4\n";
    const notJson = '{"b": 1, "a": 2} trailing';
    const plain = '{"b": 1, "a": 2}';
    for (const [body, type] of [
      [csv, "text/csv"],
      [notJson, "application/json"],
      [plain, "text/plain"],
    ] as const) {
      const error = await sm.send(invoke(body, { ContentType: type })).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ModelError); // the emulated model only takes JSON objects
    }
    expect(sent.map((s) => s.body)).toEqual([csv, notJson, plain]);
    // A ModelError is an answer: no retry, and it counts as the caller's fault (the model said 400).
    expect(sm.router.stats().totals).toMatchObject({ routed: 3, failures: 0 });
  });

  it("reads Blob and stream bodies once and can resend them on a retry", async () => {
    const sm = await routed();
    const body = chatBody("stream body", "q");
    const first = sm.router.rank({ body: json(body) }).targets[0]?.id as string;
    await fleet.instance(first).setFaults({ errorRate: 1, errorStatus: 503 });
    const chunks = [json(body).slice(0, 100), json(body).slice(100)].map((c) => new TextEncoder().encode(c));
    const readable = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const c of chunks) controller.enqueue(c);
        controller.close();
      },
    });
    const out = await sm.send(invoke(readable as unknown as Uint8Array));
    expect(servedBy(out.CustomAttributes).instance).not.toBe(first);
    const blob = await sm.send(invoke(new Blob([json(body)]) as unknown as Uint8Array));
    expect(servedBy(blob.CustomAttributes).instance).toBe(servedBy(out.CustomAttributes).instance);
    expect(sent.map((s) => s.body)).toEqual([canonicalize(body), canonicalize(body), canonicalize(body), canonicalize(body)]);
  });

  it("leaves the caller's command untouched, so it can be sent again", async () => {
    const sm = await routed();
    const bytes = new TextEncoder().encode(json(chatBody("resend", "q"), 2));
    const command = invoke(bytes, { TargetVariant: "green", PrefixAwareId: "t" });
    const before = { ...command.input };
    const layers = command.middlewareStack.identify().length;
    const a = await sm.send(command);
    const b = await sm.send(command);
    expect(command.input).toEqual(before);
    expect(command.input.Body).toBe(bytes);
    expect(command.middlewareStack.identify()).toHaveLength(layers);
    expect(servedBy(b.CustomAttributes).instance).toBe(servedBy(a.CustomAttributes).instance);
  });
});

describe("failures and retries", () => {
  const cases = [
    ["ServiceUnavailable (503)", { errorRate: 1, errorStatus: 503 }],
    ["ModelNotReadyException (429)", { notReady: true }],
    ["connection refused", { down: true }],
  ] as const;
  for (const [name, faults] of cases) {
    it(`retries ${name} on the key's next-ranked target`, async () => {
      const sm = await routed();
      const body = json(chatBody(`retry ${name}`, "q"));
      const [first, second] = sm.router.rank({ body }).targets.map((t) => t.id);
      await fleet.instance(first as string).setFaults(faults);
      const out = await sm.send(invoke(body));
      expect(servedBy(out.CustomAttributes).instance).toBe(second);
      expect(statsOf(sm, first as string)).toMatchObject({ routed: 1, failures: 1, inflight: 0 });
      expect(statsOf(sm, second as string)).toMatchObject({ routed: 1, failures: 0, inflight: 0 });
    });
  }

  it("retries a stream whose request was refused before any event, then holds the lease on the new target", async () => {
    const sm = await routed();
    const body = json(chatBody("stream retry", "q"));
    const [first, second] = sm.router.rank({ body }).targets.map((t) => t.id) as [string, string];
    await fleet.instance(first).setFaults({ errorRate: 1, errorStatus: 503 });
    const out = await sm.send(invokeStream(body));
    expect(servedBy(out.CustomAttributes).instance).toBe(second);
    expect(statsOf(sm, second).inflight).toBe(1);
    for await (const _ of out.Body ?? []) void _;
    expect(statsOf(sm, second).inflight).toBe(0);
  });

  it("stops after `attempts` targets and rejects with the last error", async () => {
    const two = await routed();
    const body = json(chatBody("all busy", "q"));
    const ranking = two.router.rank({ body }).targets.map((t) => t.id);
    for (const id of ranking.slice(0, 2)) await fleet.instance(id).setFaults({ errorRate: 1, errorStatus: 503 });
    await expect(two.send(invoke(body))).rejects.toBeInstanceOf(ServiceUnavailable);
    expect(two.router.stats().totals).toMatchObject({ routed: 2, failures: 2, inflight: 0 });
    expect(sent.map((s) => s.port)).toEqual(ranking.slice(0, 2).map(portOf));

    sent = [];
    const three = await routed({ attempts: 3 });
    const out = await three.send(invoke(body));
    expect(servedBy(out.CustomAttributes).instance).toBe(ranking[2]);

    sent = [];
    const one = await routed({ attempts: 1 });
    await expect(one.send(invoke(body))).rejects.toBeInstanceOf(ServiceUnavailable);
    expect(sent).toHaveLength(1);
  });

  it("lets the SDK's own retries run on the same target first, then moves on", async () => {
    const base = clientFor(fleet.urls[0] as string, 2);
    const targets = fleet.instances.map((inst, i) => ({ id: inst.id, endpointName: "llm", ...(i === 0 ? {} : { client: clientFor(inst.url, 2) }) }));
    const sm = await routeSageMaker(base, { targets });
    const body = json(chatBody("sdk retries", "q"));
    const [first, second] = sm.router.rank({ body }).targets.map((t) => t.id) as [string, string];
    await fleet.instance(first).setFaults({ errorRate: 1, errorStatus: 503 });
    const out = await sm.send(invoke(body));
    expect(servedBy(out.CustomAttributes).instance).toBe(second);
    expect(sent.map((s) => s.port)).toEqual([portOf(first), portOf(first), portOf(second)]);
  });

  it("never retries an error from a model that ran: ModelError, ValidationError", async () => {
    const sm = await routed();
    const body = json(chatBody("model error", "q"));
    const first = sm.router.rank({ body }).targets[0]?.id as string;
    await fleet.instance(first).setFaults({ errorRate: 1, errorStatus: 500 });
    await expect(sm.send(invoke(body))).rejects.toBeInstanceOf(ModelError);
    expect(sm.router.stats().totals).toMatchObject({ routed: 1, failures: 1 });
    await fleet.instance(first).setFaults({ errorRate: 0 });

    const variants = await routeSageMaker(clientFor(fleet.urls[0] as string), {
      targets: [
        { id: "missing", endpointName: "llm", targetVariant: "no-such-variant" },
        { id: "ok", endpointName: "llm", client: clientFor(fleet.urls[1] as string) },
      ],
    });
    const errors = await Promise.all(
      Array.from({ length: 6 }, (_, i) => variants.send(invoke(json(chatBody(`v ${i}`, "q")))).then(() => undefined, (e: unknown) => e)),
    );
    const failed = errors.filter((e) => e !== undefined);
    expect(failed.length).toBeGreaterThan(0);
    expect(failed.length).toBe(statsOf(variants, "missing").routed);
    for (const e of failed) expect(e).toBeInstanceOf(ValidationError);
    expect(statsOf(variants, "missing").failures).toBe(0);
  });

  it("ejects a target after consecutive failures and sends its keys to their next choice directly", async () => {
    const sm = await routed({ ejection: { consecutiveFailures: 2, baseEjectionMs: 60_000 } });
    const body = json(chatBody("ejection", "q"));
    const [first, second] = sm.router.rank({ body }).targets.map((t) => t.id) as [string, string];
    await fleet.instance(first).setFaults({ notReady: true });
    for (let i = 0; i < 3; i++) {
      const out = await sm.send(invoke(body));
      expect(servedBy(out.CustomAttributes).instance).toBe(second);
    }
    expect(statsOf(sm, first)).toMatchObject({ routed: 2, failures: 2, ejected: true });
    expect(statsOf(sm, second)).toMatchObject({ routed: 3, spillover: 3 });
  });
});

describe("drop-in client", () => {
  it("is the same client: class, config, middleware stack, destroy; plus `router`", async () => {
    const base = clientFor(fleet.urls[0] as string);
    const sm = await routeSageMaker(base, { targets: [{ id: "a", endpointName: "llm" }] });
    expect(sm).toBeInstanceOf(SageMakerRuntimeClient);
    expect(sm.config).toBe(base.config);
    expect(sm.middlewareStack).toBe(base.middlewareStack);
    expect("router" in sm).toBe(true);
    expect(getRouter(sm)).toBe(sm.router);
    expect(sm.router.targets().map((t) => t.id)).toEqual(["a"]);
    expect(() => sm.router.setTargets([{ id: "b" } as SageMakerTarget])).toThrow("Expected `targets[0].endpointName` to be a non-empty string, got undefined");
  });

  it("is also exported by the root entry point (deprecated there, typed without the AWS SDK): the same function", async () => {
    expect(routeSageMakerFromRoot).toBe(routeSageMaker);
    const base = clientFor(fleet.urls[0] as string);
    const sm = await routeSageMakerFromRoot(base, { targets: instanceTargets(base) });
    const out = await sm.send(invoke(json(chatBody("root entry point", "q"))));
    expect(servedBy(out.CustomAttributes).instance).toMatch(/^i\d$/);
    expect(sm.router.stats().totals).toMatchObject({ routed: 1, inflight: 0 });
  });

  it("supports the callback form of send", async () => {
    const sm = await routed();
    const result = await new Promise<{ returned: unknown; error: unknown; attributes: string | undefined }>((resolve) => {
      const returned = sm.send(invoke(json(chatBody("callback", "q"))), (error, out) =>
        resolve({ returned, error, attributes: out?.CustomAttributes }),
      );
    });
    expect(result.returned).toBeUndefined();
    expect(result.error).toBeNull();
    expect(servedBy(result.attributes).instance).toMatch(/^i\d$/);
    expect(sm.router.stats().totals.routed).toBe(1);
  });

  it("routes the aggregated SageMakerRuntime client's methods too", async () => {
    const base = new SageMakerRuntime({
      endpoint: fleet.urls[0],
      region: "us-east-1",
      credentials: { accessKeyId: "test", secretAccessKey: "test" },
      maxAttempts: 1,
    });
    clients.push(base);
    const sm = await routeSageMaker(base, { targets: instanceTargets(base) });
    const body = json(chatBody("aggregated", "q"));
    const out = await sm.invokeEndpoint({ EndpointName: "x", Body: new TextEncoder().encode(body), ContentType: "application/json" });
    expect(servedBy(out.CustomAttributes).instance).toBe(sm.router.rank({ body }).targets[0]?.id);
    expect(sm.router.stats().totals.routed).toBe(1);
  });

  it("passes other commands through unchanged", async () => {
    const sm = await routed();
    const error = await sm
      .send(new InvokeEndpointAsyncCommand({ EndpointName: "async-ep", InputLocation: "s3://bucket/in.json" }))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(sent.map((s) => [s.port, s.path])).toEqual([[fleet.instances[0]?.port, "/endpoints/async-ep/async-invocations"]]);
    expect(sm.router.stats().totals.routed).toBe(0);
  });
});

describe("mode", () => {
  /** The instances that served one request per `max_tokens` in `values`, the bodies otherwise the same. */
  async function servedPerMaxTokens(mode: "bytes" | "text" | undefined, values: readonly number[]): Promise<string[]> {
    const sm = await routed(mode === undefined ? {} : { mode });
    const served: string[] = [];
    for (const maxTokens of values) {
      const out = await sm.send(invoke(json(chatBody("max tokens", "Can I return an opened item?", maxTokens))));
      served.push(servedBy(out.CustomAttributes).instance);
    }
    return served;
  }
  const maxTokens = [1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64, 128];

  it("bytes (the default) routes on the canonical body, whose sorted keys put max_tokens first: bodies differing only in it split", async () => {
    expect(DEFAULT_SAGEMAKER_MODE).toBe("bytes");
    expect(canonicalize(chatBody("max tokens", "q", 8))).toMatch(/^\{"max_tokens":8,"messages":/);
    const bytes = await servedPerMaxTokens(undefined, maxTokens);
    expect(new Set(bytes).size).toBeGreaterThan(1);
    expect(await servedPerMaxTokens("bytes", maxTokens)).toEqual(bytes);
  });

  it('"text" routes on the message text, as the OpenAI adapter: bodies differing only in max_tokens reach the same target', async () => {
    const served = await servedPerMaxTokens("text", maxTokens);
    expect(new Set(served).size).toBe(1);
    // The wire body is the same canonical JSON as in bytes mode; only the routing input differs.
    expect(sent.map((s) => s.body)).toEqual(maxTokens.map((m) => canonicalize(chatBody("max tokens", "Can I return an opened item?", m))));
    // The target is the text-mode key's first choice, the one a router in text mode ranks first.
    const text = await createRouter({ targets: fleet.instances.map((i) => ({ id: i.id })), mode: "text" });
    expect(served[0]).toBe(text.rank({ body: chatBody("max tokens", "another question", 1) }).targets[0]!.id);
    // Its cache serves the shared prompt from the second request on.
    const sm = await routed({ mode: "text" });
    const out = await sm.send(invoke(json(chatBody("max tokens", "Can I return an opened item?", 512))));
    expect(servedBy(out.CustomAttributes)).toMatchObject({ instance: served[0] });
    expect(servedBy(out.CustomAttributes).cached).toBeGreaterThan(0);
  });

  it('"text" refuses a body that is not a JSON object before anything is sent', async () => {
    const sm = await routed({ mode: "text" });
    for (const [body, type, code] of [
      ["1.50,2.00\n3,4\n", "text/csv", "ERR_INVALID_JSON"],
      ["[1, 2]", "application/json", "ERR_INVALID_BODY"],
    ] as const) {
      const error = await sm.send(invoke(body, { ContentType: type })).catch((e: unknown) => e);
      expect(isRouterError(error) && error.code).toBe(code);
    }
    expect(sent).toEqual([]);
    expect(sm.router.stats().totals.routed).toBe(0);
  });
});

describe("options", () => {
  const base = () => clientFor(fleet.urls[0] as string);
  const targets = [{ id: "a", endpointName: "llm" }];
  it.each([
    [{ targets, attempts: 0 }, "Expected `attempts` to be an integer from 1 to 16, got 0"],
    [{ targets, attempts: 2.5 }, "Expected `attempts` to be an integer from 1 to 16, got 2.5"],
    [{ targets, canonicalizeBody: "yes" }, 'Expected `canonicalizeBody` to be a boolean, got "yes"'],
    [{ targets, mode: "tokens" }, 'Expected `mode` to be one of "bytes", "text", got "tokens"'],
    [{ targets: [{ id: "a" }] }, "Expected `targets[0].endpointName` to be a non-empty string, got undefined"],
    [{ targets: [{ id: "a", endpointName: "e", targetVariant: "" }] }, 'Expected `targets[0].targetVariant` to be a non-empty string or absent, got ""'],
    [{ targets: [{ id: "a", endpointName: "e", inferenceComponentName: 3 }] }, "Expected `targets[0].inferenceComponentName` to be a non-empty string or absent, got 3"],
    [{ targets: [{ id: "a", endpointName: "e", client: {} }] }, "Expected `targets[0].client` to be a SageMakerRuntimeClient or absent, got an object"],
    [{ targets, concurrencyThreshold: 0 }, "Expected `concurrencyThreshold` to be an integer from 1 to 1024, got 0"],
  ])("rejects %j", async (options, message) => {
    await expect(routeSageMaker(base(), options as unknown as RouteSageMakerOptions)).rejects.toThrow(message);
  });

  it("rejects something that is not a client", async () => {
    await expect(routeSageMaker({} as SageMakerRuntimeClient, { targets })).rejects.toThrow(
      "Expected `client` to be a SageMakerRuntimeClient (an object with a send() method), got an object",
    );
  });
});
