/**
 * Misbehaving servers on loopback, through the real openai client (routeOpenAI) and
 * createRoutedFetch over Node's fetch: redirects to another host, a partial status line then a
 * reset, a reset mid-body, stalled headers, garbage and truncated event streams, a client that
 * stops reading once it has the usage. Each case checks what reached which server, how the
 * lease ended and that every in-flight count is back to 0.
 */
import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Router, isRouterError } from "prefix-router";
import { MAX_REDIRECTS, type RoutedRequestInfo, createRoutedFetch, getRouter, routeOpenAI } from "prefix-router/openai";
import {
  type Behaviour,
  type LoopbackServer,
  chatBody,
  garbageSse,
  ok,
  partialStatusThenReset,
  redirect,
  resetMidBody,
  sse,
  stall,
  startServer,
  status,
  truncatedSse,
} from "./servers.js";

let a: LoopbackServer;
let b: LoopbackServer;
let attacker: LoopbackServer;

beforeAll(async () => {
  [a, b, attacker] = await Promise.all([startServer(), startServer(), startServer()]);
});
afterEach(() => {
  for (const s of [a, b, attacker]) {
    s.seen.length = 0;
    s.heads = 0;
    s.behaviour = ok();
  }
});
afterAll(async () => {
  await Promise.all([a.close(), b.close(), attacker.close()]);
});

const SECRET = { authorization: "Bearer target-secret" };

/** Both servers behave alike, so it does not matter which one the key picks. */
function both(behaviour: Behaviour): void {
  a.behaviour = behaviour;
  b.behaviour = behaviour;
}

const heads = (): number => a.heads + b.heads;

/** `first` for the first request either server sees, `then` for every later one. */
function once(first: Behaviour, then: Behaviour): Behaviour {
  let used = false;
  return (req, res, seen) => {
    const behaviour = used ? then : first;
    used = true;
    behaviour(req, res, seen);
  };
}

async function fetchRouted(options: Record<string, unknown> = {}) {
  const infos: RoutedRequestInfo[] = [];
  const routed = await createRoutedFetch({
    targets: [
      { id: "a", baseURL: `${a.origin}/v1`, headers: SECRET },
      { id: "b", baseURL: `${b.origin}/v1`, headers: SECRET },
    ],
    baseURL: "http://fleet.invalid/v1",
    onRequestEnd: (i) => infos.push(i),
    ...options,
  });
  const post = (body: unknown = chatBody("servers"), init: RequestInit = {}) =>
    routed.fetch("http://fleet.invalid/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), ...init });
  return { ...routed, infos, post };
}

async function openai(options: Record<string, unknown> = {}, maxRetries = 2): Promise<{ client: OpenAI; router: Router; infos: RoutedRequestInfo[] }> {
  const infos: RoutedRequestInfo[] = [];
  const client = await routeOpenAI(new OpenAI({ apiKey: "k", baseURL: "http://fleet.invalid/v1", maxRetries }), {
    targets: [
      { id: "a", baseURL: `${a.origin}/v1`, headers: SECRET },
      { id: "b", baseURL: `${b.origin}/v1`, headers: SECRET },
    ],
    onRequestEnd: (i) => infos.push(i),
    ...options,
  });
  return { client, router: getRouter(client) as Router, infos };
}

async function errorOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (e: unknown) => e,
  );
}

