/**
 * The real openai client, routed by routeOpenAI, against a 7-instance emulated vLLM fleet on
 * loopback; and createRoutedFetch with a plain fetch against the same fleet.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from "vitest";
import { type OpenAITarget, type RoutedRequestInfo, type RouteOpenAIOptions, TARGET_HEADER, createRoutedFetch, getRouter, routeOpenAI } from "prefix-router/openai";
import { DEFAULT_MODEL, type LiveFleet, startFleet } from "prefix-router/fleet";

const INSTANCES = 7;
const MODEL = DEFAULT_MODEL;
const INSTANCE_HEADER = "x-prefix-router-instance";

let fleet: LiveFleet;
let targets: OpenAITarget[];

beforeAll(async () => {
  fleet = await startFleet({ instances: INSTANCES, timeScale: 0.005, defaultMaxTokens: 8, seed: 7 });
  targets = fleet.instances.map((i) => ({ id: i.id, baseURL: `${i.url}/v1`, models: [MODEL] }));
});

afterAll(async () => {
  await fleet?.stop();
});

/** A client as an application would build it; the base URL is never contacted. */
function baseClient(): OpenAI {
  return new OpenAI({ apiKey: "test-key", baseURL: "http://fleet.invalid/v1", maxRetries: 0 });
}

async function routed(options: Partial<RouteOpenAIOptions> = {}): Promise<OpenAI> {
  return routeOpenAI(baseClient(), { targets, ...options });
}

/** A long shared beginning (≈ 2,500 tokens), different for each `topic`. */
function policy(topic: string): string {
  const lines: string[] = [];
  for (let i = 0; lines.join("\n").length < 10_000; i++) {
    lines.push(`${topic} rule ${i}: answer politely, cite section ${i}, never disclose account ${i * 7919}.`);
  }
  return lines.join("\n");
}

function messages(topic: string, question: string): OpenAI.Chat.ChatCompletionMessageParam[] {
  return [
    { role: "system", content: policy(topic) },
    { role: "user", content: question },
  ];
}

function inflightByTarget(client: OpenAI): number[] {
  return getRouter(client)?.stats().targets.map((t) => t.inflight) ?? [];
}

