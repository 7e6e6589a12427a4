/**
 * createRoutedFetch with a fake `fetch` at the edge: URL rewriting, headers, routing facts,
 * retries, and every way a lease can end. The fleet tests (client.test.ts) run the same
 * paths over real HTTP with the real openai client.
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { isRouterError } from "prefix-router";
import { type FetchLike, type OpenAITarget, type RoutedRequestInfo, TARGET_HEADER, createRoutedFetch } from "prefix-router/openai";

const targets: OpenAITarget[] = [
  { id: "a", baseURL: "http://a.test:8000/v1" },
  { id: "b", baseURL: "http://b.test:8000/v1/", headers: { authorization: "Bearer b-key" } },
  { id: "c", baseURL: "http://c.test/", models: ["other"] },
];

interface Call {
  url: string;
  init: RequestInit;
}

/** A fetch that answers from `respond` and records calls. */
function fakeFetch(respond: (call: Call) => Response | Promise<Response>): { fetch: FetchLike; calls: Call[] } {
  const calls: Call[] = [];
  const fetch: FetchLike = async (input, init) => {
    const call = { url: String(input), init: init ?? {} };
    calls.push(call);
    return respond(call);
  };
  return { fetch, calls };
}

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

/** An SSE body the test feeds chunk by chunk. */
function controllable(): { response: Response; push(text: string): void; close(): void; fail(e: unknown): void } {
  let ctl!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({ start: (c) => void (ctl = c) });
  const enc = new TextEncoder();
  return {
    response: new Response(body, { headers: { "content-type": "text/event-stream" } }),
    push: (text) => ctl.enqueue(enc.encode(text)),
    close: () => ctl.close(),
    fail: (e) => ctl.error(e),
  };
}

function connectError(code: string): TypeError {
  return new TypeError("fetch failed", { cause: Object.assign(new Error(`connect ${code}`), { code }) });
}

const chat = (content: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model: "m", messages: [{ role: "system", content: "policy ".repeat(200) }, { role: "user", content }], ...extra });

const usage = { prompt_tokens: 100, completion_tokens: 2, total_tokens: 102, prompt_tokens_details: { cached_tokens: 64 } };

function inflight(router: { stats(): { totals: { inflight: number } } }): number {
  return router.stats().totals.inflight;
}

