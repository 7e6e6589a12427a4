/**
 * Loopback servers for the hostile-input suite (not a test file): a "target" whose behaviour each
 * test picks — well-behaved, redirecting, resetting, stalling, sending garbage — and an
 * "attacker" on another port that must never receive anything. Both count every request they
 * see, so a test can assert exactly what was sent where.
 */
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterAll, beforeAll } from "vitest";

/** What a server saw of one request. */
export interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

export type Behaviour = (req: IncomingMessage, res: ServerResponse, seen: Seen) => void;

/** A loopback HTTP server with a behaviour that can change between requests. */
export interface LoopbackServer {
  readonly port: number;
  /** `http://127.0.0.1:<port>` */
  readonly origin: string;
  /** Every request received, in order (the body read in full before the behaviour runs). */
  readonly seen: Seen[];
  /** Requests whose head arrived; counted before the body is read. */
  heads: number;
  behaviour: Behaviour;
  close(): Promise<void>;
}

export async function startServer(behaviour: Behaviour = ok()): Promise<LoopbackServer> {
  const sockets = new Set<Socket>();
  const state: Omit<LoopbackServer, "port" | "origin" | "close"> = { seen: [], heads: 0, behaviour };
  const server: Server = createServer((req, res) => {
    state.heads++;
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const seen: Seen = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") };
      state.seen.push(seen);
      state.behaviour(req, res, seen);
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return Object.assign(state, {
    port,
    origin: `http://127.0.0.1:${port}`,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  }) as LoopbackServer;
}

/** A server started before the tests of the enclosing `describe` and closed after them. */
export function useServer(behaviour: Behaviour = ok()): () => LoopbackServer {
  let server: LoopbackServer | undefined;
  beforeAll(async () => {
    server = await startServer(behaviour);
  });
  afterAll(async () => {
    await server?.close();
  });
  return () => server as LoopbackServer;
}

const USAGE = { prompt_tokens: 120, completion_tokens: 2, total_tokens: 122, prompt_tokens_details: { cached_tokens: 96 } };

/** A chat completion answer with usage. */
export function ok(): Behaviour {
  return (_req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        id: "c",
        object: "chat.completion",
        created: 0,
        model: "m",
        choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
        usage: USAGE,
      }),
    );
  };
}

function chunk(content: string | undefined, usage?: object): string {
  const delta = content === undefined ? {} : { content };
  const choices = usage === undefined ? [{ index: 0, delta, finish_reason: null }] : [];
  return `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 0, model: "m", choices, ...(usage ? { usage } : {}) })}\n\n`;
}

/**
 * An SSE stream: `tokens` content chunks, then the usage chunk, then `[DONE]`. `after`: what
 * follows the usage chunk; `"no-usage"` holds the connection open before it.
 */
export function sse(tokens = 3, after: "done" | "hold" | "reset" | "no-usage" = "done"): Behaviour {
  return (req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    for (let i = 0; i < tokens; i++) res.write(chunk(`t${i}`));
    if (after === "no-usage") return;
    res.write(chunk(undefined, USAGE));
    if (after === "done") res.end("data: [DONE]\n\n");
    else if (after === "reset") setImmediate(() => req.socket.destroy());
    // "hold": the connection stays open; the client decides when to stop.
  };
}

/** A 3xx to `location`. */
export function redirect(status: number, location: string): Behaviour {
  return (_req, res) => {
    res.writeHead(status, { location, "content-type": "text/plain" });
    res.end("moved");
  };
}

/** Writes the beginning of a status line, then resets the connection: the request was read. */
export function partialStatusThenReset(): Behaviour {
  return (req) => {
    req.socket.write("HTTP/1.1 20");
    setImmediate(() => req.socket.resetAndDestroy());
  };
}

/** Headers and part of a JSON body, then a reset. */
export function resetMidBody(): Behaviour {
  return (req, res) => {
    res.writeHead(200, { "content-type": "application/json", "content-length": "1000" });
    res.write('{"id":"c","choices":[');
    setImmediate(() => req.socket.resetAndDestroy());
  };
}

/** Reads the request and never answers. */
export function stall(): Behaviour {
  return () => {};
}

/** An SSE stream of garbage: not JSON, binary, a line with no end. */
export function garbageSse(): Behaviour {
  return (_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write("data: {not json\n\n");
    res.write(Buffer.from([0xff, 0xfe, 0x00, 0x0a, 0x0a]));
    res.write('data: {"usage": {"prompt_tokens": -5, "prompt_tokens_details": {"cached_tokens": 99}}}\n\n');
    res.end("event: what\ndata: [DONE");
  };
}

/** An SSE stream that ends cleanly in the middle of an event, without usage or `[DONE]`. */
export function truncatedSse(): Behaviour {
  return (_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write(chunk("t0"));
    res.end('data: {"id":"c","object":"chat.compl');
  };
}

/** An answer with the given status and an OpenAI-style error body. */
export function status(code: number): Behaviour {
  return (_req, res) => {
    res.writeHead(code, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message: `status ${code}`, type: "test", code: null, param: null } }));
  };
}

/** A chat body whose prompt starts with `topic` (long enough to fill a 1,024-character prefix). */
export function chatBody(topic: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    model: "m",
    messages: [
      { role: "system", content: `${topic} `.repeat(Math.ceil(1200 / (topic.length + 1))) },
      { role: "user", content: "question" },
    ],
    ...extra,
  };
}
