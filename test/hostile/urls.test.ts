/**
 * Hostile request URLs through createRoutedFetch and the real openai client, against loopback
 * servers: a routed request goes to the chosen target's base URL or nowhere (`ERR_CROSS_ORIGIN`),
 * and the target's credentials never reach the "attacker" server on another port.
 */
import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { isRouterError } from "prefix-router";
import { type OpenAITarget, createRoutedFetch, routeOpenAI } from "prefix-router/openai";
import { type LoopbackServer, chatBody, ok, startServer } from "./servers.js";

let target: LoopbackServer;
let attacker: LoopbackServer;

beforeAll(async () => {
  target = await startServer(ok());
  attacker = await startServer(ok());
});
afterEach(() => {
  target.seen.length = 0;
  attacker.seen.length = 0;
  target.heads = 0;
  attacker.heads = 0;
});
afterAll(async () => {
  await target.close();
  await attacker.close();
});

const SECRET = { authorization: "Bearer target-secret" };
const body = JSON.stringify(chatBody("urls"));

async function errorOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (e: unknown) => e,
  );
}

describe("a request path can never move a routed request to another host", () => {
  it("concatenation attack: a target base without path, a request URL that continues its port", async () => {
    // Before: "http://127.0.0.1:<first digit>" + "<other digits>/v1/…" reached the attacker's port
    // with the target's Authorization header.
    const digits = String(attacker.port);
    const { fetch, router } = await createRoutedFetch({ targets: [{ id: "t", baseURL: `http://127.0.0.1:${digits[0]}`, headers: SECRET }] });
    const error = await errorOf(fetch(`x:${digits.slice(1)}/v1/chat/completions`, { method: "POST", body }));
    expect(isRouterError(error) && error.code).toBe("ERR_CROSS_ORIGIN");
    expect(attacker.heads).toBe(0);
    expect(router.stats().totals.inflight).toBe(0);
  });

  it.each([
    ["userinfo after the origin", (port: number) => `x:@127.0.0.1:${port}/v1/chat/completions`],
    ["a host after the origin", (port: number) => `x:.127.0.0.1:${port}/v1/chat/completions`],
    ["javascript:", () => "javascript:fetch('http://evil')"],
    ["data:", () => "data:application/json,{}"],
    ["file:", () => "file:///etc/passwd"],
    ["ftp:", (port: number) => `ftp://127.0.0.1:${port}/v1/chat/completions`],
    ["blob-like opaque path", (port: number) => `blob:http://127.0.0.1:${port}/uuid`],
  ])("no client base, %s: refused with ERR_CROSS_ORIGIN, nothing sent", async (_name, url) => {
    const { fetch, router } = await createRoutedFetch({ targets: [{ id: "t", baseURL: target.origin, headers: SECRET }] });
    const error = await errorOf(fetch(url(attacker.port), { method: "POST", body }));
    expect(isRouterError(error) && error.code).toBe("ERR_CROSS_ORIGIN");
    expect([target.heads, attacker.heads]).toEqual([0, 0]);
    expect(router.stats().totals).toMatchObject({ inflight: 0, routed: 0 });
  });

  it.each([
    ["dot segments", "/v1/../../admin", "/admin"],
    ["encoded dot segments", "/v1/%2e%2e/%2E%2E/admin", "/admin"],
    ["backslashes", "/v1\\..\\..\\admin", "/admin"],
    ["a double slash that looks like a host", `//127.0.0.1:PORT/v1/chat/completions`, "//127.0.0.1:PORT/v1/chat/completions"],
    ["an @ in the path", "/v1/chat/completions@127.0.0.1:PORT", "/v1/chat/completions@127.0.0.1:PORT"],
  ])("no client base, %s: stays on the target's origin", async (_name, path, expectedPath) => {
    const targets: OpenAITarget[] = [{ id: "t", baseURL: target.origin, headers: SECRET }];
    const { fetch, router } = await createRoutedFetch({ targets });
    const res = await fetch(`http://fleet.invalid${path.replaceAll("PORT", String(attacker.port))}`, { method: "POST", body });
    await res.text();
    expect(attacker.heads).toBe(0);
    expect(target.seen.map((s) => s.url)).toEqual([expectedPath.replaceAll("PORT", String(attacker.port))]);
    expect(target.seen[0]?.headers.authorization).toBe(SECRET.authorization);
    expect(router.stats().totals.inflight).toBe(0);
  });

  it("with a client base: a URL that climbs out of it is not routed and gets no target credentials", async () => {
    const { fetch, router } = await createRoutedFetch({ targets: [{ id: "t", baseURL: `${target.origin}/v1`, headers: SECRET }], baseURL: `${attacker.origin}/v1` });
    // The client's own base is where unrouted requests go, as documented; the target's headers stay home.
    const res = await fetch(`${attacker.origin}/v1/../admin`, { method: "POST", body });
    await res.text();
    expect(target.heads).toBe(0);
    expect(attacker.seen.map((s) => [s.url, s.headers.authorization])).toEqual([["/admin", undefined]]);
    expect(router.stats().totals.routed).toBe(0);
  });

  it("keeps a query string with @ and # as a query on the target", async () => {
    const { fetch, router } = await createRoutedFetch({ targets: [{ id: "t", baseURL: `${target.origin}/v1` }], baseURL: "http://fleet.invalid/v1" });
    const res = await fetch(`http://fleet.invalid/v1/chat/completions?next=@127.0.0.1:${attacker.port}%23x`, { method: "POST", body });
    await res.text();
    expect(attacker.heads).toBe(0);
    expect(target.seen[0]?.url).toBe(`/v1/chat/completions?next=@127.0.0.1:${attacker.port}%23x`);
    expect(router.stats().totals.inflight).toBe(0);
  });

  it("the real openai client: an absolute path outside the client's base is not routed and gets no target credentials", async () => {
    const digits = String(attacker.port);
    const client = await routeOpenAI(new OpenAI({ apiKey: "client-key", baseURL: "http://fleet.invalid/v1", maxRetries: 0 }), {
      targets: [{ id: "t", baseURL: `http://127.0.0.1:${digits[0]}`, headers: SECRET }],
    });
    // openai passes an absolute URL through as the request URL: outside the client's base, so
    // it goes out unrouted (and fetch refuses the scheme) — never joined onto a target.
    const error = await errorOf(client.post(`x:${digits.slice(1)}/v1/chat/completions` as never, { body: chatBody("p") }));
    expect(error).toBeInstanceOf(OpenAI.APIConnectionError);
    const plain = await errorOf(client.post(`${attacker.origin}/v1/chat/completions` as never, { body: chatBody("p") }));
    expect(plain).toBeUndefined();
    expect(attacker.seen.map((s) => s.headers.authorization)).toEqual(["Bearer client-key"]);
    expect(target.heads).toBe(0);
  });
});