describe("createRoutedFetch: requests", () => {
  it("rewrites the URL onto the target's baseURL, keeps path suffix and query, merges target headers", async () => {
    const { fetch: fake, calls } = fakeFetch(() => json({ ok: true }));
    // keyScope "prefix": each question its own key, so the 40 requests reach both eligible targets.
    const { fetch, router } = await createRoutedFetch({ targets, fetch: fake, baseURL: "https://api.example/v1/", targetHeader: true, keyScope: "prefix" });
    const byId = new Map<string, string>();
    for (let i = 0; i < 40; i++) {
      const res = await fetch("https://api.example/v1/chat/completions?api-version=2", {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer client-key" },
        body: chat(`q${i}`),
      });
      await res.json();
      const id = res.headers.get(TARGET_HEADER) as string;
      byId.set(id, calls.at(-1)?.url as string);
      const sent = new Headers(calls.at(-1)?.init.headers);
      expect(sent.get("authorization")).toBe(id === "b" ? "Bearer b-key" : "Bearer client-key");
      expect(sent.get("content-type")).toBe("application/json");
    }
    expect(byId.get("a")).toBe("http://a.test:8000/v1/chat/completions?api-version=2");
    expect(byId.get("b")).toBe("http://b.test:8000/v1/chat/completions?api-version=2");
    // `c` serves only "other": never eligible for model "m".
    expect(byId.has("c")).toBe(false);
    expect(inflight(router)).toBe(0);
  });

  it("passes a URL outside the client's base through unrouted", async () => {
    const { fetch: fake, calls } = fakeFetch(() => json({}));
    const { fetch, router } = await createRoutedFetch({ targets, fetch: fake, baseURL: "https://api.example/v1", targetHeader: true });
    const res = await fetch("https://elsewhere.example/v1/files", { method: "GET" });
    await res.text();
    expect(calls[0]?.url).toBe("https://elsewhere.example/v1/files");
    expect(res.headers.get(TARGET_HEADER)).toBeNull();
    expect(router.stats().totals.routed).toBe(0);
  });

  it("without baseURL strips the target's own base path from the request path", async () => {
    const { fetch: fake, calls } = fakeFetch(() => json({}));
    const { fetch } = await createRoutedFetch({ targets: [targets[0] as OpenAITarget], fetch: fake });
    await (await fetch("http://fleet.invalid/v1/models")).text();
    await (await fetch(new URL("http://fleet.invalid/chat/completions"), { method: "POST", body: chat("x") })).text();
    expect(calls.map((c) => c.url)).toEqual(["http://a.test:8000/v1/models", "http://a.test:8000/v1/chat/completions"]);
  });

  it("accepts a Request as input, body included", async () => {
    const { fetch: fake, calls } = fakeFetch(() => json({}));
    const { fetch, router } = await createRoutedFetch({ targets, fetch: fake, baseURL: "http://fleet.invalid/v1" });
    const request = new Request("http://fleet.invalid/v1/chat/completions", { method: "POST", body: chat("hello") });
    await (await fetch(request)).text();
    expect(calls[0]?.init.method).toBe("POST");
    expect(new TextDecoder().decode(calls[0]?.init.body as ArrayBuffer)).toBe(chat("hello"));
    const expected = router.rank({ body: JSON.parse(chat("hello")) }).targets[0]?.id;
    expect(calls[0]?.url.startsWith(`http://${expected}.test`)).toBe(true);
  });

  it("routes by prompt, tenant (prompt_cache_key) and model; a request without prompt by least-outstanding", async () => {
    const kinds: string[] = [];
    const { fetch: fake } = fakeFetch(() => json({}));
    const { fetch, router } = await createRoutedFetch({
      targets,
      fetch: fake,
      onDecision: (d) => kinds.push(`${d.kind}:${d.tenant ?? "-"}:${d.key === undefined ? "nokey" : "key"}`),
    });
    await (await fetch("http://x/v1/chat/completions", { method: "POST", body: chat("q", { prompt_cache_key: "t1" }) })).text();
    await (await fetch("http://x/v1/models")).text();
    expect(kinds).toEqual(["preferred:t1:key", "least-outstanding:-:nokey"]);
    // Same prompt, two tenants: two keys, each placed by its own ranking.
    const r1 = router.rank({ body: JSON.parse(chat("q")), tenant: "t1" });
    const r2 = router.rank({ body: JSON.parse(chat("q")), tenant: "t2" });
    expect(r1.key).not.toBe(r2.key);
  });

  it("rejects routing errors with a RouterError", async () => {
    const { fetch: fake, calls } = fakeFetch(() => json({}));
    const { fetch } = await createRoutedFetch({ targets: targets.map((t) => ({ ...t, models: ["m"] })), fetch: fake });
    await expect(fetch("http://x/v1/chat/completions", { method: "POST", body: chat("q", { model: "nope" }) })).rejects.toSatisfy(
      (e) => isRouterError(e) && e.code === "ERR_NO_ELIGIBLE_TARGET",
    );
    await expect(
      fetch("http://x/v1/chat/completions", { method: "POST", body: chat("q", { prompt_cache_key: "é".repeat(3) }) }),
    ).rejects.toSatisfy((e) => isRouterError(e) && e.code === "ERR_INVALID_TENANT");
    expect(calls).toHaveLength(0);
  });
});

