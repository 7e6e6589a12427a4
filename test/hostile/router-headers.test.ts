/**
 * The headers the router owns (`x-prefix-router-target`, `x-prefix-router-reason`) against target
 * ids no header can carry as they are and replicas that send those headers themselves: an id is
 * refused at configuration when it cannot be written at all (a lone surrogate), carried
 * percent-encoded when it is not header-safe, and nothing that runs after the request was sent
 * throws (the openai client would retry a request the replica already ran). A replica's own copy
 * of either header never reaches the caller.
 */
import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createRouter } from "prefix-router";
import { REASON_HEADER, TARGET_HEADER, createRoutedFetch, routeOpenAI } from "prefix-router/openai";
import { routeSageMaker } from "prefix-router/sagemaker";
import { type LoopbackServer, chatBody, ok, startServer } from "./servers.js";

let server: LoopbackServer;
beforeAll(async () => {
  server = await startServer();
});
afterEach(() => {
  server.seen.length = 0;
  server.heads = 0;
  server.behaviour = ok();
});
afterAll(async () => {
  await server.close();
});

const LONE = ["\ud800", "replica-\ud800", "\udfffa", "a\ud83d"];

describe("target ids that cannot be written", () => {
  it.each(LONE.map((id) => [JSON.stringify(id), id]))("refuses %s at configuration", async (_name, id) => {
    await expect(createRouter({ targets: [{ id }] })).rejects.toThrow(RangeError);
    await expect(createRouter({ targets: [{ id }] })).rejects.toThrow("`targets[0].id` to be well-formed text");
    await expect(routeOpenAI(new OpenAI({ apiKey: "k", baseURL: "http://fleet.invalid/v1" }), { targets: [{ id, baseURL: `${server.origin}/v1` }], explainHeader: true })).rejects.toThrow(RangeError);
  });

  it("refuses them in setTargets, keeping the targets it had", async () => {
    const router = await createRouter({ targets: [{ id: "a" }] });
    expect(() => router.setTargets([{ id: "a" }, { id: "b\udc00" }])).toThrow("`targets[1].id` to be well-formed text");
    expect(router.targets().map((t) => t.id)).toEqual(["a"]);
  });

  it("accepts surrogate pairs", async () => {
    const router = await createRouter({ targets: [{ id: "replica-😀" }] });
    expect(router.route({ body: { messages: [] } }).target.id).toBe("replica-😀");
  });

  it("refuses them for SageMaker too", async () => {
    await expect(routeSageMaker({ send: async () => ({}) } as never, { targets: [{ id: "x\ud800", endpointName: "e" }] })).rejects.toThrow(RangeError);
  });
});

const IDS = ["replica-α", "a b", "tab\tid", "new\nline", "pct%41", "nul\u0000", "emoji-😀", "é", "x".repeat(300)];

describe("ids that are not header-safe: served once, header percent-encoded", () => {
  it.each(IDS.map((id) => [JSON.stringify(id), id]))("the openai client with targetHeader and explainHeader, id %s", async (_name, id) => {
    const client = await routeOpenAI(new OpenAI({ apiKey: "k", baseURL: "http://fleet.invalid/v1", maxRetries: 2 }), {
      targets: [{ id, baseURL: `${server.origin}/v1` }],
      targetHeader: true,
      explainHeader: true,
    });
    const { response } = await client.chat.completions.create(chatBody("ids") as never).withResponse();
    expect(server.heads).toBe(1);
    const header = response.headers.get(TARGET_HEADER)!;
    expect(decodeURIComponent(header)).toBe(id);
    expect(header).toMatch(/^[!-~]+$/);
    expect(response.headers.get(REASON_HEADER)).toMatch(/^kind=/);
  });

  it("an id made of visible ASCII but % goes as it is", async () => {
    const { fetch } = await createRoutedFetch({ targets: [{ id: "10.0.0.1:8000/v1?x=y", baseURL: `${server.origin}/v1` }], targetHeader: true });
    const res = await fetch(`${server.origin}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(chatBody("ascii")) });
    await res.text();
    expect(res.headers.get(TARGET_HEADER)).toBe("10.0.0.1:8000/v1?x=y");
  });
});

describe("a replica cannot speak in the router's name", () => {
  const spoofing = () => {
    server.behaviour = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json", [REASON_HEADER]: "kind=preferred;rank=0;spoofed=1", [TARGET_HEADER]: "spoofed" });
      res.end("{}");
    };
  };

  it.each([
    ["both options off", {}],
    ["explainHeader on", { explainHeader: true }],
    ["targetHeader on", { targetHeader: true }],
  ])("the upstream's own router headers are removed, %s", async (_name, options) => {
    spoofing();
    const { fetch } = await createRoutedFetch({ targets: [{ id: "a", baseURL: `${server.origin}/v1` }], ...options });
    const res = await fetch(`${server.origin}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(chatBody("spoof")) });
    await res.text();
    const on = options as { explainHeader?: boolean; targetHeader?: boolean };
    if (on.explainHeader === true) expect(res.headers.get(REASON_HEADER)).not.toContain("spoofed");
    else expect(res.headers.get(REASON_HEADER)).toBeNull();
    if (on.targetHeader === true) expect(res.headers.get(TARGET_HEADER)).toBe("a");
    else expect(res.headers.get(TARGET_HEADER)).toBeNull();
  });
});