describe("routeOpenAI against a 7-instance fleet", () => {
  it("returns a client of the same class with its options kept, and exposes the router", async () => {
    const original = new OpenAI({ apiKey: "k", baseURL: "http://fleet.invalid/v1", maxRetries: 1, timeout: 12_345 });
    const client = await routeOpenAI(original, { targets });
    expectTypeOf(client).toEqualTypeOf<OpenAI>();
    expect(client).toBeInstanceOf(OpenAI);
    expect(client).not.toBe(original);
    expect([client.apiKey, client.baseURL, client.maxRetries, client.timeout]).toEqual(["k", "http://fleet.invalid/v1", 1, 12_345]);
    const router = getRouter(client);
    expect(router?.targets()).toHaveLength(INSTANCES);
    // A copy made from the routed client still routes, through the same router.
    expect(getRouter(client.withOptions({ timeout: 1000 }))).toBe(router);
    expect(getRouter(original)).toBeUndefined();
    await expect(routeOpenAI({} as OpenAI, { targets })).rejects.toThrow("Expected `client` to be an openai client");
  });

  it("sends requests with the same prefix to the same instance, cached tokens from the second on", async () => {
    const client = await routed({ targetHeader: true });
    const router = getRouter(client);
    const expected = router?.rank({ body: { model: MODEL, messages: messages("billing", "q") } }).targets[0]?.id;
    const seen: string[] = [];
    const cached: number[] = [];
    for (let i = 0; i < 6; i++) {
      const { data, response } = await client.chat.completions
        .create({ model: MODEL, messages: messages("billing", `Question ${i}: how do I pay?`) })
        .withResponse();
      seen.push(response.headers.get(INSTANCE_HEADER) as string);
      expect(response.headers.get(TARGET_HEADER)).toBe(seen.at(-1));
      cached.push(data.usage?.prompt_tokens_details?.cached_tokens ?? 0);
    }
    expect(new Set(seen)).toEqual(new Set([expected]));
    expect(cached[0]).toBe(0);
    for (const c of cached.slice(1)) expect(c).toBeGreaterThan(2000);
    const stats = router?.stats().targets.find((t) => t.id === expected);
    expect(stats?.routed).toBe(6);
    expect(stats?.share).toBe(1);
    expect(stats?.cachedTokenRatio).toBeGreaterThan(0.7);
    expect(stats?.ttftMs?.count).toBe(6);
    expect(stats?.ttftMs?.p99).toBeGreaterThan(0);
  });

  it("measures streams: TTFT at the first chunk, usage from the last one, lease until the end", async () => {
    const infos: RoutedRequestInfo[] = [];
    const client = await routed({ onRequestEnd: (i) => infos.push(i) });
    for (let i = 0; i < 3; i++) {
      const stream = await client.chat.completions.create({
        model: MODEL,
        messages: messages("streams", `stream ${i}`),
        stream: true,
        stream_options: { include_usage: true },
        max_tokens: 6,
      });
      let text = "";
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
      expect(text.length).toBeGreaterThan(0);
    }
    expect(infos.map((i) => [i.outcome, i.streaming, i.status])).toEqual(Array(3).fill(["success", true, 200]));
    for (const info of infos) {
      expect(info.ttftMs).not.toBeNull();
      expect(info.durationMs).toBeGreaterThanOrEqual(info.ttftMs as number);
    }
    expect(infos.slice(1).every((i) => (i.cachedTokens ?? 0) > 2000)).toBe(true);
    const totals = getRouter(client)?.stats().totals;
    expect(totals?.inflight).toBe(0);
    expect(totals?.cachedTokenRatio).toBeGreaterThan(0.5);
  });

  it("longest-prefix: a stream's prefill counts as queued on its instance until the first chunk, not until the end", async () => {
    const atSend: (number | undefined)[] = [];
    const client = await routed({
      strategy: "longest-prefix",
      // Called once the pick is made, as the request goes out: what the router counts as queued then.
      fetch: (url, init) => {
        atSend.push(queued());
        return fetch(url, init);
      },
    });
    const queued = () => getRouter(client)?.stats().prefixIndex?.targets.reduce((sum, t) => sum + t.queuedBlocks, 0);
    const stream = await client.chat.completions.create({ model: MODEL, messages: messages("queued", "q"), stream: true, max_tokens: 6 });
    // The whole uncached prompt (≈ 10,000 characters: 39 blocks of 256 and a partial one) was queued as it went out.
    expect(atSend).toEqual([40]);
    const chunks = stream[Symbol.asyncIterator]();
    await chunks.next();
    // First chunk read, the stream still open and its lease held: nothing queued any more.
    expect(queued()).toBe(0);
    expect(getRouter(client)?.stats().totals.inflight).toBe(1);
    while (!(await chunks.next()).done);
    expect(getRouter(client)?.stats().totals.inflight).toBe(0);
    expect(queued()).toBe(0);
  });

  it("longest-prefix: an instance that refused or failed a prompt is not credited with its cache", async () => {
    const infos: RoutedRequestInfo[] = [];
    // No bounded load: with it, two picks out of two would already put both instances past their share.
    const client = await routed({ strategy: "longest-prefix", longestPrefix: { loadFactor: Number.POSITIVE_INFINITY }, onRequestEnd: (i) => infos.push(i) });
    const router = getRouter(client);
    const blocks = (id: string) => router?.stats().prefixIndex?.targets.find((t) => t.id === id)?.blocks;
    const body = { model: MODEL, messages: messages("refused", "q"), max_tokens: 4 };
    const [firstChoice, secondChoice] = router?.rank({ body }).targets.map((t) => t.id) ?? [];
    const down = fleet.instance(firstChoice as string);
    const failing = fleet.instance(secondChoice as string);
    try {
      // The first choice refuses the connection; the retry goes to the second, which answers 503.
      await down.setFaults({ down: true });
      await failing.setFaults({ errorRate: 1, errorStatus: 503 });
      await expect(client.chat.completions.create(body)).rejects.toMatchObject({ status: 503 });
      expect(infos.map((i) => [i.target.id, i.outcome])).toEqual([
        [firstChoice, "connect-error"],
        [secondChoice, "server-error"],
      ]);
      expect([blocks(firstChoice as string), blocks(secondChoice as string)]).toEqual([0, 0]);
    } finally {
      await down.setFaults({ down: false });
      await failing.setFaults({ errorRate: 0 });
    }
    // Both back: the prompt is new to the router again and goes to its first choice, which now holds it.
    const { response } = await client.chat.completions.create(body).withResponse();
    expect(response.headers.get(INSTANCE_HEADER)).toBe(firstChoice);
    expect([blocks(firstChoice as string), blocks(secondChoice as string)]).toEqual([39, 0]);
    expect(router?.stats().totals.inflight).toBe(0);
  });

  it("places different tenants with the same prompt independently (prompt_cache_key)", async () => {
    const client = await routed();
    const router = getRouter(client);
    const placed = new Map<string, string>();
    for (let t = 0; t < 14; t++) {
      const tenant = `tenant-${t}`;
      const body = { model: MODEL, messages: messages("shared", "same question"), prompt_cache_key: tenant };
      const { response } = await client.chat.completions.create(body).withResponse();
      const instance = response.headers.get(INSTANCE_HEADER) as string;
      expect(instance).toBe(router?.rank({ body, tenant }).targets[0]?.id);
      placed.set(tenant, instance);
    }
    // 14 tenants over 7 instances: all on one instance has probability 7^-13.
    expect(new Set(placed.values()).size).toBeGreaterThan(1);
  });

  it("spills to the key's second choice at the concurrency threshold", async () => {
    const client = await routed({ concurrencyThreshold: 2 });
    const router = getRouter(client);
    const body = { model: MODEL, messages: messages("hot", "hot question") };
    const ranking = router?.rank({ body }).targets.map((t) => t.id) ?? [];
    const open = [];
    for (let i = 0; i < 3; i++) {
      // Held open: the lease lasts until the body has been read.
      open.push(await client.chat.completions.create({ ...body, stream: true, max_tokens: 4 }).withResponse());
    }
    expect(open.map((o) => o.response.headers.get(INSTANCE_HEADER))).toEqual([ranking[0], ranking[0], ranking[1]]);
    const stats = router?.stats();
    expect(stats?.totals.inflight).toBe(3);
    expect(stats?.targets.find((t) => t.id === ranking[1])?.spillover).toBe(1);
    for (const o of open) for await (const _ of o.data);
    expect(router?.stats().totals.inflight).toBe(0);
    expect(router?.stats().totals.spilloverRate).toBeCloseTo(1 / 3);
  });

  it("answers GET /models by least-outstanding routing", async () => {
    const kinds: string[] = [];
    const client = await routed({ onDecision: (d) => kinds.push(d.kind) });
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual([MODEL]);
    expect(kinds).toEqual(["least-outstanding"]);
  });

  it("retries a down instance on the next choice, ejects it, and returns to it once it recovers", async () => {
    let now = 0;
    const infos: RoutedRequestInfo[] = [];
    const client = await routed({
      clock: { now: () => now },
      ejection: { consecutiveFailures: 2, baseEjectionMs: 10_000, maxEjectionMs: 60_000 },
      onRequestEnd: (i) => infos.push(i),
    });
    const router = getRouter(client);
    const body = (i: number) => ({ model: MODEL, messages: messages("outage", `question ${i}`) });
    const [first, second] = router?.rank({ body: body(0) }).targets.map((t) => t.id) ?? [];
    const send = async (i: number) => {
      const { data, response } = await client.chat.completions.create(body(i)).withResponse();
      return { instance: response.headers.get(INSTANCE_HEADER), cached: data.usage?.prompt_tokens_details?.cached_tokens ?? 0 };
    };
    expect((await send(0)).instance).toBe(first); // warms `first`'s cache
    const down = fleet.instance(first as string);
    await down.setFaults({ down: true });
    try {
      infos.length = 0;
      expect((await send(1)).instance).toBe(second);
      expect((await send(2)).instance).toBe(second);
      expect(infos.map((i) => [i.target.id, i.attempt, i.outcome])).toEqual([
        [first, 1, "connect-error"],
        [second, 2, "success"],
        [first, 1, "connect-error"],
        [second, 2, "success"],
      ]);
      const ejected = router?.stats().targets.find((t) => t.id === first);
      expect(ejected).toMatchObject({ ejected: true, ejectedUntilMs: 10_000, failures: 2 });
      // Ejected: skipped without an attempt, while it keeps its place in the ranking.
      infos.length = 0;
      expect((await send(3)).instance).toBe(second);
      expect(infos.map((i) => [i.target.id, i.kind, i.rank])).toEqual([[second, "spillover", 1]]);
      expect(router?.rank({ body: body(0) }).targets[0]?.id).toBe(first);
    } finally {
      await down.setFaults({ down: false });
    }
    now = 10_001;
    const back = await send(4);
    expect(back.instance).toBe(first);
    expect(back.cached).toBeGreaterThan(2000); // the cache survived the partition
    expect(router?.stats().targets.find((t) => t.id === first)?.ejected).toBe(false);
    expect(router?.stats().totals.inflight).toBe(0);
  });

  it("reports failures as the openai client's own error classes", async () => {
    const client = await routed();
    const notServed = client.chat.completions.create({ model: "not-served", messages: messages("x", "y") });
    await expect(notServed).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(notServed).rejects.toMatchObject({ status: 404, code: "ERR_NO_ELIGIBLE_TARGET" });
    const badTenant = client.chat.completions.create({ model: MODEL, messages: messages("x", "y"), prompt_cache_key: "x".repeat(65) });
    await expect(badTenant).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    await expect(badTenant).rejects.toMatchObject({ code: "ERR_INVALID_TENANT" });

    const body = { model: MODEL, messages: messages("errors", "q") };
    const first = getRouter(client)?.rank({ body }).targets[0]?.id as string;
    await fleet.instance(first).setFaults({ errorRate: 1 });
    try {
      await expect(client.chat.completions.create(body)).rejects.toBeInstanceOf(OpenAI.InternalServerError);
    } finally {
      await fleet.instance(first).setFaults({ errorRate: 0 });
    }
    expect(getRouter(client)?.stats().targets.find((t) => t.id === first)?.failures).toBe(1);

    const nowhere = await routeOpenAI(baseClient(), { targets: [{ id: "dead", baseURL: "http://127.0.0.1:1/v1" }] });
    await expect(nowhere.chat.completions.create(body)).rejects.toBeInstanceOf(OpenAI.APIConnectionError);
    expect(getRouter(nowhere)?.stats().totals.inflight).toBe(0);
  });

  it("1,000 concurrent streams with random cancellations and aborts leave every in-flight count at 0", async () => {
    await fleet.instance("i3").setFaults({ resetStreamRate: 0.2, streamErrorRate: 0.1 });
    let ended = 0;
    let retried = 0;
    const client = await routed({
      concurrencyThreshold: 64,
      onRequestEnd: (info) => {
        ended++;
        if (info.attempt > 1) retried++;
      },
    });
    let seed = 12345;
    const random = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    let preAborted = 0;
    const outcomes = new Map<string, number>();
    const count = (k: string) => outcomes.set(k, (outcomes.get(k) ?? 0) + 1);
    const one = async (i: number) => {
      const action = Math.floor(random() * 6);
      const abort = new AbortController();
      const steps = 1 + Math.floor(random() * 5);
      if (action === 5) {
        abort.abort(); // aborted before it is sent: never routed
        preAborted++;
      }
      try {
        const stream = await client.chat.completions.create(
          {
            model: MODEL,
            messages: messages(`topic-${i % 23}`, `q${i}`),
            stream: true,
            stream_options: { include_usage: true },
            max_tokens: 4 + Math.floor(random() * 12),
          },
          { signal: abort.signal },
        );
        let n = 0;
        for await (const _ of stream) {
          n++;
          if (action === 1 && n === steps) break; // leave for-await early
          if (action === 2 && n === steps) abort.abort(); // abort mid-stream
          if (action === 3 && n === steps) stream.controller.abort();
          if (action === 4 && n === steps) await new Promise((r) => setTimeout(r, random() * 5));
        }
        count(`done:${action}`);
      } catch (error) {
        count(error instanceof OpenAI.APIError ? error.constructor.name : String((error as Error).name));
      }
    };
    try {
      await Promise.all(Array.from({ length: 1000 }, (_, i) => one(i)));
    } finally {
      await fleet.instance("i3").setFaults({ resetStreamRate: 0, streamErrorRate: 0 });
    }
    const stats = getRouter(client)?.stats();
    expect(stats?.totals.inflight).toBe(0);
    expect(inflightByTarget(client)).toEqual(Array(INSTANCES).fill(0));
    // Every lease ended once; only connection failures before a response (a reset that beat the
    // response headers) were sent again.
    expect(stats?.totals.routed).toBe(ended);
    expect(ended - retried).toBe(1000 - preAborted);
    // Every path was taken.
    for (const action of [0, 1, 2, 3, 4]) expect(outcomes.get(`done:${action}`) ?? 0).toBeGreaterThan(0);
    expect((outcomes.get("APIUserAbortError") ?? 0) + (outcomes.get("AbortError") ?? 0)).toBeGreaterThan(0);
  });
});