describe("redirects: never followed to another origin", () => {
  it.each([301, 302, 303, 307, 308])("createRoutedFetch: a %i to the attacker is the answer, nothing resent", async (code) => {
    both(redirect(code, `${attacker.origin}/steal`));
    const { post, router, infos } = await fetchRouted();
    const res = await post();
    expect(res.status).toBe(code);
    expect(res.headers.get("location")).toBe(`${attacker.origin}/steal`);
    await res.text();
    expect([heads(), attacker.heads]).toEqual([1, 0]);
    expect(infos.map((i) => i.outcome)).toEqual(["client-error"]);
    expect(router.stats().totals).toMatchObject({ inflight: 0, failures: 0, ttftMs: null });
  });

  it.each([301, 302, 303, 307, 308])("the openai client: a %i to the attacker becomes an APIError, not retried", async (code) => {
    both(redirect(code, `${attacker.origin}/steal`));
    const { client, router } = await openai();
    const error = await errorOf(client.chat.completions.create(chatBody("redirect") as never));
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as { status?: number }).status).toBe(code);
    expect([heads(), attacker.heads]).toEqual([1, 0]);
    expect(router.stats().totals.inflight).toBe(0);
  });

  it("same-origin: a 307 on the target's origin is followed with method and body; one to the attacker is not", async () => {
    both(once(redirect(307, "/v1/moved"), ok()));
    const { post, router } = await fetchRouted({ redirect: "same-origin" });
    const res = await post();
    expect(res.status).toBe(200);
    await res.json();
    const seen = [...a.seen, ...b.seen];
    expect(seen.map((s) => [s.method, s.url, s.body.length > 0, s.headers.authorization])).toEqual([
      ["POST", "/v1/chat/completions", true, SECRET.authorization],
      ["POST", "/v1/moved", true, SECRET.authorization],
    ]);
    both(redirect(307, `${attacker.origin}/steal`));
    const away = await post();
    expect(away.status).toBe(307);
    await away.text();
    expect(attacker.heads).toBe(0);
    expect(router.stats().totals.inflight).toBe(0);
  });

  it("same-origin: a 303 becomes a GET without body; a redirect loop stops after MAX_REDIRECTS", async () => {
    both(once(redirect(303, "/v1/result"), ok()));
    const { post, router } = await fetchRouted({ redirect: "same-origin" });
    await (await post()).json();
    const seen = [...a.seen, ...b.seen];
    expect(seen.map((s) => [s.method, s.url, s.body, s.headers["content-type"]])).toEqual([
      ["POST", "/v1/chat/completions", JSON.stringify(chatBody("servers")), "application/json"],
      ["GET", "/v1/result", "", undefined],
    ]);
    both(redirect(308, "/v1/chat/completions"));
    a.heads = b.heads = 0;
    const loop = await post();
    expect(loop.status).toBe(308);
    await loop.text();
    expect(heads()).toBe(MAX_REDIRECTS + 1);
    expect(router.stats().totals.inflight).toBe(0);
  });
});

describe("retries: only when the request was never written", () => {
  it("a partial status line then a reset: createRoutedFetch tries once and rejects with ERR_CONNECTION_LOST", async () => {
    both(partialStatusThenReset());
    const { post, router, infos } = await fetchRouted({ attempts: 3 });
    const error = await errorOf(post());
    expect(isRouterError(error) && error.code).toBe("ERR_CONNECTION_LOST");
    expect(heads()).toBe(1);
    expect(infos.map((i) => i.outcome)).toEqual(["connect-error"]);
    expect(router.stats().totals).toMatchObject({ inflight: 0, failures: 1 });
  });

  it("a partial status line then a reset: the openai client (maxRetries 2) gets a 502 it does not retry", async () => {
    both(partialStatusThenReset());
    const { client, router } = await openai();
    const error = await errorOf(client.chat.completions.create(chatBody("partial") as never));
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    expect(error).toMatchObject({ status: 502, code: "ERR_CONNECTION_LOST" });
    expect(heads()).toBe(1);
    expect(router.stats().totals.inflight).toBe(0);
  });

  it("a refused connection goes to the key's next target, which answers once", async () => {
    const gone = await startServer();
    await gone.close();
    const client = await routeOpenAI(new OpenAI({ apiKey: "k", baseURL: "http://fleet.invalid/v1", maxRetries: 0 }), {
      targets: [
        { id: "gone", baseURL: `${gone.origin}/v1` },
        { id: "a", baseURL: `${a.origin}/v1` },
      ],
    });
    const router = getRouter(client) as Router;
    let body = chatBody("refused-0");
    for (let i = 1; router.rank({ body }).targets[0]?.id !== "gone"; i++) body = chatBody(`refused-${i}`);
    const done = await client.chat.completions.create(body as never);
    expect(done.choices[0]?.message.content).toBe("ok");
    expect(a.heads).toBe(1);
    expect(router.stats().targets.find((t) => t.id === "gone")?.failures).toBe(1);
    expect(router.stats().totals.inflight).toBe(0);
  });

  it("a reset in the middle of a JSON body: the openai client fails, nothing is resent", async () => {
    both(resetMidBody());
    const { client, router, infos } = await openai();
    const error = await errorOf(client.chat.completions.create(chatBody("mid-body") as never));
    expect(error).toBeInstanceOf(Error);
    expect(heads()).toBe(1);
    expect(infos.map((i) => i.outcome)).toEqual(["connect-error"]);
    expect(router.stats().totals.inflight).toBe(0);
  });

  it("stalled headers: the caller's abort ends the lease as cancelled, counted against nobody, never resent", async () => {
    both(stall());
    const { client, router, infos } = await openai();
    const controller = new AbortController();
    const pending = errorOf(client.chat.completions.create(chatBody("stall") as never, { signal: controller.signal }));
    while (heads() === 0) await new Promise((r) => setImmediate(r));
    expect(router.stats().totals.inflight).toBe(1);
    controller.abort();
    expect(await pending).toBeInstanceOf(OpenAI.APIUserAbortError);
    expect(heads()).toBe(1);
    expect(infos.map((i) => i.outcome)).toEqual(["cancelled"]);
    expect(router.stats().totals).toMatchObject({ inflight: 0, failures: 0 });
  });
});

