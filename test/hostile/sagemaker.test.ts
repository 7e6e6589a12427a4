/**
 * Misbehaving SageMaker-style servers on loopback, through the real AWS SDK client and
 * routeSageMaker: a redirect to another host, a partial status line then a reset, garbage and
 * truncated event streams, a consumer that stops once it has the usage. Nothing is resent, the
 * attacker sees nothing, every in-flight count returns to 0.
 */
import { InvokeEndpointCommand, InvokeEndpointWithResponseStreamCommand, SageMakerRuntimeClient } from "@aws-sdk/client-sagemaker-runtime";
import { EventStreamCodec } from "@smithy/core/event-streams";
import { fromUtf8, toUtf8 } from "@smithy/core/serde";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { routeSageMaker } from "prefix-router/sagemaker";
import { type Behaviour, type LoopbackServer, partialStatusThenReset, redirect, startServer } from "./servers.js";

let server: LoopbackServer;
let attacker: LoopbackServer;
const clients: SageMakerRuntimeClient[] = [];

beforeAll(async () => {
  [server, attacker] = await Promise.all([startServer(), startServer()]);
});
afterEach(() => {
  for (const s of [server, attacker]) {
    s.seen.length = 0;
    s.heads = 0;
  }
});
afterAll(async () => {
  for (const c of clients) c.destroy();
  await Promise.all([server.close(), attacker.close()]);
});

const codec = new EventStreamCodec(toUtf8, fromUtf8);
const utf8 = new TextEncoder();

function part(text: string): Uint8Array {
  return codec.encode({
    headers: {
      ":event-type": { type: "string", value: "PayloadPart" },
      ":message-type": { type: "string", value: "event" },
      ":content-type": { type: "string", value: "application/octet-stream" },
    },
    body: utf8.encode(text),
  });
}

const usage = { prompt_tokens: 200, completion_tokens: 1, total_tokens: 201, prompt_tokens_details: { cached_tokens: 150 } };
const sseChunk = (body: object) => `data: ${JSON.stringify(body)}\n\n`;

/** An event stream: `parts` written, then the connection held open or ended. */
function eventStream(parts: Uint8Array[], end: boolean): Behaviour {
  return (_req, res) => {
    res.writeHead(200, { "content-type": "application/vnd.amazon.eventstream", "x-amzn-sagemaker-content-type": "text/event-stream" });
    for (const p of parts) res.write(p);
    if (end) res.end();
  };
}

async function routed() {
  const client = new SageMakerRuntimeClient({ region: "us-east-1", endpoint: server.origin, credentials: { accessKeyId: "a", secretAccessKey: "b" }, maxAttempts: 1 });
  clients.push(client);
  return routeSageMaker(client, { targets: [{ id: "a", endpointName: "ep-a" }, { id: "b", endpointName: "ep-b" }], attempts: 2 });
}

const body = JSON.stringify({ messages: [{ role: "user", content: "hello ".repeat(300) }], stream: true });

async function errorOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (e: unknown) => e,
  );
}

describe("routeSageMaker against misbehaving servers", () => {
  it.each([301, 302, 307, 308])("a %i to the attacker is an error: never followed, never retried", async (code) => {
    server.behaviour = redirect(code, `${attacker.origin}/steal`);
    const client = await routed();
    const error = await errorOf(client.send(new InvokeEndpointCommand({ EndpointName: "x", Body: body, ContentType: "application/json" })));
    expect(error).toBeInstanceOf(Error);
    expect([server.heads, attacker.heads]).toEqual([1, 0]);
    expect(client.router.stats().totals.inflight).toBe(0);
  });

  it("a partial status line then a reset: one attempt, counted against the target", async () => {
    server.behaviour = partialStatusThenReset();
    const client = await routed();
    const error = await errorOf(client.send(new InvokeEndpointCommand({ EndpointName: "x", Body: body, ContentType: "application/json" })));
    expect(error).toBeInstanceOf(Error);
    expect(server.heads).toBe(1);
    expect(client.router.stats().totals).toMatchObject({ inflight: 0, failures: 1 });
  });

  it("garbage instead of an event stream: the consumer's loop fails, the lease ends", async () => {
    server.behaviour = (_req, res) => {
      res.writeHead(200, { "content-type": "application/vnd.amazon.eventstream" });
      res.end(Buffer.from("this is not an event stream at all, just bytes".repeat(4)));
    };
    const client = await routed();
    const error = await errorOf(
      (async () => {
        const out = await client.send(new InvokeEndpointWithResponseStreamCommand({ EndpointName: "x", Body: body, ContentType: "application/json" }));
        for await (const _event of out.Body ?? []);
      })(),
    );
    expect(error).toBeInstanceOf(Error);
    expect(server.heads).toBe(1);
    expect(client.router.stats().totals.inflight).toBe(0);
  });

  it("an event stream cut in the middle of a message: ends or fails, the lease ends either way", async () => {
    const whole = part(sseChunk({ choices: [{ index: 0, delta: { content: "t" } }] }));
    server.behaviour = eventStream([whole, whole.subarray(0, 20)], true);
    const client = await routed();
    await errorOf(
      (async () => {
        const out = await client.send(new InvokeEndpointWithResponseStreamCommand({ EndpointName: "x", Body: body, ContentType: "application/json" }));
        for await (const _event of out.Body ?? []);
      })(),
    );
    expect(server.heads).toBe(1);
    expect(client.router.stats().totals).toMatchObject({ inflight: 0, cachedTokenRatio: null });
  });

  it("a consumer that stops once it has the usage records a success with the cached tokens", async () => {
    server.behaviour = eventStream(
      [part(sseChunk({ choices: [{ index: 0, delta: { content: "t" } }] })), part(sseChunk({ choices: [], usage }))],
      false,
    );
    const client = await routed();
    const out = await client.send(new InvokeEndpointWithResponseStreamCommand({ EndpointName: "x", Body: body, ContentType: "application/json" }));
    for await (const event of out.Body ?? []) {
      if (new TextDecoder().decode(event.PayloadPart?.Bytes).includes('"usage"')) break;
    }
    const stats = client.router.stats().totals;
    expect(stats).toMatchObject({ inflight: 0, cachedTokenRatio: 0.75, failures: 0 });
  });
});