describe("createRoutedFetch with a plain fetch against the fleet", () => {
  it("routes a hand-written JSON call and a streamed one, and measures both", async () => {
    const { fetch, router } = await createRoutedFetch({ targets, baseURL: "http://fleet.invalid/v1" });
    const body = (q: string, stream = false) =>
      JSON.stringify({
        model: MODEL,
        messages: messages("plain", q),
        max_tokens: 5,
        ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
      });
    const expected = router.rank({ body: JSON.parse(body("a")) }).targets[0]?.id;
    const res = await fetch("http://fleet.invalid/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: body("a"),
    });
    expect(res.headers.get(INSTANCE_HEADER)).toBe(expected);
    const json = (await res.json()) as { choices: unknown[] };
    expect(json.choices).toHaveLength(1);
    expect(router.stats().totals.inflight).toBe(0);

    const streamed = await fetch("http://fleet.invalid/v1/chat/completions?x=1", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: body("b", true),
    });
    expect(streamed.headers.get("content-type")).toContain("text/event-stream");
    expect(streamed.headers.get(INSTANCE_HEADER)).toBe(expected);
    expect(router.stats().totals.inflight).toBe(1);
    const text = await streamed.text();
    expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true);
    const target = router.stats().targets.find((t) => t.id === expected);
    expect(target).toMatchObject({ inflight: 0, routed: 2 });
    expect(target?.cachedTokenRatio).toBeGreaterThan(0.4);
    expect(target?.ttftMs?.count).toBe(2);
  });

  it("errors the body on abort even after the whole of it arrived (Node 20's fetch alone would hang: nodejs/undici#4089)", async () => {
    // A server whose stream arrives in three pieces, 20 ms apart, then ends.
    const server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      const pieces = ["data: 1\n\n", "data: 2\n\n", "data: 3\n\n"];
      const next = () => {
        const piece = pieces.shift();
        if (piece === undefined) res.end();
        else {
          res.write(piece);
          setTimeout(next, 20);
        }
      };
      next();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const { fetch, router } = await createRoutedFetch({ targets: [{ id: "sse", baseURL: `http://127.0.0.1:${port}/v1` }], baseURL: "http://app.invalid/v1" });
      const abort = new AbortController();
      const res = await fetch("http://app.invalid/v1/chat/completions", { method: "POST", body: "{}", signal: abort.signal });
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      await reader.read();
      // The rest has arrived and the response has ended on the wire; the reader has not seen the end.
      await new Promise((r) => setTimeout(r, 150));
      abort.abort();
      expect(router.stats().totals.inflight).toBe(0);
      const read = async (): Promise<string> => {
        for (;;) {
          const r = await reader.read();
          if (r.done) return "a clean end";
        }
      };
      const outcome = await Promise.race([
        read().catch((e: unknown) => (e as Error).name),
        new Promise((r) => setTimeout(() => r("still waiting after 2 s"), 2000)),
      ]);
      expect(outcome).toBe("AbortError");
    } finally {
      server.close();
    }
  });
});
