/**
 * The OpenAI-compatible API of an emulated instance, as vLLM serves it:
 *
 * - `POST /v1/chat/completions`, `POST /v1/completions`: non-streaming JSON, or SSE
 *   (`stream: true`) with one chunk per generated token — the first chat chunk carries
 *   `delta.role`, the last token's chunk carries `finish_reason`, then (with
 *   `stream_options.include_usage`) a chunk with `choices: []` and `usage`, then
 *   `data: [DONE]`. `usage.prompt_tokens_details.cached_tokens` is the prefix-cache hit.
 * - `GET /v1/models`, `GET /health` (200, empty body; 503 when `notReady`), `GET /metrics`.
 * - The Responses API (`/v1/responses`) lives in responses-server.ts.
 * - Errors use vLLM's body `{"error": {"message", "type", "param", "code"}}`.
 *
 * Output length: `max_completion_tokens`, else `max_tokens`, else the fleet's
 * `defaultMaxTokens`; with an explicit limit the text stops there (`finish_reason: "length"`),
 * otherwise `"stop"`. Only `n = 1` is served. Every response carries `x-prefix-router-*`
 * headers (instance, prompt/cached tokens, model TTFT and queueing in ms).
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import { isFleetError } from "./errors.js";
import {
  internalError,
  parseJson,
  readBody,
  runGeneration,
  sendJson,
  servedHeaders,
  usageOf,
  type GenerationSpec,
  type InstanceRuntime,
} from "./http-common.js";
import { cacheSaltOf } from "./cache-salt.js";
import { renderPrompt } from "./template.js";
import { countTokens, fillerText, fillerToken } from "./tokenizer.js";

const ERROR_TYPES: Record<number, string> = {
  400: "BadRequestError",
  404: "NotFoundError",
  405: "MethodNotAllowedError",
  500: "InternalServerError",
  503: "ServiceUnavailableError",
};

/** Sends a vLLM-style error. */
export function sendError(rt: Pick<InstanceRuntime, "id">, res: ServerResponse, status: number, message: string): void {
  sendJson(
    res,
    status,
    { error: { message, type: ERROR_TYPES[status] ?? "Error", param: null, code: status } },
    servedHeaders(rt),
  );
}

/** Resolves the output length of a request, or returns an error message. */
export function outputTokensOf(
  value: unknown,
  fallback: number,
  promptTokens: number,
  maxModelLen: number,
  field: string,
): { tokens: number; explicit: boolean } | string {
  if (value === undefined || value === null) {
    return { tokens: Math.max(1, Math.min(fallback, maxModelLen - promptTokens)), explicit: false };
  }
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) {
    return `\`${field}\` must be an integer ≥ 1, got ${JSON.stringify(value)}`;
  }
  return { tokens: value, explicit: true };
}

type Kind = "chat" | "completion";

/** Handles an OpenAI/vLLM route; returns false when the path is not one of them. */
export function handleOpenAI(rt: InstanceRuntime, req: IncomingMessage, res: ServerResponse, path: string): boolean {
  const method = req.method ?? "GET";
  if (path === "/health" && method === "GET") {
    if (rt.currentFaults().notReady) sendError(rt, res, 503, "The model is loading.");
    else {
      res.writeHead(200, { "content-length": 0, ...servedHeaders(rt) });
      res.end();
    }
    return true;
  }
  if (path === "/metrics" && method === "GET") {
    const text = rt.metricsText();
    res.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8", "content-length": Buffer.byteLength(text), ...servedHeaders(rt) });
    res.end(text);
    return true;
  }
  const loads = path === "/v1/loads" && method === "GET" ? rt.loadsText?.() : undefined;
  if (loads !== undefined) {
    // Only the Prometheus format: what a load view reads (`?format=prometheus`).
    res.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8", "content-length": Buffer.byteLength(loads), ...servedHeaders(rt) });
    res.end(loads);
    return true;
  }
  if (path === "/v1/models" && method === "GET") {
    const created = Math.floor(rt.wallClockMs() / 1000);
    sendJson(
      res,
      200,
      {
        object: "list",
        data: rt.models.map((id) => ({ id, object: "model", created, owned_by: "vllm", root: id, parent: null, max_model_len: rt.maxModelLen })),
      },
      servedHeaders(rt),
    );
    return true;
  }
  const kind: Kind | undefined =
    path === "/v1/chat/completions" ? "chat" : path === "/v1/completions" ? "completion" : undefined;
  if (kind === undefined) return false;
  if (method !== "POST") {
    sendError(rt, res, 405, `Method ${method} not allowed`);
    return true;
  }
  admitRequest(rt, req, res, (body, model) => serve(rt, res, kind, body, model));
  return true;
}

/**
 * Reads a POST body of the OpenAI protocol and admits it as vLLM does — the model is loaded, the
 * body is a JSON object, the injected error fault spares it, its model is served — then hands
 * the body and model to `serve`; otherwise answers the error.
 */