describe("event streams", () => {
  const streamBody = (topic: string) => ({ ...chatBody(topic), stream: true, stream_options: { include_usage: true } });

  it("a client that stops once it has the usage (as LangChain does) records a success and the cached tokens", async () => {
    both(sse(3, "hold"));
    const { client, router, infos } = await openai();
    const stream = await client.chat.completions.create(streamBody("langchain") as never);
    let text = "";
    for await (const chunk of stream as unknown as AsyncIterable<OpenAI.ChatCompletionChunk>) {
      text += chunk.choices[0]?.delta.content ?? "";
      if (chunk.usage) break;
    }
    expect(text).toBe("t0t1t2");
    expect(infos.map((i) => [i.outcome, i.promptTokens, i.cachedTokens])).toEqual([["success", 120, 96]]);
    expect(router.stats().totals).toMatchObject({ inflight: 0, cachedTokenRatio: 0.8 });
  });

  it("a client that stops before the usage records a cancellation without usage", async () => {
    both(sse(3, "no-usage"));
    const { client, router, infos } = await openai();
    const stream = await client.chat.completions.create(streamBody("early") as never);
    for await (const _chunk of stream as unknown as AsyncIterable<unknown>) break;
    expect(infos.map((i) => [i.outcome, i.cachedTokens])).toEqual([["cancelled", undefined]]);
    expect(router.stats().totals).toMatchObject({ inflight: 0, cachedTokenRatio: null });
  });

  it("a reset after the usage chunk: the answer was complete, a success with its usage", async () => {
    both(sse(2, "reset"));
    const { post, router, infos } = await fetchRouted();
    const res = await post(streamBody("reset-after"));
    await errorOf(res.text());
    expect(infos.map((i) => [i.outcome, i.cachedTokens])).toEqual([["success", 96]]);
    expect(router.stats().totals).toMatchObject({ inflight: 0, failures: 0 });
  });

  it("garbage events: the client fails on them, the lease ends, the impossible usage is dropped", async () => {
    both(garbageSse());
    const { client, router, infos } = await openai();
    const stream = await client.chat.completions.create(streamBody("garbage") as never);
    const error = await errorOf((async () => {
      for await (const _chunk of stream as unknown as AsyncIterable<unknown>);
    })());
    expect(error).toBeInstanceOf(Error);
    expect(infos).toHaveLength(1);
    expect(infos[0]?.cachedTokens).toBeUndefined();
    expect(router.stats().totals).toMatchObject({ inflight: 0, cachedTokenRatio: null });
  });

  it("a stream cut off cleanly in the middle of an event: ends, no usage, in-flight back to 0", async () => {
    both(truncatedSse());
    const { post, router, infos } = await fetchRouted();
    const res = await post(streamBody("truncated"));
    expect(await res.text()).toContain("chat.compl");
    expect(infos.map((i) => [i.outcome, i.cachedTokens])).toEqual([["success", undefined]]);
    expect(router.stats().totals.inflight).toBe(0);
  });
});

