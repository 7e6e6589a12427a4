/**
 * Response affinity end to end: the real openai client's `responses.create` (JSON and streaming)
 * and the Vercel AI SDK's default provider call (`openai(model)`, the Responses API), routed
 * across a 7-instance emulated fleet whose instances each keep their own stored responses.
 */
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, streamText } from "ai";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isRouterError } from "prefix-router";
import { createRoutedFetch, getRouter, routeOpenAI, type OpenAITarget, type RoutedRequestInfo } from "prefix-router/openai";
import { DEFAULT_MODEL, type LiveFleet, startFleet } from "prefix-router/fleet";

const INSTANCE_HEADER = "x-prefix-router-instance";
const CONVERSATIONS = 100;

let fleet: LiveFleet;
let targets: OpenAITarget[];

beforeAll(async () => {
  fleet = await startFleet({ instances: 7, timeScale: 0.002, defaultMaxTokens: 4 });
  targets = fleet.instances.map((i) => ({ id: i.id, baseURL: `${i.url}/v1` }));
});
afterAll(() => fleet?.stop());

const base = () => new OpenAI({ apiKey: "unused", baseURL: "http://fleet.invalid/v1", maxRetries: 0 });
/** A first turn: a document of its own, so conversations spread over the fleet. */
const opening = (n: number) => `Conversation ${n}. Here is my contract: ${`clause ${n} `.repeat(80)}. Summarise it.`;

describe("routeOpenAI: responses.create with previous_response_id", () => {
  it(`reaches the replica of the first response ${CONVERSATIONS} times out of ${CONVERSATIONS}, JSON, and finds the first turn cached`, async () => {
    const infos: RoutedRequestInfo[] = [];
    const client = await routeOpenAI(base(), { targets, onRequestEnd: (i) => infos.push(i) });
    const served = new Set<string>();
    for (let n = 0; n < CONVERSATIONS; n++) {
      const first = await client.responses.create({ model: DEFAULT_MODEL, input: opening(n) }).withResponse();
      const second = await client.responses
        .create({ model: DEFAULT_MODEL, previous_response_id: first.data.id, input: `Question ${n}: is clause ${n} fair?` })
        .withResponse();
      const where = first.response.headers.get(INSTANCE_HEADER) as string;
      expect(second.response.headers.get(INSTANCE_HEADER)).toBe(where);
      expect(second.data.usage?.input_tokens_details.cached_tokens).toBeGreaterThan(0);
      served.add(where);
    }
    expect(served.size).toBeGreaterThan(3); // the first turns spread; only the follow-ups are pinned
    expect(infos.filter((i) => i.kind === "affinity")).toHaveLength(CONVERSATIONS);
    const totals = getRouter(client)!.stats().totals;
    expect(totals).toMatchObject({ affinity: CONVERSATIONS, routed: 2 * CONVERSATIONS, inflight: 0, failures: 0 });
    expect(totals.cachedTokenRatio).toBeGreaterThan(0);
  });

  it(`does the same streaming, ${CONVERSATIONS} times out of ${CONVERSATIONS}, with TTFT at the first output event`, async () => {
    const infos: RoutedRequestInfo[] = [];
    const client = await routeOpenAI(base(), { targets, onRequestEnd: (i) => infos.push(i) });
    for (let n = 0; n < CONVERSATIONS; n++) {
      const ids: string[] = [];
      for (const input of [opening(n), `Question ${n}?`]) {
        const stream = await client.responses.create({ model: DEFAULT_MODEL, input, stream: true, ...(ids.length > 0 ? { previous_response_id: ids[0]! } : {}) });
        for await (const event of stream) if (event.type === "response.created") ids.push(event.response.id);
      }
    }
    const pairs = Array.from({ length: CONVERSATIONS }, (_, n) => [infos[2 * n]!, infos[2 * n + 1]!] as const);
    for (const [first, second] of pairs) {
      expect(second.target.id).toBe(first.target.id);
      expect(second).toMatchObject({ kind: "affinity", outcome: "success", streaming: true });
      expect(second.cachedTokens).toBeGreaterThan(0);
      expect(second.ttftMs).not.toBeNull();
    }
  });

  it("routes by affinity a retrieve, and fails a follow-up whose replica left the target set with ERR_TARGET_GONE", async () => {
    const client = await routeOpenAI(base(), { targets });
    const first = await client.responses.create({ model: DEFAULT_MODEL, input: opening(1000) }).withResponse();
    const where = first.response.headers.get(INSTANCE_HEADER) as string;
    const again = await client.responses.retrieve(first.data.id).withResponse();
    expect(again.response.headers.get(INSTANCE_HEADER)).toBe(where);
    getRouter<OpenAITarget>(client)!.setTargets(targets.filter((t) => t.id !== where));
    const gone = client.responses.create({ model: DEFAULT_MODEL, input: "next", previous_response_id: first.data.id });
    await expect(gone).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(gone).rejects.toMatchObject({ status: 404, code: "ERR_TARGET_GONE" });

    const { fetch, router } = await createRoutedFetch({ targets });
    const created = (await (await fetch("http://fleet/v1/responses", { method: "POST", body: JSON.stringify({ model: DEFAULT_MODEL, input: "hi" }) })).json()) as { id: string };
    const servedBy = router.stats().targets.find((t) => t.routed === 1)!.id;
    router.setTargets(targets.filter((t) => t.id !== servedBy));
    const error = await fetch(`http://fleet/v1/responses/${created.id}`).catch((e: unknown) => e);
    expect(isRouterError(error) && error.code).toBe("ERR_TARGET_GONE");
  });

  it("without affinity (or for an id it never saw) a follow-up is routed by its own prefix, and most land elsewhere: 404", async () => {
    const infos: RoutedRequestInfo[] = [];
    const client = await routeOpenAI(base(), { targets, responseAffinity: false, onRequestEnd: (i) => infos.push(i) });
    let notFound = 0;
    for (let n = 0; n < 20; n++) {
      const first = await client.responses.create({ model: DEFAULT_MODEL, input: opening(2000 + n) });
      await client.responses.create({ model: DEFAULT_MODEL, previous_response_id: first.id, input: `Question ${n}?` }).catch((e: unknown) => {
        expect(e).toBeInstanceOf(OpenAI.NotFoundError);
        notFound++;
      });
    }
    expect(notFound).toBeGreaterThan(10);
    expect(infos.some((i) => i.kind === "affinity")).toBe(false);

    const forgetful = await routeOpenAI(base(), { targets, responseAffinity: { maxEntries: 1 }, onRequestEnd: (i) => infos.push(i) });
    const a = await forgetful.responses.create({ model: DEFAULT_MODEL, input: opening(3000) });
    await forgetful.responses.create({ model: DEFAULT_MODEL, input: opening(3001) });
    infos.length = 0;
    await forgetful.responses.create({ model: DEFAULT_MODEL, previous_response_id: a.id, input: "?" }).catch(() => undefined);
    expect(infos[0]?.kind).not.toBe("affinity"); // evicted by the second response
  });
});