describe("createRoutedFetch: failures and retries", () => {
  it("retries a refused connection on the key's next target, once by default", async () => {
    const infos: RoutedRequestInfo[] = [];
    let first: string | undefined;
    const { fetch: fake, calls } = fakeFetch((call) => {
      if (first === undefined) {
        first = call.url;
        throw connectError("ECONNREFUSED");
      }
      return json({ usage });
    });
    const { fetch, router } = await createRoutedFetch({ targets, fetch: fake, onRequestEnd: (i) => infos.push(i), targetHeader: true });
    const body = chat("retry me");
    const ranking = router.rank({ body: JSON.parse(body) }).targets.map((t) => t.id);
    const res = await fetch("http://x/v1/chat/completions", { method: "POST", body });
    await res.json();
    expect(res.headers.get(TARGET_HEADER)).toBe(ranking[1]);
    expect(calls).toHaveLength(2);
    expect(infos.map((i) => [i.target.id, i.attempt, i.outcome, i.status])).toEqual([
      [ranking[0], 1, "connect-error", undefined],
      [ranking[1], 2, "success", 200],
    ]);
    expect(infos[1]).toMatchObject({ promptTokens: 100, cachedTokens: 64, streaming: false });
    const stats = new Map(router.stats().targets.map((t) => [t.id, t]));
    expect(stats.get(ranking[0] as string)?.failures).toBe(1);
    expect(inflight(router)).toBe(0);
  });

  it("gives up after `attempts` and throws the connection error; resets, aborts and local errors are not retried", async () => {
    const { fetch: fake, calls } = fakeFetch(() => {
      throw connectError("ECONNREFUSED");
    });
    const { fetch, router } = await createRoutedFetch({ targets, fetch: fake, attempts: 3 });
    // Only two targets serve "m", so a third attempt has nowhere new to go.
    await expect(fetch("http://x/v1/chat/completions", { method: "POST", body: chat("q") })).rejects.toThrow("fetch failed");
    expect(calls).toHaveLength(2);
    expect(inflight(router)).toBe(0);

    // A reset may come after the request was written: one attempt, ERR_CONNECTION_LOST, the reset as its cause.
    const reset = fakeFetch(() => {
      throw connectError("ECONNRESET");
    });
    const r1 = await createRoutedFetch({ targets, fetch: reset.fetch, attempts: 3 });
    const lost = await r1.fetch("http://x/v1/chat/completions", { method: "POST", body: chat("q") }).catch((e: unknown) => e);
    expect(isRouterError(lost) && lost.code).toBe("ERR_CONNECTION_LOST");
    expect((lost as Error).cause).toBeInstanceOf(TypeError);
    expect(reset.calls).toHaveLength(1);
    expect(r1.router.stats().totals.failures).toBe(1);

    const local = fakeFetch(() => {
      throw new TypeError("Invalid header value");
    });
    const r2 = await createRoutedFetch({ targets, fetch: local.fetch });
    await expect(r2.fetch("http://x/v1/chat/completions", { method: "POST", body: chat("q") })).rejects.toThrow("Invalid header");
    expect(local.calls).toHaveLength(1);
    expect(r2.router.stats().totals.failures).toBe(0);

    const headersTimeout = fakeFetch(() => {
      throw new TypeError("fetch failed", { cause: Object.assign(new Error("Headers Timeout Error"), { code: "UND_ERR_HEADERS_TIMEOUT" }) });
    });
    const r3 = await createRoutedFetch({ targets, fetch: headersTimeout.fetch });
    await expect(r3.fetch("http://x/v1/chat/completions", { method: "POST", body: chat("q") })).rejects.toThrow();
    expect(headersTimeout.calls).toHaveLength(1);
    expect(r3.router.stats().totals.failures).toBe(1);
  });

  it("does not retry a stream body (not replayable)", async () => {
    const { fetch: fake, calls } = fakeFetch(() => {
      throw connectError("ECONNREFUSED");
    });
    const { fetch } = await createRoutedFetch({ targets, fetch: fake });
    const body = new ReadableStream({ start: (c) => c.close() });
    await expect(fetch("http://x/v1/files", { method: "POST", body, duplex: "half" } as RequestInit)).rejects.toThrow();
    expect(calls).toHaveLength(1);
  });

  it("never retries once headers arrived: a 5xx is returned, counted as a failure, and ejects after N in a row", async () => {
    const { fetch: fake, calls } = fakeFetch(() => json({ error: { message: "boom" } }, 500));
    let now = 0;
    const { fetch, router } = await createRoutedFetch({
      targets: [targets[0] as OpenAITarget, targets[1] as OpenAITarget],
      fetch: fake,
      clock: { now: () => now },
      ejection: { consecutiveFailures: 2, baseEjectionMs: 1000, maxEjectionMs: 4000 },
      targetHeader: true,
    });
    const body = chat("hot");
    const first = router.rank({ body: JSON.parse(body) }).targets[0]?.id;
    for (let i = 0; i < 2; i++) {
      const res = await fetch("http://x/v1/chat/completions", { method: "POST", body });
      expect(res.status).toBe(500);
      expect(res.headers.get(TARGET_HEADER)).toBe(first);
      await res.text();
    }
    expect(calls).toHaveLength(2);
    const s = router.stats().targets.find((t) => t.id === first);
    expect(s?.ejected).toBe(true);
    expect(s?.ejectedUntilMs).toBe(1000);
    // An error body is no answer: it does not count as a time to first token.
    expect(s?.ttftMs).toBeNull();
    // While ejected the key goes to its second choice; after the backoff it comes back.
    const during = await fetch("http://x/v1/chat/completions", { method: "POST", body });
    await during.text();
    expect(during.headers.get(TARGET_HEADER)).not.toBe(first);
    now = 1001;
    const after = await fetch("http://x/v1/chat/completions", { method: "POST", body });
    await after.text();
    expect(after.headers.get(TARGET_HEADER)).toBe(first);
  });

  it("validates options with messages naming option, range and value", async () => {
    await expect(createRoutedFetch({ targets, attempts: 0 })).rejects.toThrow("Expected `attempts` to be an integer from 1 to 16, got 0");
    await expect(createRoutedFetch({ targets, baseURL: "ftp://x" })).rejects.toThrow(
      'Expected `baseURL` to be an absolute http(s) URL, got "ftp://x"',
    );
    await expect(createRoutedFetch({ targets: [{ id: "a" } as OpenAITarget] })).rejects.toThrow(
      "Expected `targets[0].baseURL` to be an absolute http(s) URL string, got undefined",
    );
    await expect(
      createRoutedFetch({ targets: [{ id: "a", baseURL: "http://a", headers: { x: 1 as unknown as string } }] }),
    ).rejects.toThrow('Expected `targets[0].headers["x"]` to be a string, got 1');
    await expect(createRoutedFetch({ targets, fetch: 3 as unknown as FetchLike })).rejects.toThrow(
      "Expected `fetch` to be a function, got 3",
    );
    await expect(createRoutedFetch({ targets, concurrencyThreshold: 0 })).rejects.toThrow(
      "Expected `concurrencyThreshold` to be an integer from 1 to 1024, got 0",
    );
  });
});

