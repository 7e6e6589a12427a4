/**
 * One tenant identity on the OpenAI wire: the real openai client, routed, with a `tenant`
 * function and `isolation: "tenant"`, against the emulated fleet (chat) and a Responses server on
 * loopback; what each request carried is read from the underlying fetch.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FetchLike, type OpenAITarget, type RouteOpenAIOptions, routeOpenAI } from "prefix-router/openai";
import { DEFAULT_MODEL, type LiveFleet, startFleet } from "prefix-router/fleet";

let fleet: LiveFleet;
let responses: Server;
let responsesURL: string;

beforeAll(async () => {
  fleet = await startFleet({ instances: 2, timeScale: 0.005, defaultMaxTokens: 4, seed: 11 });
  // A Responses API server that answers every request with a minimal completed response.
  responses = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ id: "resp_1", object: "response", created_at: 0, model: DEFAULT_MODEL, status: "completed", output: [] }));
    });
  });
  await new Promise<void>((resolve) => responses.listen(0, "127.0.0.1", resolve));
  responsesURL = `http://127.0.0.1:${(responses.address() as AddressInfo).port}/v1`;
});

afterAll(async () => {
  await fleet?.stop();
  responses?.close();
});

/** The global fetch, recording the JSON body of every request it sends. */
function recordingFetch(): { fetch: FetchLike; bodies: Record<string, unknown>[] } {
  const bodies: Record<string, unknown>[] = [];
  const fetch: FetchLike = async (input, init) => {
    if (typeof init?.body === "string") bodies.push(JSON.parse(init.body) as Record<string, unknown>);
    return globalThis.fetch(input, init);
  };
  return { fetch, bodies };
}

async function client(targets: OpenAITarget[], options: Partial<RouteOpenAIOptions>): Promise<OpenAI> {
  return routeOpenAI(new OpenAI({ apiKey: "k", baseURL: "http://app.invalid/v1", maxRetries: 0 }), { targets, ...options });
}

const policy = "Support policy: refunds within thirty days with a receipt; escalate fraud to a human. ".repeat(60);
const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
  { role: "system", content: policy },
  { role: "user", content: "Where is my parcel?" },
];

describe("the tenant on the OpenAI wire", () => {
  it("chat: a tenant function feeds the routing key, prompt_cache_key and cache_salt; under isolation a body naming another tenant is refused", async () => {
    const rec = recordingFetch();
    const tenants: (string | undefined)[] = [];
    const routed = await client(
      fleet.instances.map((i) => ({ id: i.id, baseURL: `${i.url}/v1` })),
      { fetch: rec.fetch, tenant: ({ headers }) => headers.get("x-org") ?? undefined, isolation: "tenant", onDecision: (d) => tenants.push(d.tenant) },
    );
    await routed.chat.completions.create({ model: DEFAULT_MODEL, messages }, { headers: { "x-org": "acme" } });
    const foreign = routed.chat.completions.create({ model: DEFAULT_MODEL, messages, prompt_cache_key: "globex" }, { headers: { "x-org": "acme" } });
    await expect(foreign).rejects.toMatchObject({ status: 400, code: "ERR_TENANT_MISMATCH" });
    await routed.chat.completions.create({ model: DEFAULT_MODEL, messages });
    expect(tenants).toEqual(["acme", undefined]);
    expect(rec.bodies.map((b) => [b["prompt_cache_key"], b["cache_salt"]])).toEqual([
      ["acme", "acme"],
      [undefined, undefined],
    ]);
    expect(rec.bodies[0]!["messages"]).toEqual(messages);
  });

  it("chat without isolation: a carried prompt_cache_key wins over the tenant function (it only moves routing)", async () => {
    const rec = recordingFetch();
    const tenants: (string | undefined)[] = [];
    const routed = await client(
      fleet.instances.map((i) => ({ id: i.id, baseURL: `${i.url}/v1` })),
      { fetch: rec.fetch, tenant: ({ headers }) => headers.get("x-org") ?? undefined, onDecision: (d) => tenants.push(d.tenant) },
    );
    await routed.chat.completions.create({ model: DEFAULT_MODEL, messages, prompt_cache_key: "globex" }, { headers: { "x-org": "acme" } });
    expect(tenants).toEqual(["globex"]);
    expect(rec.bodies.map((b) => [b["prompt_cache_key"], b["cache_salt"]])).toEqual([["globex", undefined]]);
  });

  it("responses: the same fields on /responses; without isolation no cache_salt", async () => {
    const rec = recordingFetch();
    const targets = [{ id: "r", baseURL: responsesURL }];
    const isolated = await client(targets, { fetch: rec.fetch, tenant: "acme", isolation: "tenant", cacheSaltSecret: "a-secret-of-at-least-16" });
    await isolated.responses.create({ model: DEFAULT_MODEL, instructions: policy, input: "Where is my parcel?" });
    const shared = await client(targets, { fetch: rec.fetch, tenant: "acme" });
    await shared.responses.create({ model: DEFAULT_MODEL, instructions: policy, input: "Where is my parcel?" });
    expect(rec.bodies[0]).toMatchObject({ prompt_cache_key: "acme", input: "Where is my parcel?" });
    expect(rec.bodies[0]!["cache_salt"]).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(rec.bodies[1]).toMatchObject({ prompt_cache_key: "acme" });
    expect(rec.bodies[1]).not.toHaveProperty("cache_salt");
  });

  it("leaves other endpoints' bodies alone", async () => {
    const rec = recordingFetch();
    const routed = await client([{ id: "r", baseURL: responsesURL }], { fetch: rec.fetch, tenant: "acme", isolation: "tenant" });
    await routed.post("/embeddings", { body: { model: DEFAULT_MODEL, input: "x" } });
    expect(rec.bodies).toEqual([{ model: DEFAULT_MODEL, input: "x" }]);
  });
});

describe("isolation on the emulated engine", () => {
  // A prompt no other test sends, so only these requests can have cached it.
  const own: OpenAI.Chat.ChatCompletionMessageParam[] = [
    { role: "system", content: "Isolation test policy: answer in one sentence and cite the contract. ".repeat(60) },
    { role: "user", content: "Can tenant B see that tenant A asked this?" },
  ];

  /** Cached prompt tokens of one request from `tenant`, all requests on one instance. */
  async function cachedFor(routed: OpenAI, tenant: string): Promise<number> {
    const r = await routed.chat.completions.create({ model: DEFAULT_MODEL, messages: own, prompt_cache_key: tenant });
    return r.usage?.prompt_tokens_details?.cached_tokens ?? -1;
  }

  it('with isolation: "tenant" two tenants sending the same prompt share no cached tokens; without it they share', async () => {
    const only = fleet.instances[0]!;
    const targets = [{ id: only.id, baseURL: `${only.url}/v1` }];
    const isolated = await client(targets, { isolation: "tenant" });
    expect(await cachedFor(isolated, "iso-a")).toBe(0);
    expect(await cachedFor(isolated, "iso-b")).toBe(0);
    expect(await cachedFor(isolated, "iso-b")).toBeGreaterThan(1000);

    const shared = await client(targets, {});
    expect(await cachedFor(shared, "share-a")).toBeLessThan(100);
    expect(await cachedFor(shared, "share-b")).toBeGreaterThan(1000);
  });
});
