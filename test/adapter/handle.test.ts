/**
 * `getRouter(client).stats()` on every kind of routed client, as the README shows it: a client
 * from `routeOpenAI`, a fetch from `createRoutedFetch` (and an openai client built with it), a
 * client from `routeSageMaker` — each with the real `openai` / AWS client against the emulated
 * fleet on loopback, and `getRouter` imported from the entry point the client came from.
 */
import { InvokeEndpointCommand, SageMakerRuntimeClient } from "@aws-sdk/client-sagemaker-runtime";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_MODEL, type LiveFleet, startFleet } from "prefix-router/fleet";
import { createRoutedFetch, getRouter, routeOpenAI } from "prefix-router/openai";
import { getRouter as getSageMakerRouter, routeSageMaker } from "prefix-router/sagemaker";

let fleet: LiveFleet;

beforeAll(async () => {
  fleet = await startFleet({ instances: 2, timeScale: 0.005, defaultMaxTokens: 4 });
});

afterAll(async () => {
  await fleet?.stop();
});

const messages = [
  { role: "system" as const, content: "You answer questions about the refund policy. ".repeat(40) },
  { role: "user" as const, content: "Can I return an opened item?" },
];
const openaiTargets = () => fleet.instances.map((i) => ({ id: i.id, baseURL: `${i.url}/v1` }));

describe("getRouter(client).stats()", () => {
  it("reads a routeOpenAI client's router, and a copy's made with withOptions", async () => {
    const client = await routeOpenAI(new OpenAI({ apiKey: "unused", baseURL: "http://fleet.invalid/v1", maxRetries: 0 }), { targets: openaiTargets() });
    await client.chat.completions.create({ model: DEFAULT_MODEL, messages });
    expect(getRouter(client)!.stats().totals).toMatchObject({ routed: 1, inflight: 0 });
    expect(getRouter(client.withOptions({ timeout: 5_000 }))).toBe(getRouter(client));
  });

  it("reads a createRoutedFetch fetch's router, its result's and an openai client's built with that fetch", async () => {
    const routed = await createRoutedFetch({ targets: openaiTargets(), baseURL: "http://fleet.invalid/v1" });
    const client = new OpenAI({ apiKey: "unused", baseURL: "http://fleet.invalid/v1", maxRetries: 0, fetch: routed.fetch });
    await client.chat.completions.create({ model: DEFAULT_MODEL, messages });
    const res = await routed.fetch("http://fleet.invalid/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: DEFAULT_MODEL, messages }),
    });
    await res.json();
    for (const holder of [routed.fetch, routed, client]) expect(getRouter(holder)).toBe(routed.router);
    expect(getRouter(client)!.stats().totals).toMatchObject({ routed: 2, inflight: 0 });
  });

  it("reads a routeSageMaker client's router, with getRouter from prefix-router/sagemaker", async () => {
    const clientFor = (endpoint: string | undefined) =>
      new SageMakerRuntimeClient({ endpoint, region: "us-east-1", credentials: { accessKeyId: "test", secretAccessKey: "test" }, maxAttempts: 1 });
    const base = clientFor(fleet.urls[0]);
    const other = clientFor(fleet.urls[1]);
    try {
      const sagemaker = await routeSageMaker(base, {
        targets: [
          { id: "i0", endpointName: "llm" },
          { id: "i1", endpointName: "llm", client: other },
        ],
      });
      await sagemaker.send(new InvokeEndpointCommand({ EndpointName: "llm", Body: JSON.stringify({ messages, max_tokens: 4 }), ContentType: "application/json" }));
      expect(getSageMakerRouter).toBe(getRouter);
      expect(getSageMakerRouter(sagemaker)).toBe(sagemaker.router);
      expect(getSageMakerRouter(sagemaker)!.stats().totals).toMatchObject({ routed: 1, inflight: 0 });
      expect(getSageMakerRouter(base)).toBeUndefined();
    } finally {
      base.destroy();
      other.destroy();
    }
  });
});
