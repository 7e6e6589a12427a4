/**
 * Hostile tenant ids at the router and through the OpenAI adapter (`prompt_cache_key`): anything
 * but 1–64 printable ASCII characters is `ERR_INVALID_TENANT` with nothing counted or sent; valid
 * ids at the edges route; distinct tenants with one prompt get distinct keys. Under
 * `isolation: "tenant"` with the tenant taken from the caller's authentication, a body that names
 * another tenant or brings its own `cache_salt` is `ERR_TENANT_MISMATCH` with nothing sent —
 * chat, Responses and SageMaker, through the real openai and AWS clients.
 */
import { createHmac } from "node:crypto";
import { InvokeEndpointCommand, SageMakerRuntimeClient } from "@aws-sdk/client-sagemaker-runtime";
import fc from "fast-check";
import OpenAI from "openai";
import { afterAll, describe, expect, it } from "vitest";
import { createRouter, isRouterError } from "prefix-router";
import { createRoutedFetch, getRouter, routeOpenAI } from "prefix-router/openai";
import { routeSageMaker } from "prefix-router/sagemaker";
import { codeOf } from "../support.js";
import { chatBody, useServer } from "./servers.js";

const targets = [{ id: "a" }, { id: "b" }, { id: "c" }];

const INVALID: [string, unknown][] = [
  ["empty", ""],
  ["65 characters", "t".repeat(65)],
  ["a tab", "a\tb"],
  ["CR LF", "a\r\nb"],
  ["NUL", "a\u0000b"],
  ["DEL", "a\u007fb"],
  ["Latin-1", "tenant-é"],
  ["an emoji", "tenant-😀"],
  ["a lone surrogate", "tenant-\ud800"],
  ["a number", 42],
  ["an object", { id: "x" }],
  ["an array", ["x"]],
  ["true", true],
];

const VALID: [string, string][] = [
  ["one character", "a"],
  ["64 characters", "t".repeat(64)],
  ["a space", " "],
  ["every printable punctuation", "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"],
];

