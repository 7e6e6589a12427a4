/**
 * The HTTP face of one llama.cpp engine process, in the OpenAI/vLLM protocol the emulated fleet
 * speaks (openai-server.ts), with the engine's own numbers:
 *
 * - `POST /v1/chat/completions`, `POST /v1/completions`: JSON, or SSE with `stream: true` (a
 *   first chat chunk with `delta.role`, one chunk per generated piece of text, the last with
 *   `finish_reason`, then with `stream_options.include_usage` a chunk with `choices: []` and
 *   `usage`, then `data: [DONE]`). `usage.prompt_tokens` is llama.cpp's token count of the
 *   rendered prompt, `usage.prompt_tokens_details.cached_tokens` the tokens the slot reused.
 * - `POST /tokenize` (`{"content", "parse_special"?}` → `{"tokens"}`) and `POST /detokenize`
 *   (`{"tokens"}` → `{"content"}`), llama-server's endpoints: llama.cpp's own tokenizer; control
 *   tokens' texts are parsed as those tokens unless `parse_special` is false (llama-server's
 *   default), and none is added.
 * - `GET /slots`: llama-server's slot list (`id`, `n_ctx`, `is_processing`), with what
 *   llama-server does not show: `n_tokens` and `tokens`, the tokens each slot's KV cache holds.
 * - `GET /v1/models`, `GET /health` (200, empty body), `GET /metrics` (vLLM's metric names:
 *   `vllm:num_requests_running` = busy slots, `vllm:num_requests_waiting` = the FIFO queue,
 *   `vllm:prefix_cache_queries`/`_hits` = prompt/reused tokens, the TTFT histogram).
 *
 * The chat template is the emulated fleet's (template.ts; the same in Jinja in the tokenizer
 * files, tokenizer-files.ts), rendered, then tokenized by llama.cpp with its control tokens parsed,
 * as llama-server does. Generated text is the bytes of the generated tokens (bpe.ts), decoded as
 * UTF-8 as they complete a character; control tokens print nothing. `finish_reason` is `length` when the limit
 * (`max_completion_tokens`, `max_tokens`, else the process's default) or the slot's context was
 * reached, `stop` on the end-of-text token. Every response carries the `x-prefix-router-*`
 * headers (instance; with a generation, prompt/cached tokens, TTFT and queueing in ms, and the
 * slot).
 */

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { isFleetError } from "../errors.js";
import { internalError, parseJson, readBody, sendJson, servedHeaders, usageOf } from "../http-common.js";
import { renderMetrics } from "../metrics.js";
import { outputTokensOf, sendError } from "../openai-server.js";
import { renderPrompt } from "../template.js";
import type { LlamaEngine, GenerationResult } from "./engine.js";
import { tinyLlamaTokenizer, type BpeTokenizer } from "./bpe.js";
import type { Token } from "./runtime.js";

/** Options of {@link createLlamaServer}. */
export interface LlamaServerOptions {
  /** Instance id, in `x-prefix-router-instance` and `/metrics`. */
  readonly id: string;
  /** The served model name. */
  readonly modelName: string;
  readonly engine: LlamaEngine;
  /** Output tokens when a request sets no limit. */
  readonly defaultMaxTokens: number;
  /** Wall clock in ms, for `created`. */
  readonly wallClock: () => number;
}

type Kind = "chat" | "completion";

/** Decodes generated tokens to text as characters complete. */
class TokenText {
  private readonly decoder = new TextDecoder("utf-8");

  constructor(private readonly tokenizer: BpeTokenizer) {}

  push(token: Token): string {
    const bytes = this.tokenizer.tokenBytes(token);
    if (bytes === undefined) return "";
    return this.decoder.decode(bytes, { stream: true });
  }

  end(): string {
    return this.decoder.decode();
  }
}

function generationHeaders(id: string, r: { promptTokens: number; cachedTokens: number; ttftMs: number; queueMs: number; slot: number }): Record<string, string> {
  return {
    ...servedHeaders({ id }, { promptTokens: r.promptTokens, cachedTokens: r.cachedTokens, ttftMs: Number.isNaN(r.ttftMs) ? 0 : r.ttftMs, queueMs: r.queueMs }),
    "x-prefix-router-slot": String(r.slot),
  };
}