describe("answers that count against a target, and answers that do not", () => {
  it("a 4xx neither breaks a run of failures nor heals it: the target is ejected on the third 5xx", async () => {
    const { post, router } = await fetchRouted({ ejection: { consecutiveFailures: 3, baseEjectionMs: 60_000 } });
    const body = chatBody("ejection");
    const first = router.rank({ body }).targets[0]?.id;
    const server = first === "a" ? a : b;
    for (const code of [500, 500, 400, 500]) {
      server.behaviour = status(code);
      await (await post(body)).text();
    }
    const stats = router.stats().targets.find((t) => t.id === first);
    expect(stats).toMatchObject({ ejected: true, failures: 3 });
    expect(router.stats().totals.inflight).toBe(0);
  });

  it("a server's own x-prefix-router-target header is replaced when the header is asked for", async () => {
    both((_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "x-prefix-router-target": "spoofed" });
      res.end("{}");
    });
    const { post } = await fetchRouted({ targetHeader: true });
    const res = await post();
    await res.text();
    expect(["a", "b"]).toContain(res.headers.get("x-prefix-router-target"));
  });
});

describe("Responses ids: a server cannot make the adapter keep ids of any size", () => {
  const usage = { input_tokens: 40, input_tokens_details: { cached_tokens: 0 }, output_tokens: 1, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 41 };
  const response = (id: string, status: string) => ({ id, object: "response", created_at: 0, model: "m", status, output: [], usage: status === "completed" ? usage : null });
  const event = (type: string, fields: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...fields })}\n\n`;

  /** A Responses server: `POST /responses` with `stream` answers with `idOf(n)` in `response.created`, without it as the JSON body's `id`. */
  function responsesServer(idOf: (n: number) => string): Behaviour {
    let created = 0;
    let followUps = 0;
    return (_req, res, seen) => {
      const body = JSON.parse(seen.body) as { stream?: boolean; previous_response_id?: string };
      // A follow-up gets a short id of its own.
      const id = body.previous_response_id === undefined ? idOf(created++) : `resp_followup_${followUps++}`;
      if (body.stream === true) {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write(event("response.created", { sequence_number: 0, response: response(id, "in_progress") }));
        res.write(event("response.output_text.delta", { sequence_number: 1, item_id: "msg_1", output_index: 0, content_index: 0, delta: "x", logprobs: [] }));
        res.end(event("response.completed", { sequence_number: 2, response: response(id, "completed") }));
      } else {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(response(id, "completed")));
      }
    };
  }

  /** Creates a response (streamed or not) through the real openai client, then continues it; returns the follow-up's pick kind. */
  async function followUpKind(client: OpenAI, infos: RoutedRequestInfo[], stream: boolean): Promise<string | undefined> {
    let id: string | undefined;
    if (stream) {
      for await (const e of await client.responses.create({ model: "m", input: "first turn", stream: true })) if (e.type === "response.created") id = e.response.id;
    } else {
      id = (await client.responses.create({ model: "m", input: "first turn" })).id;
    }
    await client.responses.create({ model: "m", input: "second turn", previous_response_id: id! });
    return infos.at(-1)?.kind;
  }

  it.each([
    ["streamed", true],
    ["JSON", false],
  ])("%s: an id of 512 characters is remembered, one of 513 or 1 MiB is not (the follow-up is routed like any request)", async (_name, stream) => {
    const sizes = [512, 513, 1024 * 1024, 512];
    both(responsesServer((n) => `resp_${String(n)}`.padEnd(sizes[n]!, "x")));
    const { client, router, infos } = await openai({}, 0);
    const kinds: (string | undefined)[] = [];
    for (let i = 0; i < sizes.length; i++) kinds.push(await followUpKind(client, infos, stream as boolean));
    expect(kinds.map((k) => k === "affinity")).toEqual([true, false, false, true]);
    expect(router.stats().totals.inflight).toBe(0);
  });
});
