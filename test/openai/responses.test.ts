/**
 * The OpenAI adapter's Responses API parts, without a fleet: which requests refer to a stored
 * response, the top-level `id` of a JSON body however it is cut, affinity options, and the
 * first byte of a Responses stream (its first output event, not `response.created`).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DEFAULT_RESPONSE_AFFINITY, createRoutedFetch, type FetchLike, type RoutedRequestInfo } from "prefix-router/openai";
import { TopLevelId, responsesCall } from "../../src/openai/responses.js";
import { FakeClock, splitAt } from "../support.js";

const enc = new TextEncoder();
const targets = [
  { id: "a", baseURL: "http://a.test/v1" },
  { id: "b", baseURL: "http://b.test/v1" },
  { id: "c", baseURL: "http://c.test/v1" },
];

describe("responsesCall", () => {
  it.each([
    ["/responses", "POST", { input: "x" }, { creates: true, refersTo: undefined }],
    ["/v1/responses", "post", { previous_response_id: "resp_1" }, { creates: true, refersTo: "resp_1" }],
    ["/responses", "POST", { previous_response_id: "" }, { creates: true, refersTo: undefined }],
    ["/responses/resp_2", "GET", undefined, { creates: false, refersTo: "resp_2" }],
    ["/v1/responses/resp%203", "DELETE", undefined, { creates: false, refersTo: "resp 3" }],
    ["/responses/resp_4/input_items", "GET", undefined, { creates: false, refersTo: "resp_4" }],
    ["/responses/resp_5/cancel", "POST", undefined, { creates: false, refersTo: "resp_5" }],
    ["/responses", "GET", undefined, undefined],
    ["/chat/completions", "POST", { previous_response_id: "resp_1" }, undefined],
    ["/responses/resp_6/other", "GET", undefined, undefined],
  ] as const)("%s %s", (path, method, body, expected) => {
    expect(responsesCall(path, method, body as Record<string, unknown> | undefined)).toEqual(expected);
  });
});

function idOf(text: string, cuts: number[] = []): string | undefined {
  const scanner = new TopLevelId();
  for (const part of splitAt(enc.encode(text), cuts)) scanner.push(part);
  return scanner.id;
}

describe("TopLevelId", () => {
  it("finds the top-level id wherever it is among other keys, nested ids and strings that look like keys, however cut", () => {
    const noise = fc.dictionary(
      fc.string().filter((k) => k !== "id"),
      fc.oneof(fc.jsonValue(), fc.constant({ id: "nested" }), fc.constant(["id", { id: "deep" }]), fc.constant('"id": "fake"')),
      { maxKeys: 5 },
    );
    fc.assert(
      fc.property(noise, noise, fc.stringMatching(/^resp_[A-Za-z0-9_-]{1,40}$/), fc.array(fc.nat(), { maxLength: 10 }), (before, after, id, cuts) => {
        const text = JSON.stringify({ ...before, id, ...after });
        expect(idOf(text, cuts)).toBe(id);
      }),
    );
  });

  it("reports none for a body without a top-level string id, or an id it cannot take as is", () => {
    expect(idOf('{"output": [{"id": "msg_1"}], "object": "response"}')).toBeUndefined();
    expect(idOf('{"id": 42, "x": "resp_1"}')).toBeUndefined();
    expect(idOf('{"id": "a\\"b"}')).toBeUndefined();
    expect(idOf('{"id": ""}')).toBeUndefined();
    expect(idOf(`{"id": "${"x".repeat(600)}"}`)).toBeUndefined();
    expect(idOf('["id", "resp_1"]')).toBeUndefined();
    expect(idOf("  \n{ \"id\" :\t\"resp_ws\" }")).toBe("resp_ws");
  });
});

/** A Response whose SSE body the test feeds event by event. */
function controllable(): { response: Response; push(text: string): void; close(): void } {
  let ctl!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({ start: (c) => void (ctl = c) });
  return {
    response: new Response(body, { headers: { "content-type": "text/event-stream" } }),
    push: (text) => ctl.enqueue(enc.encode(text)),
    close: () => ctl.close(),
  };
}

