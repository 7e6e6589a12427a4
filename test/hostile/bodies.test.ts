/**
 * Hostile request bodies — invalid JSON, invalid UTF-8, lone surrogates, 10 MB, 100,000 levels of
 * nesting, `__proto__` — through the router itself, createRoutedFetch, the real openai client and
 * the real SageMaker client against loopback servers. Each gets a typed error with nothing sent,
 * or a correct route: sent exactly once, to the key's target, with its in-flight count back to 0.
 */
import { InvokeEndpointCommand, SageMakerRuntimeClient } from "@aws-sdk/client-sagemaker-runtime";
import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Decision, type Router, canonicalize, createRouter, isRouterError } from "prefix-router";
import { createRoutedFetch, getRouter, routeOpenAI } from "prefix-router/openai";
import { routeSageMaker } from "prefix-router/sagemaker";
import { codeOf } from "../support.js";
import { type LoopbackServer, chatBody, ok, startServer } from "./servers.js";

let server: LoopbackServer;
beforeAll(async () => {
  server = await startServer(ok());
});
afterEach(() => {
  server.seen.length = 0;
  server.heads = 0;
});
afterAll(async () => {
  await server.close();
});

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const targets = [{ id: "a" }, { id: "b" }, { id: "c" }];

/** JSON text nested `depth` levels deep inside a chat body's first message (arrays) — built as text: no recursion. */
function deepChat(depth: number): string {
  return `{"model":"m","messages":[{"role":"user","content":${"[".repeat(depth)}"x"${"]".repeat(depth)}}]}`;
}

/** A chat body whose tool schema nests `depth` objects deep, as text. */
function deepTools(depth: number): string {
  const schema = `${'{"type":"object","properties":{"x":'.repeat(depth)}{"type":"string"}${"}}".repeat(depth)}`;
  return `{"model":"m","tools":[{"type":"function","function":{"name":"lookup","parameters":${schema}}}],"messages":[{"role":"user","content":"hello"}]}`;
}

const INVALID_JSON = ['{"model":', "{'a':1}", '{"a":1}}', '{"a":1,}', '{"a":NaN}', '{"a":01}', '{"a":"\\x"}', "{\u0000}"];
const INVALID_UTF8: [string, number[]][] = [
  ["a lone continuation byte", [0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0x80, 0x22, 0x7d]],
  ["an overlong encoding", [0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc0, 0xaf, 0x22, 0x7d]],
  ["an encoded surrogate", [0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d]],
  ["a truncated sequence", [0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xe2, 0x82, 0x22, 0x7d]],
  ["0xff", [0x7b, 0xff, 0x7d]],
];

function expectNothingCounted(router: Router): void {
  expect(router.stats().totals).toMatchObject({ inflight: 0, routed: 0 });
}

