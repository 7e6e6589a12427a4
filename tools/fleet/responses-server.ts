/**
 * The OpenAI Responses API of an emulated instance, as vLLM serves it with its response store on
 * (`VLLM_ENABLE_RESPONSES_API_STORE=1`): stored responses live in the instance's own memory, so
 * a request that continues one (`previous_response_id`) succeeds only on the instance that
 * produced it — elsewhere it is a 404, as on vLLM.
 *
 * - `POST /v1/responses`: `input` (a string, or message / `function_call` /
 *   `function_call_output` items), optional `instructions` (a system message first; not carried
 *   over from the previous response), `tools`, `previous_response_id`, `max_output_tokens`,
 *   `store` (default true), `stream`. The prompt is the previous response's conversation (its
 *   input and output) followed by the new input, rendered by the chat template (template.ts),
 *   so a second turn finds the first turn's prompt in the prefix cache.
 * - JSON: one `response` object with `output: [message]` and `usage.input_tokens_details.cached_tokens`.
 * - SSE (`stream: true`): `response.created` and `response.in_progress` as soon as the request is
 *   accepted (before prefill, as vLLM sends them), then at the first token
 *   `response.output_item.added` and `response.content_part.added`, one
 *   `response.output_text.delta` per token, the `.done` events and `response.completed` with
 *   usage. The streaming error fault sends an `error` event and ends the stream.
 * - `GET /v1/responses/{id}` returns a stored response; `DELETE /v1/responses/{id}` forgets it.
 *
 * The store keeps the {@link MAX_STORED_RESPONSES} most recently used responses per instance.
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import { LRUCache } from "lru-cache";
import { isFleetError } from "./errors.js";
import { runGeneration, sendJson, servedHeaders, type GenerationSpec, type InstanceRuntime } from "./http-common.js";
import { admitRequest, outputTokensOf, sendError } from "./openai-server.js";
import { renderPrompt } from "./template.js";
import { countTokens, fillerText, fillerToken } from "./tokenizer.js";

/** Responses each instance keeps for `previous_response_id`, least recently used dropped first. */
export const MAX_STORED_RESPONSES = 10_000;

/** A chat message, as the chat template renders it. */
type Message = Record<string, unknown>;

/** What an instance keeps of a stored response: the reply object and the conversation so far. */
interface Stored {
  response: Record<string, unknown>;
  /** Input and output of every turn up to this response; `instructions` excluded. */
  conversation: Message[];
}

/** An instance's stored responses. */
export class ResponseStore {
  private readonly byId = new LRUCache<string, Stored>({ max: MAX_STORED_RESPONSES });

  get(id: string): Stored | undefined {
    return this.byId.get(id);
  }

  set(id: string, stored: Stored): void {
    this.byId.set(id, stored);
  }

  delete(id: string): boolean {
    return this.byId.delete(id);
  }
}

/** The instance a Responses handler serves: the shared runtime plus its store. */
export interface ResponsesRuntime extends InstanceRuntime {
  readonly responses: ResponseStore;
}

const PREFIX = "/v1/responses";

/** Handles a Responses API route; returns false when the path is not one. */
export function handleResponses(rt: ResponsesRuntime, req: IncomingMessage, res: ServerResponse, path: string): boolean {
  const method = req.method ?? "GET";
  if (path === PREFIX) {
    if (method !== "POST") sendError(rt, res, 405, `Method ${method} not allowed`);
    else admitRequest(rt, req, res, (body, model) => create(rt, res, body, model));
    return true;
  }
  if (!path.startsWith(`${PREFIX}/`)) return false;
  const id = decodeURIComponent(path.slice(PREFIX.length + 1));
  const stored = rt.responses.get(id);
  if (method === "GET" && stored !== undefined) sendJson(res, 200, stored.response, servedHeaders(rt));
  else if (method === "DELETE" && stored !== undefined) {
    rt.responses.delete(id);
    sendJson(res, 200, { id, object: "response.deleted", deleted: true }, servedHeaders(rt));
  } else if (method === "GET" || method === "DELETE") notFound(rt, res, id);
  else sendError(rt, res, 405, `Method ${method} not allowed`);
  return true;
}

