/**
 * One application process of the shared response-affinity test (response-store.test.ts): the
 * real openai client routed across the live emulated fleet, response affinity shared through
 * Redis. Reads one JSON command per stdin line and answers one JSON line on stdout, with the same
 * `tag`:
 *
 *   { op: "turn", tag, input, previous?, stream } → { tag, ok, id?, instance?, status?, code? }
 *   { op: "stats", tag }                          → { tag, stats }   (router.stats().responseAffinity)
 *   { op: "close", tag }                          → { tag, closed }  (router.close(), then exit)
 *
 * Prints `ready` first. Run with `node --import tsx`.
 */
import { createInterface } from "node:readline";
import OpenAI from "openai";
import { getRouter, routeOpenAI } from "../../src/openai/index.js";

const [redisUrl, keyPrefix, targetsJson, model, timeoutMs] = process.argv.slice(2);
const INSTANCE_HEADER = "x-prefix-router-instance";
const client = await routeOpenAI(new OpenAI({ apiKey: "unused", baseURL: "http://fleet.invalid/v1", maxRetries: 0 }), {
  targets: JSON.parse(targetsJson!) as { id: string; baseURL: string }[],
  responseAffinity: { store: { source: "redis", url: redisUrl, keyPrefix, timeoutMs: Number(timeoutMs) } },
});
const router = getRouter(client)!;

interface Command {
  op: "turn" | "stats" | "close";
  tag: number;
  input?: string;
  previous?: string;
  stream?: boolean;
}

async function turn(c: Command): Promise<Record<string, unknown>> {
  const body = { model: model!, input: c.input!, ...(c.previous === undefined ? {} : { previous_response_id: c.previous }) };
  try {
    let id: string | undefined;
    let instance: string | null;
    if (c.stream === true) {
      const { data: stream, response } = await client.responses.create({ ...body, stream: true }).withResponse();
      instance = response.headers.get(INSTANCE_HEADER);
      for await (const event of stream) if (event.type === "response.created") id = event.response.id;
    } else {
      const { data, response } = await client.responses.create(body).withResponse();
      instance = response.headers.get(INSTANCE_HEADER);
      id = data.id;
    }
    return { ok: true, id, instance };
  } catch (e) {
    const error = e as { status?: number; code?: string | null; message?: string };
    return { ok: false, status: error.status, code: error.code ?? null, message: error.message };
  }
}

const send = (line: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify(line)}\n`);
process.stdout.write("ready\n");
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === "") continue;
  const c = JSON.parse(line) as Command;
  if (c.op === "turn") void turn(c).then((answer) => send({ tag: c.tag, ...answer }));
  else if (c.op === "stats") send({ tag: c.tag, stats: router.stats().responseAffinity });
  else {
    await router.close();
    send({ tag: c.tag, closed: true });
    process.exit(0);
  }
}