export function admitRequest(
  rt: InstanceRuntime,
  req: IncomingMessage,
  res: ServerResponse,
  serve: (body: Record<string, unknown>, model: string) => void,
): void {
  const admit = (buf: Buffer): void => {
    const faults = rt.currentFaults();
    if (faults.notReady) return sendError(rt, res, 503, "The model is loading.");
    const body = parseJson(buf) as Record<string, unknown> | undefined;
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      return sendError(rt, res, 400, "The request body must be a JSON object");
    }
    if (faults.errorRate > 0 && rt.random() < faults.errorRate) {
      return sendError(rt, res, faults.errorStatus, `Injected fault: HTTP ${faults.errorStatus}`);
    }
    const model = body.model === undefined ? rt.models[0]! : body.model;
    if (typeof model !== "string" || !rt.models.includes(model)) {
      return sendError(rt, res, 404, `The model \`${String(model)}\` does not exist.`);
    }
    serve(body, model);
  };
  readBody(req)
    .then(admit, (err: unknown) => sendError(rt, res, 400, String(err)))
    .catch((err: unknown) => internalError(res, err));
}

function serve(rt: InstanceRuntime, res: ServerResponse, kind: Kind, body: Record<string, unknown>, model: string): void {
  if (body.n !== undefined && body.n !== 1) return sendError(rt, res, 400, "The emulator serves `n` = 1 only");
  if (kind === "chat" && !("messages" in body)) return sendError(rt, res, 400, "`messages` is required");
  if (kind === "completion" && !("prompt" in body)) return sendError(rt, res, 400, "`prompt` is required");
  let prompt: string;
  let cacheSalt: string | undefined;
  try {
    prompt = renderPrompt(kind === "chat" ? { messages: body.messages, tools: body.tools } : { prompt: body.prompt });
    cacheSalt = cacheSaltOf(body);
  } catch (e) {
    return sendError(rt, res, 400, isFleetError(e) ? e.message : String(e));
  }
  const promptTokens = countTokens(prompt);
  const field = body.max_completion_tokens !== undefined ? "max_completion_tokens" : "max_tokens";
  const out = outputTokensOf(body[field], rt.defaultMaxTokens, promptTokens, rt.maxModelLen, field);
  if (typeof out === "string") return sendError(rt, res, 400, out);
  const spec: GenerationSpec = { prompt, model, outputTokens: out.tokens, ...(cacheSalt === undefined ? {} : { cacheSalt }) };
  const finishReason = out.explicit ? "length" : "stop";
  const stream = body.stream === true;
  const streamOptions = body.stream_options as { include_usage?: unknown } | undefined;
  const includeUsage = stream && streamOptions?.include_usage === true;
  const id = `${kind === "chat" ? "chatcmpl" : "cmpl"}-${rt.id}-${rt.nextSequence()}`;
  const created = Math.floor(rt.wallClockMs() / 1000);
  const object = kind === "chat" ? "chat.completion.chunk" : "text_completion";
  const chunk = (choices: unknown[], usage?: unknown): string =>
    `data: ${JSON.stringify({ id, object, created, model, choices, ...(usage ? { usage } : {}) })}\n\n`;
  try {
    runGeneration(rt, res, spec, stream, {
      onFirstToken(info) {
        res.writeHead(200, {
          "content-type": "text/event-stream; charset=utf-8",
          "cache-control": "no-cache",
          ...servedHeaders(rt, info),
        });
        if (kind === "chat") {
          res.write(chunk([{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }]));
        }
      },
      onToken(index, last) {
        const fin = last ? finishReason : null;
        res.write(
          kind === "chat"
            ? chunk([{ index: 0, delta: { content: fillerToken(index) }, logprobs: null, finish_reason: fin, ...(last ? { stop_reason: null } : {}) }])
            : chunk([{ index: 0, text: fillerToken(index), logprobs: null, finish_reason: fin, stop_reason: null }]),
        );
      },
      onStreamError(generated) {
        res.write(
          `data: ${JSON.stringify({ error: { message: `Injected fault: engine error after ${generated} tokens`, type: "InternalServerError", param: null, code: 500 } })}\n\n`,
        );
        res.end("data: [DONE]\n\n");
      },
      onDone(r) {
        if (stream) {
          if (includeUsage) res.write(chunk([], usageOf(r)));
          res.end("data: [DONE]\n\n");
          return;
        }
        const text = fillerText(r.outputTokens);
        const headers = servedHeaders(rt, {
          promptTokens: r.promptTokens,
          cachedTokens: r.cachedTokens,
          ttftMs: r.firstTokenMs - r.arrivalMs,
          queueMs: r.queueMs,
        });
        const choice =
          kind === "chat"
            ? { index: 0, message: { role: "assistant", content: text, refusal: null, tool_calls: [] }, logprobs: null, finish_reason: finishReason, stop_reason: null }
            : { index: 0, text, logprobs: null, finish_reason: finishReason, stop_reason: null, prompt_logprobs: null };
        sendJson(
          res,
          200,
          { id, object: kind === "chat" ? "chat.completion" : "text_completion", created, model, choices: [choice], usage: usageOf(r) },
          headers,
        );
      },
    });
  } catch (e) {
    sendError(rt, res, 400, isFleetError(e) ? e.message : String(e));
  }
}