function notFound(rt: InstanceRuntime, res: ServerResponse, id: string): void {
  sendError(rt, res, 404, `Response with id '${id}' not found.`);
}

function create(rt: ResponsesRuntime, res: ServerResponse, body: Record<string, unknown>, model: string): void {
  let previous: Stored | undefined;
  if (body.previous_response_id !== undefined && body.previous_response_id !== null) {
    if (typeof body.previous_response_id !== "string") return sendError(rt, res, 400, "`previous_response_id` must be a string");
    previous = rt.responses.get(body.previous_response_id);
    if (previous === undefined) return notFound(rt, res, body.previous_response_id);
  }
  let input: Message[];
  let prompt: string;
  try {
    input = inputMessages(body.input);
    const system = typeof body.instructions === "string" ? [{ role: "system", content: body.instructions }] : [];
    prompt = renderPrompt({ messages: [...system, ...(previous?.conversation ?? []), ...input], tools: body.tools });
  } catch (e) {
    return sendError(rt, res, 400, isFleetError(e) ? e.message : String(e));
  }
  const out = outputTokensOf(body.max_output_tokens, rt.defaultMaxTokens, countTokens(prompt), rt.maxModelLen, "max_output_tokens");
  if (typeof out === "string") return sendError(rt, res, 400, out);
  const spec: GenerationSpec = { prompt, model, outputTokens: out.tokens };
  const reply = new Reply(rt, res, body, model, out.explicit);
  try {
    runGeneration(rt, res, spec, body.stream === true, {
      onFirstToken: () => reply.open(),
      onToken: (index) => reply.delta(fillerToken(index)),
      onStreamError: (generated) => reply.fail(`Injected fault: engine error after ${generated} tokens`),
      onDone(r) {
        const text = fillerText(r.outputTokens);
        const response = reply.finish(text, r);
        if (body.store === false) return;
        rt.responses.set(response.id as string, {
          response,
          conversation: [...(previous?.conversation ?? []), ...input, { role: "assistant", content: text }],
        });
      },
    });
  } catch (e) {
    return sendError(rt, res, 400, isFleetError(e) ? e.message : String(e));
  }
  if (body.stream === true) reply.start();
}

/** The request's `input` as chat messages. */
function inputMessages(input: unknown): Message[] {
  if (typeof input === "string") return [{ role: "user", content: input }];
  if (!Array.isArray(input) || input.length === 0) {
    throw new TypeError("`input` must be a string or a non-empty array of items");
  }
  return input.map((item, i) => {
    if (item === null || typeof item !== "object") throw new TypeError(`input[${i}] must be an object`);
    const it = item as Message;
    if (it.type === "function_call") {
      return { role: "assistant", content: null, tool_calls: [{ id: it.call_id, type: "function", function: { name: it.name, arguments: it.arguments } }] };
    }
    if (it.type === "function_call_output") return { role: "tool", content: typeof it.output === "string" ? it.output : JSON.stringify(it.output) };
    if ((it.type === undefined || it.type === "message") && typeof it.role === "string") {
      return { role: it.role, content: Array.isArray(it.content) ? it.content.map(textPart) : it.content };
    }
    throw new TypeError(`input[${i}]: the emulator serves message, function_call and function_call_output items, got ${JSON.stringify(it.type)}`);
  });
}

/** Responses content parts as the template's parts: `input_text` / `output_text` are text. */
function textPart(part: unknown): unknown {
  const p = part as Message | null;
  if (p !== null && typeof p === "object" && (p.type === "input_text" || p.type === "output_text")) return { type: "text", text: p.text };
  return part;
}

/** Writes one response, as JSON or as a stream of events. */
class Reply {
  private readonly id: string;
  private readonly msgId: string;
  private readonly createdAt: number;
  private sequence = 0;
  /** Streaming: the text sent so far. */
  private text = "";