describe("the router (text mode): typed error or a correct route", () => {
  it.each(INVALID_JSON)("invalid JSON %j: ERR_INVALID_JSON", async (text) => {
    const router = await createRouter({ targets });
    expect(codeOf(() => router.route({ body: text }))).toBe("ERR_INVALID_JSON");
    expectNothingCounted(router);
  });

  it.each(INVALID_UTF8)("invalid UTF-8 (%s): ERR_INVALID_JSON in text mode, a raw route in bytes mode", async (_name, bytes) => {
    const text = await createRouter({ targets });
    expect(codeOf(() => text.route({ body: new Uint8Array(bytes) }))).toBe("ERR_INVALID_JSON");
    expectNothingCounted(text);
    const raw = await createRouter({ targets, mode: "bytes" });
    const lease = raw.route({ body: new Uint8Array(bytes) });
    expect(raw.route({ body: new Uint8Array(bytes) }).key).toBe(lease.key);
    expect(lease.key).toMatch(/^[0-9a-f]{16}$/);
  });

  it.each(["[1]", "null", "42", '"a string"', "true"])("JSON that is no object (%s): ERR_INVALID_BODY", async (text) => {
    const router = await createRouter({ targets });
    expect(codeOf(() => router.route({ body: text }))).toBe("ERR_INVALID_BODY");
    expectNothingCounted(router);
  });

  it.each([
    ["an escaped lone surrogate", '{"prompt":"\\ud800 and \\udfff"}'],
    ["a raw lone surrogate in the string", `{"prompt":"\ud800 alone"}`],
    ["a NUL and control characters", '{"prompt":"a\\u0000b\\u0001c\\u001f"}'],
    ["a byte order mark", '\ufeff{"prompt":"x"}'],
  ])("%s: routes, the same key every time", async (_name, text) => {
    if (text.startsWith("\ufeff")) {
      const router = await createRouter({ targets });
      expect(codeOf(() => router.route({ body: text }))).toBe("ERR_INVALID_JSON");
      return;
    }
    const router = await createRouter({ targets });
    const first = router.route({ body: text });
    const second = router.route({ body: text });
    expect([typeof first.key, first.key === second.key, first.target.id === second.target.id]).toEqual(["string", true, true]);
    first.release();
    second.release();
    expect(router.stats().totals.inflight).toBe(0);
  });

  it("10 MB: routed on its prefix only (a different tail, the same key)", async () => {
    const router = await createRouter({ targets });
    const head = "policy ".repeat(1000);
    const a = JSON.stringify({ model: "m", prompt: head + "x".repeat(10 * 1024 * 1024) });
    const b = JSON.stringify({ model: "m", prompt: head + "y".repeat(10 * 1024 * 1024) });
    const la = router.route({ body: a });
    const lb = router.route({ body: b });
    expect(la.key).toBe(lb.key);
    la.release();
    lb.release();
    expect(router.stats().totals.inflight).toBe(0);
  });

  it.each([
    // Bytes mode sorts keys: "messages" comes before "tools", and the prefix is full long before
    // the schema gets deep, so it stays canonical; text mode renders tools first.
    ["100,000 nested arrays in a message", "text", deepChat(100_000), "raw"],
    ["100,000 nested arrays in a message", "bytes", deepChat(100_000), "raw"],
    // Tools come first in text mode: 2,000 nested arrays put the depth limit inside the prefix.
    ["tools nested 2,000 arrays deep", "text", `{"model":"m","tools":[${"[".repeat(2000)}${"]".repeat(2000)}],"prompt":"p"}`, "raw"],
    ["a 2,000-level tool schema", "bytes", deepTools(2000), "canonical"],
  ] as const)("%s (%s mode): routed, marked as read, deterministic", async (_name, mode, text, input) => {
    const decisions: Decision[] = [];
    const router = await createRouter({ targets, mode, onDecision: (d) => decisions.push(d) });
    const first = router.route({ body: text });
    const again = router.route({ body: enc(text) });
    expect(first.input).toBe(input);
    expect(decisions.map((d) => d.input)).toEqual([input, input]);
    expect(again.key).toBe(first.key);
    expect(router.rank({ body: text }).targets[0]?.id).toBe(first.target.id);
    first.release();
    again.release();
    expect(router.stats().totals.inflight).toBe(0);
  });

  it("an object nested 100,000 levels (built in place): routed raw, and the same as its JSON text", async () => {
    const router = await createRouter({ targets });
    let content: unknown = "x";
    for (let i = 0; i < 100_000; i++) content = [content];
    const lease = router.route({ body: { model: "m", messages: [{ role: "user", content }] } });
    expect(lease.input).toBe("raw");
    expect(router.route({ body: deepChat(100_000) }).key).toBe(lease.key);
  });

  it.each([
    ["__proto__ holding the messages", '{"__proto__":{"messages":[{"role":"user","content":"x"}]}}', undefined],
    ["constructor.prototype", '{"constructor":{"prototype":{"polluted":true}},"prompt":"x"}', "string"],
    ["__proto__ inside a message", '{"messages":[{"role":"user","content":"x","__proto__":{"role":"system"}}]}', "string"],
  ])("%s: read as plain data, nothing polluted", async (_name, text, keyType) => {
    const router = await createRouter({ targets });
    const lease = router.route({ body: text });
    expect(typeof lease.key === "string" ? "string" : undefined).toBe(keyType);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).messages).toBeUndefined();
    lease.release();
  });
});