describe("tenant ids", () => {
  it.each(INVALID)("router.route, %s: ERR_INVALID_TENANT, nothing counted", async (_name, tenant) => {
    const router = await createRouter({ targets });
    expect(codeOf(() => router.route({ body: chatBody("t"), tenant: tenant as string }))).toBe("ERR_INVALID_TENANT");
    expect(router.stats().totals.routed).toBe(0);
  });

  it.each(VALID)("router.route, %s: routed", async (_name, tenant) => {
    const router = await createRouter({ targets });
    const lease = router.route({ body: chatBody("t"), tenant });
    expect(lease.key).toMatch(/^[0-9a-f]{16}$/);
    lease.release();
    expect(router.stats().totals.inflight).toBe(0);
  });

  it("distinct tenants with one prompt never share a key", async () => {
    const router = await createRouter({ targets });
    const tenant = fc.stringMatching(/^[\x20-\x7e]{1,64}$/);
    fc.assert(
      fc.property(tenant, tenant, (x, y) => {
        fc.pre(x !== y);
        const body = chatBody("shared system prompt");
        expect(router.rank({ body, tenant: x }).key).not.toBe(router.rank({ body, tenant: y }).key);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("prompt_cache_key through createRoutedFetch", () => {
  const served = useServer();

  it.each(INVALID)("%s: ERR_INVALID_TENANT, nothing sent", async (_name, tenant) => {
    const { fetch, router } = await createRoutedFetch({ targets: [{ id: "a", baseURL: `${served().origin}/v1` }] });
    const before = served().heads;
    const body = JSON.stringify(chatBody("t", { prompt_cache_key: tenant }));
    const error = await fetch("http://fleet.invalid/v1/chat/completions", { method: "POST", body }).catch((e: unknown) => e);
    expect(isRouterError(error) && error.code).toBe("ERR_INVALID_TENANT");
    expect(served().heads).toBe(before);
    expect(router.stats().totals.routed).toBe(0);
  });

  it("a null prompt_cache_key is no tenant: routed and sent", async () => {
    const { fetch, router } = await createRoutedFetch({ targets: [{ id: "a", baseURL: `${served().origin}/v1` }] });
    const res = await fetch("http://fleet.invalid/v1/chat/completions", { method: "POST", body: JSON.stringify(chatBody("t", { prompt_cache_key: null })) });
    await res.json();
    expect(router.stats().totals).toMatchObject({ routed: 1, inflight: 0 });
  });
});

describe('isolation: "tenant": the authenticated tenant decides, never the body', () => {
  const served = useServer();
  const secret = "isolation-secret-of-at-least-16";
  const saltOf = (tenant: string) => createHmac("sha256", secret).update(tenant).digest("base64url");
  const clients: SageMakerRuntimeClient[] = [];
  afterAll(() => {
    for (const c of clients) c.destroy();
  });

  /** The openai client of an application that authenticates its callers and names the tenant in `x-org`. */
  async function openai() {
    return routeOpenAI(new OpenAI({ apiKey: "k", baseURL: "http://app.invalid/v1", maxRetries: 0 }), {
      targets: [{ id: "a", baseURL: `${served().origin}/v1` }],
      tenant: ({ headers }) => headers.get("x-org") ?? undefined,
      isolation: "tenant",
      cacheSaltSecret: secret,
    });
  }
  const asAcme = { headers: { "x-org": "acme" } };
  const messages = chatBody("tenant isolation")["messages"] as OpenAI.Chat.ChatCompletionMessageParam[];

  /** Runs `call` and returns the error code it fails with, checking that nothing reached the server. */
  async function refused(call: () => Promise<unknown>): Promise<unknown> {
    const before = served().heads;
    const error = await call().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(served().heads).toBe(before);
    return error instanceof OpenAI.APIError ? (error.status === 400 ? error.code : error.status) : isRouterError(error) ? error.code : error;
  }

  it.each([
    ["names another tenant", { prompt_cache_key: "globex" }],
    ["brings that tenant's salt", { cache_salt: saltOf("globex") }],
    ["brings the unsalted namespace's salt, null", { cache_salt: null }],
    ["brings a salt of its own choosing", { cache_salt: "globex" }],
    ["names another tenant and brings its salt", { prompt_cache_key: "globex", cache_salt: saltOf("globex") }],
  ])("chat completions: a body that %s is ERR_TENANT_MISMATCH, nothing sent", async (_name, fields) => {
    const client = await openai();
    const params = { model: "m", messages, ...fields } as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;
    expect(await refused(() => client.chat.completions.create(params, asAcme))).toBe("ERR_TENANT_MISMATCH");
    expect(getRouter(client)!.stats().totals).toMatchObject({ routed: 0, inflight: 0 });
  });

  it.each([
    ["names another tenant", { prompt_cache_key: "globex" }],
    ["brings that tenant's salt", { cache_salt: saltOf("globex") }],
  ])("the Responses API: a body that %s is ERR_TENANT_MISMATCH, nothing sent", async (_name, fields) => {
    const client = await openai();
    const params = { model: "m", input: "Where is my parcel?", ...fields } as OpenAI.Responses.ResponseCreateParamsNonStreaming;
    expect(await refused(() => client.responses.create(params, asAcme))).toBe("ERR_TENANT_MISMATCH");
  });

  it("the authenticated tenant's own request goes out with its own salt; naming itself or bringing its own salt is no conflict", async () => {
    const client = await openai();
    served().seen.length = 0;
    await client.chat.completions.create({ model: "m", messages }, asAcme);
    await client.chat.completions.create({ model: "m", messages, prompt_cache_key: "acme" }, asAcme);
    await client.chat.completions.create({ model: "m", messages, cache_salt: saltOf("acme") } as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming, asAcme);
    const bodies = served().seen.map((s) => JSON.parse(s.body) as Record<string, unknown>);
    expect(bodies.map((b) => [b["prompt_cache_key"], b["cache_salt"]])).toEqual(Array(3).fill(["acme", saltOf("acme")]));
  });

  it("a body nested 100,000 levels deep still gets its tenant's salt, appended to the text it came as", async () => {
    const client = await openai();
    served().seen.length = 0;
    const depth = 100_000;
    const text = `{"model":"m","messages":[{"role":"user","content":"hi"}],"metadata":${"[".repeat(depth)}${"]".repeat(depth)}}`;
    await client.post("/chat/completions", { body: text, headers: { "content-type": "application/json", ...asAcme.headers } });
    expect(served().seen.map((s) => s.body)).toEqual([`${text.slice(0, -1)},"prompt_cache_key":"acme","cache_salt":"${saltOf("acme")}"}`]);
  });

  /** The SageMaker client of an application whose tenant is the authenticated caller's ("acme" here). */
  async function sagemaker() {
    const client = new SageMakerRuntimeClient({ region: "us-east-1", endpoint: served().origin, credentials: { accessKeyId: "a", secretAccessKey: "b" }, maxAttempts: 1 });
    clients.push(client);
    return routeSageMaker(client, { targets: [{ id: "a", endpointName: "ep-a" }], tenant: () => "acme", isolation: "tenant", cacheSaltSecret: secret });
  }
  const invoke = (body: string, extra: { PrefixAwareId?: string } = {}) =>
    new InvokeEndpointCommand({ EndpointName: "x", Body: new TextEncoder().encode(body), ContentType: "application/json", ...extra });
  const deep = (fields: string) => `{"inputs":"x"${fields},"parameters":${"[".repeat(100_000)}${"]".repeat(100_000)}}`;

  it.each([
    ["a PrefixAwareId naming another tenant", () => invoke('{"inputs":"x"}', { PrefixAwareId: "globex" })],
    ["a body with that tenant's salt", () => invoke(JSON.stringify({ inputs: "x", cache_salt: saltOf("globex") }))],
    ["a body with a salt of its own choosing", () => invoke('{"inputs":"x","cache_salt":"globex"}')],
    ["a body too deep to canonicalize, with a salt", () => invoke(deep(',"cache_salt":"globex"'))],
  ])("SageMaker: %s is ERR_TENANT_MISMATCH, nothing sent", async (_name, command) => {
    const client = await sagemaker();
    expect(await refused(() => client.send(command()))).toBe("ERR_TENANT_MISMATCH");
    expect(client.router.stats().totals).toMatchObject({ routed: 0, inflight: 0 });
  });

  it("SageMaker: the tenant's own requests go out with its PrefixAwareId and salt, a body too deep to canonicalize included", async () => {
    const client = await sagemaker();
    served().seen.length = 0;
    await client.send(invoke('{"inputs":"x"}'));
    await client.send(invoke('{"inputs":"x"}', { PrefixAwareId: "acme" }));
    await client.send(invoke(deep("")));
    const seen = served().seen;
    expect(seen.map((s) => s.headers["x-amzn-sagemaker-prefix-aware-id"])).toEqual(["acme", "acme", "acme"]);
    expect(seen.slice(0, 2).map((s) => s.body)).toEqual(Array(2).fill(`{"cache_salt":"${saltOf("acme")}","inputs":"x"}`));
    expect(seen[2]?.body).toBe(`${deep("").slice(0, -1)},"cache_salt":"${saltOf("acme")}"}`);
  });
});
