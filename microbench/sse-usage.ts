/**
 * Micro-benchmark of the usage scanner on the streaming path: what reading `usage` out of a
 * server-sent-events body costs per stream, beside `TextDecoder` alone (the floor any framing
 * pays: the bytes must be decoded to be read).
 *
 *   npx tsx microbench/sse-usage.ts                            # the scanner in src/adapter/usage.ts
 *   npx tsx microbench/sse-usage.ts --usage=path/to/usage.ts   # another build of it (a baseline)
 *   npx tsx microbench/sse-usage.ts --time=2000
 *
 * Streams (each scanned whole, as the OpenAI adapter sees them):
 *   (a) chat completions, 512 tokens, one event per token, then the usage chunk and [DONE],
 *       arriving one event per network chunk (vLLM flushes each token);
 *   (b) the same stream arriving in 16 KiB chunks (a buffered proxy);
 *   (c) the Responses API, 512 tokens: created, in_progress, item and part events, one
 *       output_text.delta per token, then response.completed with usage.
 */
import { pathToFileURL } from "node:url";
import { resolve } from "node:path";
import { Bench } from "tinybench";

const args = new Map(
  process.argv.slice(2).map((a) => {
    const [k, v = ""] = a.replace(/^--/, "").split("=");
    return [k as string, v];
  }),
);
const TIME_MS = Number(args.get("time") ?? 1000);
const usagePath = resolve(args.get("usage") ?? "src/adapter/usage.ts");
const { scannerFor } = (await import(pathToFileURL(usagePath).href)) as {
  scannerFor(contentType: string): { push(chunk: Uint8Array): void; result(): unknown } | undefined;
};

const enc = new TextEncoder();
const TOKENS = 512;
const usage = { prompt_tokens: 9000, completion_tokens: TOKENS, total_tokens: 9000 + TOKENS, prompt_tokens_details: { cached_tokens: 8192 } };

function chatEvents(): string[] {
  const events: string[] = [];
  for (let i = 0; i < TOKENS; i++) {
    const chunk = { id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta: { content: ` tok${i}` }, logprobs: null, finish_reason: null }] };
    events.push(`data: ${JSON.stringify(chunk)}\n\n`);
  }
  events.push(`data: ${JSON.stringify({ id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: "m", choices: [], usage })}\n\n`, "data: [DONE]\n\n");
  return events;
}

function responsesEvents(): string[] {
  let seq = 0;
  const ev = (type: string, body: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...body })}\n\n`;
  const response = { id: "resp_1", object: "response", status: "in_progress", model: "m", output: [] };
  const events = [ev("response.created", { response }), ev("response.in_progress", { response })];
  events.push(ev("response.output_item.added", { output_index: 0, item: { id: "msg_1", type: "message", role: "assistant", content: [] } }));
  events.push(ev("response.content_part.added", { item_id: "msg_1", output_index: 0, content_index: 0, part: { type: "output_text", text: "" } }));
  for (let i = 0; i < TOKENS; i++) {
    events.push(ev("response.output_text.delta", { item_id: "msg_1", output_index: 0, content_index: 0, delta: ` tok${i}`, logprobs: [] }));
  }
  const done = { ...response, status: "completed", usage: { input_tokens: 9000, input_tokens_details: { cached_tokens: 8192 }, output_tokens: TOKENS, total_tokens: 9000 + TOKENS } };
  events.push(ev("response.completed", { response: done }));
  return events;
}

function rechunk(bytes: Uint8Array, size: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size));
  return out;
}

const chat = chatEvents();
const responses = responsesEvents();
const streams: Record<string, { chunks: Uint8Array[]; events: number }> = {
  "(a) chat, one event per chunk": { chunks: chat.map((e) => enc.encode(e)), events: chat.length },
  "(b) chat, 16 KiB chunks": { chunks: rechunk(enc.encode(chat.join("")), 16 * 1024), events: chat.length },
  "(c) responses, one event per chunk": { chunks: responses.map((e) => enc.encode(e)), events: responses.length },
};

const bench = new Bench({ time: TIME_MS });
for (const [name, { chunks }] of Object.entries(streams)) {
  bench.add(`${name}: scanner`, () => {
    const scanner = scannerFor("text/event-stream");
    for (const c of chunks) scanner?.push(c);
    if (scanner?.result() === undefined) throw new Error("no usage found");
  });
  bench.add(`${name}: TextDecoder only`, () => {
    const decoder = new TextDecoder();
    let n = 0;
    for (const c of chunks) n += decoder.decode(c, { stream: true }).length;
    if (n === 0) throw new Error("empty");
  });
}
await bench.run();

const rows = bench.tasks.map((t) => {
  const r = t.result as { latency?: { p50?: number; mean?: number } } | undefined;
  const { chunks, events } = streams[t.name.slice(0, t.name.lastIndexOf(":"))]!;
  const bytes = chunks.reduce((n, c) => n + c.length, 0);
  const p50Ms = r?.latency?.p50 ?? r?.latency?.mean ?? Number.NaN;
  return { task: t.name, "µs per stream (p50)": (p50Ms * 1000).toFixed(1), "ns per event": ((p50Ms * 1e6) / events).toFixed(0), "MB/s": (bytes / 1e6 / (p50Ms / 1000)).toFixed(0) };
});
console.log(`usage scanner: ${usagePath}`);
console.table(rows);