describe("createRoutedFetch: the lease lives as long as the body", () => {
  it("holds the lease while a stream is read, marks TTFT at the first byte, releases at the end with usage", async () => {
    const s = controllable();
    let now = 0;
    const infos: RoutedRequestInfo[] = [];
    const { fetch: fake } = fakeFetch(() => s.response);
    const { fetch, router } = await createRoutedFetch({ targets, fetch: fake, clock: { now: () => now }, onRequestEnd: (i) => infos.push(i) });
    const res = await fetch("http://x/v1/chat/completions", { method: "POST", body: chat("s", { stream: true }) });
    expect(inflight(router)).toBe(1);
    now = 40;
    s.push('data: {"choices":[{"delta":{"content":"hi"}}],"usage":null}\n\n');
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    now = 90;
    s.push(`data: ${JSON.stringify({ choices: [], usage })}\n\ndata: [DONE]\n\n`);
    s.close();
    expect(inflight(router)).toBe(1);
    while (!(await reader.read()).done);
    expect(inflight(router)).toBe(0);
    expect(infos).toEqual([
      expect.objectContaining({ outcome: "success", streaming: true, ttftMs: 40, durationMs: 90, promptTokens: 100, cachedTokens: 64 }),
    ]);
    const t = router.stats().targets.find((x) => x.routed === 1);
    expect(t?.ttftMs?.p50).toBeCloseTo(40, 0);
    expect(t?.cachedTokenRatio).toBeCloseTo(0.64);
  });

  it("releases as cancelled when the consumer cancels or leaves for-await early", async () => {
    for (const how of ["cancel", "break"] as const) {
      const s = controllable();
      const { fetch: fake } = fakeFetch(() => s.response);
      const infos: RoutedRequestInfo[] = [];
      const { fetch, router } = await createRoutedFetch({ targets, fetch: fake, onRequestEnd: (i) => infos.push(i) });
      const res = await fetch("http://x/v1/chat/completions", { method: "POST", body: chat("s") });
      s.push("data: {}\n\n");
      if (how === "cancel") await res.body?.cancel();
      else for await (const _ of res.body as unknown as AsyncIterable<Uint8Array>) break;
      expect(inflight(router)).toBe(0);
      expect(infos[0]?.outcome).toBe("cancelled");
    }
  });

  it("releases as cancelled when the signal aborts, before or during the body, even if nobody reads", async () => {
    const s = controllable();
    const { fetch: fake, calls } = fakeFetch(() => s.response);
    const { fetch, router } = await createRoutedFetch({ targets, fetch: fake });
    const before = new AbortController();
    before.abort();
    await expect(fetch("http://x/v1/chat/completions", { method: "POST", body: chat("s"), signal: before.signal })).rejects.toThrow();
    expect(calls).toHaveLength(0);
    expect(router.stats().totals.routed).toBe(0);

    const during = new AbortController();
    await fetch("http://x/v1/chat/completions", { method: "POST", body: chat("s"), signal: during.signal });
    expect(inflight(router)).toBe(1);
    during.abort();
    expect(inflight(router)).toBe(0);
  });

  it("an abort while the fetch is pending releases as cancelled and is not retried", async () => {
    const controller = new AbortController();
    let sent!: () => void;
    const reached = new Promise<void>((r) => (sent = r));
    const { fetch: fake, calls } = fakeFetch((call) => {
      sent();
      return new Promise<Response>((_, reject) =>
        call.init.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError"))),
      );
    });
    const { fetch, router } = await createRoutedFetch({ targets, fetch: fake });
    const pending = fetch("http://x/v1/chat/completions", { method: "POST", body: chat("s"), signal: controller.signal });
    await reached;
    expect(inflight(router)).toBe(1);
    controller.abort();
    await expect(pending).rejects.toThrow("aborted");
    expect(calls).toHaveLength(1);
    expect(inflight(router)).toBe(0);
    expect(router.stats().totals.failures).toBe(0);
  });

  it("a read error mid-stream releases as connect-error; an SSE error event as server-error", async () => {
    const s = controllable();
    const infos: RoutedRequestInfo[] = [];
    const { fetch: fake } = fakeFetch(() => s.response);
    const { fetch, router } = await createRoutedFetch({ targets, fetch: fake, onRequestEnd: (i) => infos.push(i) });
    const res = await fetch("http://x/v1/chat/completions", { method: "POST", body: chat("s") });
    s.push("data: {}\n\n");
    s.fail(connectError("ECONNRESET"));
    await expect(res.text()).rejects.toThrow();
    expect(inflight(router)).toBe(0);

    const e = controllable();
    const r2 = await createRoutedFetch({ targets, fetch: fakeFetch(() => e.response).fetch, onRequestEnd: (i) => infos.push(i) });
    const res2 = await r2.fetch("http://x/v1/chat/completions", { method: "POST", body: chat("s") });
    e.push('data: {"error": {"message": "engine died"}}\n\ndata: [DONE]\n\n');
    e.close();
    await res2.text();
    expect(infos.map((i) => i.outcome)).toEqual(["connect-error", "server-error"]);
    expect(r2.router.stats().totals.failures).toBe(1);
  });

  it("a response without a body releases before it is returned; 4xx is a client error", async () => {
    const infos: RoutedRequestInfo[] = [];
    const { fetch: fake } = fakeFetch(() => new Response(null, { status: 204 }));
    const { fetch, router } = await createRoutedFetch({ targets, fetch: fake, onRequestEnd: (i) => infos.push(i) });
    const res = await fetch("http://x/v1/models");
    expect(res.status).toBe(204);
    expect(inflight(router)).toBe(0);
    const r2 = await createRoutedFetch({ targets, fetch: fakeFetch(() => json({ error: {} }, 400)).fetch, onRequestEnd: (i) => infos.push(i) });
    await (await r2.fetch("http://x/v1/models")).text();
    expect(infos.map((i) => i.outcome)).toEqual(["success", "client-error"]);
  });

  it("a throwing onRequestEnd hook breaks nothing", async () => {
    const { fetch: fake } = fakeFetch(() => json({ usage }));
    const { fetch, router } = await createRoutedFetch({
      targets,
      fetch: fake,
      onRequestEnd: () => {
        throw new Error("hook");
      },
    });
    expect(await (await fetch("http://x/v1/chat/completions", { method: "POST", body: chat("q") })).json()).toEqual({ usage });
    expect(inflight(router)).toBe(0);
  });

  // The server stays silent, so a read is pending on the source the whole time: the wrapper must
  // not be reachable from it (on Node 22 and 24 an `async pull(controller)` kept it alive).
  it("a body dropped unread is released when it is garbage-collected, while the server is silent", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const s = controllable();
    const { fetch: fake } = fakeFetch(() => s.response);
    const { fetch, router } = await createRoutedFetch({ targets, fetch: fake });
    await (async () => {
      await fetch("http://x/v1/chat/completions", { method: "POST", body: chat("dropped") });
    })();
    expect(inflight(router)).toBe(1);
    for (let i = 0; i < 50 && inflight(router) > 0; i++) {
      gc();
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(inflight(router)).toBe(0);
  });

  // The reverse: a consumer waiting for a chunk is referenced only through the body it reads, so
  // the pending read must hold that body, or the collector takes a request in progress.
  it("a body being read survives garbage collections while the server is silent, and its consumer gets the answer", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const s = controllable();
    const { fetch: fake } = fakeFetch(() => s.response);
    const { fetch, router } = await createRoutedFetch({ targets, fetch: fake });
    let text: string | undefined;
    void (async () => {
      const response = await fetch("http://x/v1/chat/completions", { method: "POST", body: chat("waiting") });
      text = await response.text();
    })();
    await new Promise((r) => setTimeout(r, 10));
    for (let i = 0; i < 10; i++) {
      gc();
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(inflight(router)).toBe(1);
    s.push("data: [DONE]\n\n");
    s.close();
    for (let i = 0; i < 100 && text === undefined; i++) await new Promise((r) => setTimeout(r, 10));
    expect(text).toBe("data: [DONE]\n\n");
    expect(inflight(router)).toBe(0);
  });
});