describe("createRoutedFetch and the openai client: nothing sent for a body that cannot be routed", () => {
  async function routedFetch() {
    const decisions: Decision[] = [];
    const routed = await createRoutedFetch({ targets: [{ id: "a", baseURL: `${server.origin}/v1` }], baseURL: "http://fleet.invalid/v1", onDecision: (d) => decisions.push(d) });
    const post = (body: BodyInit, contentType = "application/json") =>
      routed.fetch("http://fleet.invalid/v1/chat/completions", { method: "POST", headers: { "content-type": contentType }, body });
    return { ...routed, post, decisions };
  }

  it.each(INVALID_JSON)("createRoutedFetch, invalid JSON %j: ERR_INVALID_JSON, nothing sent", async (text) => {
    const { post, router } = await routedFetch();
    const error = await post(text).catch((e: unknown) => e);
    expect(isRouterError(error) && error.code).toBe("ERR_INVALID_JSON");
    expect(server.heads).toBe(0);
    expectNothingCounted(router);
  });

  it.each(INVALID_UTF8)("createRoutedFetch, invalid UTF-8 (%s): ERR_INVALID_JSON, nothing sent", async (_name, bytes) => {
    const { post, router } = await routedFetch();
    const error = await post(new Uint8Array(bytes)).catch((e: unknown) => e);
    expect(isRouterError(error) && error.code).toBe("ERR_INVALID_JSON");
    expect(server.heads).toBe(0);
    expectNothingCounted(router);
  });

  it.each([
    ["a form body", "a=1&b=2", "application/x-www-form-urlencoded"],
    ["plain text", "hello", "text/plain"],
    ["an empty body", "", "application/octet-stream"],
  ])("createRoutedFetch, %s: no prompt, routed by load, sent once as is", async (_name, body, type) => {
    const { post, router, decisions } = await routedFetch();
    await (await post(body, type)).text();
    expect(server.seen.map((s) => s.body)).toEqual([body]);
    expect(decisions.map((d) => d.kind)).toEqual(["least-outstanding"]);
    expect(router.stats().totals.inflight).toBe(0);
  });

  it("createRoutedFetch, 10 MB: sent once, whole", async () => {
    const { post, router } = await routedFetch();
    const body = JSON.stringify(chatBody("big", { prompt: "z".repeat(10 * 1024 * 1024) }));
    await (await post(body)).json();
    expect(server.seen.map((s) => s.body.length)).toEqual([body.length]);
    expect(router.stats().totals.inflight).toBe(0);
  });

  it.each([
    ["invalid JSON", "{'model': 'm'}", "ERR_INVALID_JSON"],
    ["an array", "[1,2,3]", "ERR_INVALID_BODY"],
  ])("the openai client, %s: one BadRequestError, not retried, nothing sent", async (_name, text, code) => {
    const client = await routeOpenAI(new OpenAI({ apiKey: "k", baseURL: "http://fleet.invalid/v1", maxRetries: 2 }), {
      targets: [{ id: "a", baseURL: `${server.origin}/v1` }],
    });
    const error = await client.post("/chat/completions", { body: text, headers: { "content-type": "application/json" } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as { code?: unknown }).code).toBe(code);
    expect(server.heads).toBe(0);
    expect(getRouter(client)?.stats().totals.routed).toBe(0);
  });

  it.each([
    ["a 2,000-level tool schema", () => deepTools(2000)],
    ["100,000 nested arrays", () => deepChat(100_000)],
  ])("the openai client, %s: sent once and answered, never an APIConnectionError", async (_name, make) => {
    const text = make();
    const decisions: Decision[] = [];
    const client = await routeOpenAI(new OpenAI({ apiKey: "k", baseURL: "http://fleet.invalid/v1", maxRetries: 2 }), {
      targets: [{ id: "a", baseURL: `${server.origin}/v1` }, { id: "b", baseURL: `${server.origin}/v2` }],
      onDecision: (d) => decisions.push(d),
    });
    const done = await client.post("/chat/completions", { body: text, headers: { "content-type": "application/json" } });
    expect(done).toMatchObject({ object: "chat.completion" });
    expect(server.seen.map((s) => s.body)).toEqual([text]);
    // Marked as the router reads the same body: a deep schema past the prefix stays canonical once
    // text mode reads tools only as far as the prefix needs.
    const direct = await createRouter({ targets: [{ id: "a" }, { id: "b" }] });
    expect(decisions.map((d) => d.input)).toEqual([direct.route({ body: text }).input]);
    expect(getRouter(client)?.stats().totals.inflight).toBe(0);
  });
});