const event = (type: string, fields: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...fields })}\n\n`;

describe("a Responses API stream through createRoutedFetch", () => {
  it("takes TTFT at the first output event, remembers the id from response.created, reads usage from response.completed", async () => {
    const clock = new FakeClock();
    const s = controllable();
    const infos: RoutedRequestInfo[] = [];
    const calls: string[] = [];
    const fake: FetchLike = async (input) => {
      calls.push(String(input));
      return calls.length === 1 ? s.response : new Response("{}", { headers: { "content-type": "application/json" } });
    };
    const { fetch, router } = await createRoutedFetch({ targets, fetch: fake, clock, onRequestEnd: (i) => infos.push(i) });
    const res = await fetch("http://fleet/v1/responses", { method: "POST", body: JSON.stringify({ model: "m", input: "hi", stream: true }) });
    const reader = res.body!.getReader();
    const read = () => reader.read();
    s.push(event("response.created", { response: { id: "resp_S", status: "in_progress" } }));
    await read();
    clock.t = 10;
    s.push(event("response.in_progress", { response: { id: "resp_S" } }));
    await read();
    clock.t = 50;
    s.push(event("response.output_text.delta", { delta: "x" }));
    await read();
    clock.t = 80;
    s.push(event("response.completed", { response: { id: "resp_S", usage: { input_tokens: 40, input_tokens_details: { cached_tokens: 32 }, output_tokens: 1 } } }));
    s.close();
    while (!(await read()).done);
    expect(infos).toMatchObject([{ ttftMs: 50, durationMs: 80, promptTokens: 40, cachedTokens: 32, streaming: true, outcome: "success" }]);
    // The router's histogram holds 50 ms within its precision (not 10 ms: response.in_progress).
    expect(router.stats().totals.ttftMs?.p50).toBeCloseTo(50, 0);

    // The follow-up goes where resp_S was served, as an affinity pick.
    const first = new URL(calls[0]!).host;
    await (await fetch("http://fleet/v1/responses", { method: "POST", body: JSON.stringify({ model: "m", input: "more", previous_response_id: "resp_S" }) })).text();
    expect(new URL(calls[1]!).host).toBe(first);
    expect(infos[1]).toMatchObject({ kind: "affinity", rank: 0, attempt: 1 });
  });

  it("a Responses stream without output events has no TTFT; a chat stream's first byte is its TTFT", async () => {
    const clock = new FakeClock();
    const infos: RoutedRequestInfo[] = [];
    const sse = (text: string) => new Response(text, { headers: { "content-type": "text/event-stream" } });
    let body = event("response.created", { response: { id: "resp_E" } }) + event("error", { message: "boom" });
    const fake: FetchLike = async () => sse(body);
    const { fetch } = await createRoutedFetch({ targets, fetch: fake, clock, onRequestEnd: (i) => infos.push(i) });
    await (await fetch("http://fleet/v1/responses", { method: "POST", body: '{"input": "q", "stream": true}' })).text();
    body = `data: {"choices": []}\n\n`;
    await (await fetch("http://fleet/v1/chat/completions", { method: "POST", body: '{"messages": [], "stream": true}' })).text();
    expect(infos.map((i) => [i.ttftMs, i.outcome])).toEqual([
      [null, "server-error"],
      [0, "success"],
    ]);
  });
});

describe("responseAffinity option", () => {
  it("validates maxEntries and accepts false", async () => {
    expect(DEFAULT_RESPONSE_AFFINITY).toEqual({ maxEntries: 100_000 });
    await expect(createRoutedFetch({ targets, responseAffinity: { maxEntries: 0 } })).rejects.toThrow(
      "Expected `responseAffinity.maxEntries` to be an integer from 1 to 10000000, got 0",
    );
    await expect(createRoutedFetch({ targets, responseAffinity: "yes" as never })).rejects.toThrow(
      'Expected `responseAffinity` to be an object or false, got "yes"',
    );
    await expect(createRoutedFetch({ targets, responseAffinity: false })).resolves.toBeDefined();
  });
});