  constructor(
    private readonly rt: InstanceRuntime,
    private readonly res: ServerResponse,
    private readonly body: Record<string, unknown>,
    private readonly model: string,
    private readonly limited: boolean,
  ) {
    const n = rt.nextSequence();
    this.id = `resp_${rt.id}_${n}`;
    this.msgId = `msg_${rt.id}_${n}`;
    this.createdAt = Math.floor(rt.wallClockMs() / 1000);
  }

  /** The response object in a given state. */
  private response(status: string, output: Message[], usage: unknown): Message {
    const b = this.body;
    return {
      id: this.id,
      object: "response",
      created_at: this.createdAt,
      status,
      error: null,
      incomplete_details: status === "incomplete" ? { reason: "max_output_tokens" } : null,
      instructions: b.instructions ?? null,
      max_output_tokens: b.max_output_tokens ?? null,
      model: this.model,
      output,
      parallel_tool_calls: true,
      previous_response_id: b.previous_response_id ?? null,
      store: b.store !== false,
      temperature: b.temperature ?? 1,
      tool_choice: b.tool_choice ?? "auto",
      tools: b.tools ?? [],
      top_p: b.top_p ?? 1,
      truncation: "disabled",
      usage,
      metadata: b.metadata ?? {},
    };
  }

  private message(status: string, text: string): Message {
    return { type: "message", id: this.msgId, status, role: "assistant", content: status === "in_progress" ? [] : [this.part(text)] };
  }

  private part(text: string): Message {
    return { type: "output_text", text, annotations: [], logprobs: [] };
  }

  private event(type: string, fields: Message): void {
    this.res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: this.sequence++, ...fields })}\n\n`);
  }

  /** Streaming: accepted, before prefill. */
  start(): void {
    this.res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", ...servedHeaders(this.rt) });
    const initial = this.response("in_progress", [], null);
    this.event("response.created", { response: initial });
    this.event("response.in_progress", { response: initial });
  }

  /** Streaming: the first token exists. */
  open(): void {
    this.event("response.output_item.added", { output_index: 0, item: this.message("in_progress", "") });
    this.event("response.content_part.added", { item_id: this.msgId, output_index: 0, content_index: 0, part: this.part("") });
  }

  delta(token: string): void {
    this.text += token;
    this.event("response.output_text.delta", { item_id: this.msgId, output_index: 0, content_index: 0, delta: token, logprobs: [] });
  }

  fail(message: string): void {
    this.event("error", { code: "server_error", message, param: null });
    this.res.end();
  }

  /** Ends the response (both forms) and returns the final response object. */
  finish(text: string, r: { promptTokens: number; cachedTokens: number; outputTokens: number; firstTokenMs: number; arrivalMs: number; queueMs: number }): Message {
    const usage = {
      input_tokens: r.promptTokens,
      input_tokens_details: { cached_tokens: r.cachedTokens },
      output_tokens: r.outputTokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: r.promptTokens + r.outputTokens,
    };
    const status = this.limited ? "incomplete" : "completed";
    const final = this.response(status, [this.message("completed", text)], usage);
    if (this.body.stream !== true) {
      const info = { promptTokens: r.promptTokens, cachedTokens: r.cachedTokens, ttftMs: r.firstTokenMs - r.arrivalMs, queueMs: r.queueMs };
      sendJson(this.res, 200, final, servedHeaders(this.rt, info));
      return final;
    }
    const at = { item_id: this.msgId, output_index: 0, content_index: 0 };
    this.event("response.output_text.done", { ...at, text: this.text, logprobs: [] });
    this.event("response.content_part.done", { ...at, part: this.part(this.text) });
    this.event("response.output_item.done", { output_index: 0, item: this.message("completed", this.text) });
    this.event(status === "completed" ? "response.completed" : "response.incomplete", { response: final });
    this.res.end();
    return final;
  }
}