describe("the Vercel AI SDK's default provider (the Responses API) through createRoutedFetch", () => {
  it("generateText and streamText continue a response on its replica with previousResponseId", async () => {
    const infos: RoutedRequestInfo[] = [];
    const { fetch } = await createRoutedFetch({ targets, onRequestEnd: (i) => infos.push(i) });
    const openai = createOpenAI({ baseURL: "http://fleet.invalid/v1", apiKey: "unused", fetch });
    for (let n = 0; n < 10; n++) {
      const first = await generateText({ model: openai(DEFAULT_MODEL), prompt: opening(4000 + n), maxRetries: 0 });
      const responseId = first.providerMetadata?.openai?.responseId as string;
      expect(responseId).toMatch(/^resp_/);
      const second = streamText({
        model: openai(DEFAULT_MODEL),
        prompt: `Question ${n}?`,
        providerOptions: { openai: { previousResponseId: responseId } },
        maxRetries: 0,
      });
      expect(await second.text).not.toBe("");
      const usage = await second.usage;
      expect(usage.inputTokenDetails.cacheReadTokens).toBeGreaterThan(0);
    }
    const pairs = Array.from({ length: 10 }, (_, n) => [infos[2 * n]!, infos[2 * n + 1]!] as const);
    for (const [first, second] of pairs) {
      expect(first).toMatchObject({ streaming: false, outcome: "success" });
      expect(second).toMatchObject({ kind: "affinity", target: first.target, streaming: true, outcome: "success" });
    }
  });
});