describe("the SageMaker client: deep, invalid and hostile bodies", () => {
  function sagemaker() {
    return new SageMakerRuntimeClient({ region: "us-east-1", endpoint: server.origin, credentials: { accessKeyId: "a", secretAccessKey: "b" }, maxAttempts: 1 });
  }

  it.each([
    ["deep, canonicalizeBody on", () => deepChat(100_000), true],
    ["deep, canonicalizeBody off", () => deepChat(100_000), false],
    ["a deep tool schema, canonicalizeBody on", () => deepTools(2000), true],
    ["invalid JSON, canonicalizeBody on", () => '{"inputs": "x",}', true],
    ["not JSON at all, canonicalizeBody on", () => "\u0000raw", true],
  ])("%s: sent once as it came, routed on its raw bytes", async (_name, make, canonicalizeBody) => {
    const text = make();
    const decisions: Decision[] = [];
    const client = await routeSageMaker(sagemaker(), {
      targets: [{ id: "a", endpointName: "ep-a" }, { id: "b", endpointName: "ep-b" }],
      canonicalizeBody,
      onDecision: (d) => decisions.push(d),
    });
    await client.send(new InvokeEndpointCommand({ EndpointName: "x", Body: enc(text), ContentType: "application/json" }));
    expect(server.seen.map((s) => s.body)).toEqual([text]);
    expect(decisions).toHaveLength(1);
    expect(client.router.stats().totals.inflight).toBe(0);
  });

  it.each([["65 characters", "x".repeat(65)], ["a newline", "a\nb"], ["non-ASCII", "tenant-é"], ["empty", ""]])(
    "PrefixAwareId %s: ERR_INVALID_TENANT, nothing sent",
    async (_name, tenant) => {
      const client = await routeSageMaker(sagemaker(), { targets: [{ id: "a", endpointName: "ep-a" }] });
      const error = await client
        .send(new InvokeEndpointCommand({ EndpointName: "x", Body: enc('{"inputs":"x"}'), ContentType: "application/json", PrefixAwareId: tenant }))
        .catch((e: unknown) => e);
      expect(isRouterError(error) && error.code).toBe("ERR_INVALID_TENANT");
      expect(server.heads).toBe(0);
      expectNothingCounted(client.router);
    },
  );
});

describe("escaped object keys, after parses that leave V8's JSON.parse a transition to another key", () => {
  // On Node.js 24 and later, JSON.parse can read the last key `"\u0062"` as `\` once an object
  // with the same first keys and a `\` key has been parsed (https://github.com/nodejs/node/issues/63785).
  // Bodies the SDK re-serializes must still go out with the keys they were written with.
  const poison = (): void => {
    JSON.parse('{"model":[],"messages":[],"\\\\":0}');
  };
  const text = '{"model":"m","messages":[{"role":"user","content":"hi"}],"\\u0062":2}';
  const expected: Record<string, unknown> = { model: "m", messages: [{ role: "user", content: "hi" }], b: 2 };

  it("the SageMaker client with canonicalizeBody: the canonical body keeps every key", async () => {
    poison();
    const client = await routeSageMaker(
      new SageMakerRuntimeClient({ region: "us-east-1", endpoint: server.origin, credentials: { accessKeyId: "a", secretAccessKey: "b" }, maxAttempts: 1 }),
      { targets: [{ id: "a", endpointName: "ep-a" }] },
    );
    await client.send(new InvokeEndpointCommand({ EndpointName: "x", Body: enc(text), ContentType: "application/json" }));
    expect(server.seen.map((s) => s.body)).toEqual([canonicalize(expected)]);
    expect(server.seen[0]?.body).toBe('{"b":2,"messages":[{"content":"hi","role":"user"}],"model":"m"}');
  });

  it("the openai client with a tenant: the stamped body keeps every key", async () => {
    poison();
    const client = await routeOpenAI(new OpenAI({ apiKey: "k", baseURL: "http://fleet.invalid/v1", maxRetries: 0 }), {
      targets: [{ id: "a", baseURL: `${server.origin}/v1` }],
      tenant: "acme",
    });
    await client.post("/chat/completions", { body: text, headers: { "content-type": "application/json" } });
    // The fields are appended to the text as it came: every key keeps its spelling.
    expect(server.seen.map((s) => s.body)).toEqual([`${text.slice(0, -1)},"prompt_cache_key":"acme"}`]);
    expect(JSON.parse(server.seen[0]!.body)).toEqual({ ...expected, prompt_cache_key: "acme" });
  });
});