/** The HTTP server of one engine process (not yet listening). */
export function createLlamaServer(o: LlamaServerOptions): Server {
  const rt = { id: o.id };
  const tokenizer = tinyLlamaTokenizer();
  let sequence = 0;

  const serve = (res: ServerResponse, kind: Kind, body: Record<string, unknown>, model: string): void => {
    if (body.n !== undefined && body.n !== 1) return sendError(rt, res, 400, "Only `n` = 1 is served");
    if (kind === "chat" && !("messages" in body)) return sendError(rt, res, 400, "`messages` is required");
    if (kind === "completion" && !("prompt" in body)) return sendError(rt, res, 400, "`prompt` is required");
    let prompt: Token[];
    try {
      prompt = o.engine.tokenize(renderPrompt(kind === "chat" ? { messages: body.messages, tools: body.tools } : { prompt: body.prompt }));
    } catch (e) {
      return sendError(rt, res, 400, isFleetError(e) ? e.message : String(e));
    }
    const field = body.max_completion_tokens !== undefined ? "max_completion_tokens" : "max_tokens";
    const out = outputTokensOf(body[field], o.defaultMaxTokens, prompt.length, o.engine.contextSize, field);
    if (typeof out === "string") return sendError(rt, res, 400, out);
    const stream = body.stream === true;
    const includeUsage = stream && (body.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true;
    const id = `${kind === "chat" ? "chatcmpl" : "cmpl"}-${o.id}-${++sequence}`;
    const created = Math.floor(o.wallClock() / 1000);
    const object = kind === "chat" ? "chat.completion.chunk" : "text_completion";
    const chunk = (choices: unknown[], usage?: unknown): string =>
      `data: ${JSON.stringify({ id, object, created, model, choices, ...(usage ? { usage } : {}) })}\n\n`;
    const piece = (text: string, finish: string | null): unknown =>
      kind === "chat"
        ? { index: 0, delta: text === "" && finish !== null ? {} : { content: text }, logprobs: null, finish_reason: finish, ...(finish !== null ? { stop_reason: null } : {}) }
        : { index: 0, text, logprobs: null, finish_reason: finish, stop_reason: null };

    const abort = new AbortController();
    let finished = false;
    res.on("close", () => {
      if (!finished) abort.abort();
    });
    const text = new TokenText(tokenizer);
    let content = "";
    let admitted: { slot: number; cachedTokens: number; queueMs: number } | undefined;
    const startStream = (ttftMs: number): void => {
      res.writeHead(200, {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache",
        ...generationHeaders(o.id, { promptTokens: prompt.length, cachedTokens: admitted?.cachedTokens ?? 0, ttftMs, queueMs: admitted?.queueMs ?? 0, slot: admitted?.slot ?? -1 }),
      });
      if (kind === "chat") res.write(chunk([{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }]));
    };
    o.engine
      .generate(
        prompt,
        out.tokens,
        {
          onAdmit(info) {
            admitted = info;
          },
          onToken(token, index, ttftMs) {
            const t = text.push(token);
            if (!stream) {
              content += t;
              return;
            }
            if (index === 0) startStream(ttftMs);
            if (t !== "") res.write(chunk([piece(t, null)]));
          },
        },
        abort.signal,
      )
      .then(
        (r: GenerationResult) => {
          finished = true;
          if (r.finishReason === "abort") return;
          const rest = text.end();
          const usage = usageOf(r);
          if (stream) {
            // The end-of-text token can come first: no token was sent, the stream starts here.
            if (!res.headersSent) startStream(r.ttftMs);
            res.write(chunk([piece(rest, r.finishReason)]));
            if (includeUsage) res.write(chunk([], usage));
            res.end("data: [DONE]\n\n");
            return;
          }
          content += rest;
          const choice =
            kind === "chat"
              ? { index: 0, message: { role: "assistant", content, refusal: null, tool_calls: [] }, logprobs: null, finish_reason: r.finishReason, stop_reason: null }
              : { index: 0, text: content, logprobs: null, finish_reason: r.finishReason, stop_reason: null, prompt_logprobs: null };
          sendJson(
            res,
            200,
            { id, object: kind === "chat" ? "chat.completion" : "text_completion", created, model, choices: [choice], usage },
            generationHeaders(o.id, r),
          );
        },
        (err: unknown) => {
          finished = true;
          if (isFleetError(err) && !res.headersSent) sendError(rt, res, 400, err.message);
          else internalError(res, err);
        },
      );
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? "/").split("?")[0]!;
    const method = req.method ?? "GET";
    if (path === "/health" && method === "GET") {
      res.writeHead(200, { "content-length": 0, ...servedHeaders(rt) });
      res.end();
      return;
    }
    if (path === "/metrics" && method === "GET") {
      const body = renderMetrics({ modelName: o.modelName, instanceId: o.id, stats: o.engine.stats(), ttft: o.engine.ttftHistogram() });
      res.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8", "content-length": Buffer.byteLength(body), ...servedHeaders(rt) });
      res.end(body);
      return;
    }
    if (path === "/slots" && method === "GET") {
      const slots = o.engine.slots().map((s) => ({ id: s.id, n_ctx: o.engine.contextSize, is_processing: s.isProcessing, n_tokens: s.tokens.length, tokens: s.tokens }));
      sendJson(res, 200, slots, servedHeaders(rt));
      return;
    }
    if (path === "/v1/models" && method === "GET") {
      const created = Math.floor(o.wallClock() / 1000);
      const data = [{ id: o.modelName, object: "model", created, owned_by: "llamacpp", root: o.modelName, parent: null, max_model_len: o.engine.contextSize }];
      sendJson(res, 200, { object: "list", data }, servedHeaders(rt));
      return;
    }
    const kind: Kind | "tokenize" | "detokenize" | undefined =
      path === "/v1/chat/completions" ? "chat" : path === "/v1/completions" ? "completion" : path === "/tokenize" ? "tokenize" : path === "/detokenize" ? "detokenize" : undefined;
    if (kind === undefined) return sendError(rt, res, 404, `No route for ${method} ${path}`);
    if (method !== "POST") return sendError(rt, res, 405, `Method ${method} not allowed`);
    readBody(req)
      .then(
        (buf) => {
          const body = parseJson(buf) as Record<string, unknown> | undefined;
          if (typeof body !== "object" || body === null || Array.isArray(body)) return sendError(rt, res, 400, "The request body must be a JSON object");
          if (kind === "tokenize") {
            if (typeof body.content !== "string") return sendError(rt, res, 400, "`content` must be a string");
            if (body.parse_special !== undefined && typeof body.parse_special !== "boolean") return sendError(rt, res, 400, "`parse_special` must be a boolean");
            return sendJson(res, 200, { tokens: o.engine.tokenize(body.content, body.parse_special !== false) }, servedHeaders(rt));
          }
          if (kind === "detokenize") {
            const tokens = body.tokens;
            if (!Array.isArray(tokens) || !tokens.every((t) => Number.isSafeInteger(t) && t >= 0 && t < o.engine.vocabularySize)) {
              return sendError(rt, res, 400, `\`tokens\` must be an array of token ids from 0 to ${o.engine.vocabularySize - 1}`);
            }
            return sendJson(res, 200, { content: o.engine.detokenize(tokens as number[]) }, servedHeaders(rt));
          }
          const model = body.model === undefined ? o.modelName : body.model;
          if (model !== o.modelName) return sendError(rt, res, 404, `The model \`${String(model)}\` does not exist.`);
          serve(res, kind, body, model);
        },
        (err: unknown) => sendError(rt, res, 400, String(err)),
      )
      .catch((err: unknown) => internalError(res, err));
  };

  const server = createServer((req, res) => {
    try {
      handle(req, res);
    } catch (err) {
      internalError(res, err);
    }
  });
  server.keepAliveTimeout = 5_000;
  return server;
}
