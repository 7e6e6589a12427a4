/**
 * The SageMaker Runtime API of an emulated instance, as the AWS SDK v3 (restJson1) speaks it:
 *
 * - `POST /endpoints/{EndpointName}/invocations` → the model's JSON;
 *   `POST /endpoints/{EndpointName}/invocations-response-stream` → an AWS event stream
 *   (`application/vnd.amazon.eventstream`) of `PayloadPart` events (`:message-type` `event`,
 *   `:event-type` `PayloadPart`, `:content-type` `application/octet-stream`, the bytes as the
 *   payload), one per generated token, encoded with smithy's `EventStreamCodec`.
 *   Mid-stream faults send a `ModelStreamError` exception message
 *   (`:message-type` `exception`, `:exception-type` `ModelStreamError`, JSON `Message` and
 *   `ErrorCode`), which the SDK raises as its `ModelStreamError` class.
 * - `GET /ping` → 200 (503 when `notReady`).
 * - Any endpoint name is accepted. `X-Amzn-SageMaker-Target-Variant` must name a variant
 *   (default `AllTraffic`); `X-Amzn-SageMaker-Inference-Component` must name a configured
 *   component and selects its model. Responses carry `x-Amzn-Invoked-Production-Variant` and
 *   `X-Amzn-SageMaker-Custom-Attributes: instance=…,prompt_tokens=…,cached_tokens=…` (the SDK
 *   returns it as `CustomAttributes`), plus the `x-prefix-router-*` headers.
 * - Errors: `x-amzn-ErrorType` and a JSON `Message`: `ValidationError` 400 (unknown variant or
 *   component), `ModelError` 424 (the model rejected the body: bad JSON, unknown shape, too
 *   long — with `OriginalStatusCode` 400 — or an injected 500), `ModelNotReadyException` 429
 *   (`notReady`), `ServiceUnavailable` 503 (injected).
 *
 * Bodies: the TGI/LMI style `{"inputs": "...", "parameters": {"max_new_tokens": n}}` answers
 * `{"generated_text", "details", "usage"}` and streams JSON lines
 * `{"token": {"id", "text", "logprob", "special"}, "generated_text", "details"}` (the last line
 * has the full text and details); the OpenAI messages style `{"messages": [...]}` answers a
 * `chat.completion` and streams the same SSE chunks as the OpenAI API (usage chunk always
 * included), ending with `data: [DONE]`.
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import { isFleetError } from "./errors.js";
import { internalError, parseJson, readBody, runGeneration, sendJson, servedHeaders, usageOf, type InstanceRuntime } from "./http-common.js";
import { outputTokensOf } from "./openai-server.js";
import { cacheSaltOf } from "./cache-salt.js";
import { renderPrompt } from "./template.js";
import { countTokens, fillerText, fillerToken } from "./tokenizer.js";

const utf8 = new TextEncoder();

const ROUTE = /^\/endpoints\/([^/]+)\/(invocations|invocations-response-stream)$/;

type SageMakerErrorType = "ValidationError" | "ModelError" | "ModelNotReadyException" | "ServiceUnavailable";
const STATUS: Record<SageMakerErrorType, number> = {
  ValidationError: 400,
  ModelError: 424,
  ModelNotReadyException: 429,
  ServiceUnavailable: 503,
};

function sendSmError(
  rt: InstanceRuntime,
  res: ServerResponse,
  type: SageMakerErrorType,
  message: string,
  extra: Record<string, unknown> = {},
): void {
  sendJson(res, STATUS[type], { Message: message, ...extra }, {
    "x-amzn-ErrorType": type,
    "x-amzn-RequestId": `${rt.id}-${rt.nextSequence()}`,
    ...servedHeaders(rt),
  });
}

function modelError(rt: InstanceRuntime, res: ServerResponse, originalStatus: number, originalMessage: string): void {
  sendSmError(
    rt,
    res,
    "ModelError",
    `Received client error (${originalStatus}) from primary with message "${originalMessage}". See the emulator's logs for more information.`,
    {
      OriginalStatusCode: originalStatus,
      OriginalMessage: originalMessage,
      LogStreamArn: `arn:aws:logs:us-east-1:000000000000:log-group:/aws/sagemaker/Endpoints/prefix-router-fleet/${rt.id}`,
    },
  );
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Handles a SageMaker Runtime route; returns false when the path is not one of them. */
export function handleSageMaker(rt: InstanceRuntime, req: IncomingMessage, res: ServerResponse, path: string): boolean {
  if (path === "/ping" && req.method === "GET") {
    res.writeHead(rt.currentFaults().notReady ? 503 : 200, { "content-length": 0, ...servedHeaders(rt) });
    res.end();
    return true;
  }
  const m = ROUTE.exec(path);
  if (m === null || req.method !== "POST") return false;
  const stream = m[2] === "invocations-response-stream";
  const variantHeader = header(req, "x-amzn-sagemaker-target-variant");
  const component = header(req, "x-amzn-sagemaker-inference-component");
  readBody(req)
    .then(
      (buf) => serve(rt, res, buf, stream, variantHeader, component),
      (err: unknown) => sendSmError(rt, res, "ValidationError", String(err)),
    )
    .catch((err: unknown) => internalError(res, err));
  return true;
}

function serve(
  rt: InstanceRuntime,
  res: ServerResponse,
  buf: Buffer,
  stream: boolean,
  variantHeader: string | undefined,
  component: string | undefined,
): void {
  const faults = rt.currentFaults();
  const variants = rt.sagemaker.variants;
  if (variantHeader !== undefined && !variants.includes(variantHeader)) {
    return sendSmError(rt, res, "ValidationError", `Variant ${variantHeader} not found for the endpoint.`);
  }
  const variant = variantHeader ?? variants[0]!;
  let model = rt.models[0]!;
  if (component !== undefined) {
    const mapped = rt.sagemaker.inferenceComponents[component];
    if (mapped === undefined) return sendSmError(rt, res, "ValidationError", `Inference Component ${component} not found.`);
    model = mapped;
  }
  if (faults.notReady) return sendSmError(rt, res, "ModelNotReadyException", "Model is not ready yet. Please retry later.");
  if (faults.errorRate > 0 && rt.random() < faults.errorRate) {
    if (faults.errorStatus === 503) return sendSmError(rt, res, "ServiceUnavailable", "Injected fault: service unavailable.");
    return modelError(rt, res, 500, "Injected fault: internal server error");
  }
  const body = parseJson(buf);
  if (typeof body !== "object" || body === null || Array.isArray(body)) return modelError(rt, res, 400, "The request body must be a JSON object");
  const b = body as Record<string, unknown>;
  const chat = "messages" in b;
  let prompt: string;
  let cacheSalt: string | undefined;
  try {
    prompt = renderPrompt(chat ? { messages: b.messages, tools: b.tools } : "inputs" in b ? { inputs: b.inputs } : b);
    cacheSalt = cacheSaltOf(b);
  } catch (e) {
    return modelError(rt, res, 400, isFleetError(e) ? e.message : String(e));
  }
  const params = (typeof b.parameters === "object" && b.parameters !== null ? b.parameters : {}) as Record<string, unknown>;
  const field = chat ? (b.max_completion_tokens !== undefined ? "max_completion_tokens" : "max_tokens") : "max_new_tokens";
  const out = outputTokensOf(chat ? b[field] : params.max_new_tokens, rt.defaultMaxTokens, countTokens(prompt), rt.maxModelLen, field);
  if (typeof out === "string") return modelError(rt, res, 400, out);
  const finishReason = out.explicit ? "length" : "stop";
  const id = `chatcmpl-${rt.id}-${rt.nextSequence()}`;
  const created = Math.floor(rt.wallClockMs() / 1000);
  const attributes = (p: number, c: number): string => `instance=${rt.id},prompt_tokens=${p},cached_tokens=${c}`;
  const codec = rt.sagemaker.eventStream;
  if (stream && codec === undefined) {
    return modelError(rt, res, 500, "The emulated SageMaker response stream needs the optional peer dependency @smithy/core (npm install @smithy/core)");
  }
  const part = (text: string): Uint8Array =>
    codec!.encode({
      headers: {
        ":event-type": { type: "string", value: "PayloadPart" },
        ":message-type": { type: "string", value: "event" },
        ":content-type": { type: "string", value: "application/octet-stream" },
      },
      body: utf8.encode(text),
    });
  const sse = (choices: unknown[], usage?: unknown): string =>
    `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices, ...(usage ? { usage } : {}) })}\n\n`;
  const details = (p: number, c: number, o: number) => ({ finish_reason: finishReason, generated_tokens: o, prompt_tokens: p, cached_tokens: c });
  try {
    runGeneration(rt, res, { prompt, model, outputTokens: out.tokens, ...(cacheSalt === undefined ? {} : { cacheSalt }) }, stream, {
      onFirstToken(info) {
        res.writeHead(200, {
          "content-type": "application/vnd.amazon.eventstream",
          "X-Amzn-SageMaker-Content-Type": chat ? "text/event-stream" : "application/jsonlines",
          "x-Amzn-Invoked-Production-Variant": variant,
          "X-Amzn-SageMaker-Custom-Attributes": attributes(info.promptTokens, info.cachedTokens),
          "x-amzn-RequestId": id,
          ...servedHeaders(rt, info),
        });
        if (chat) res.write(part(sse([{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }])));
      },
      onToken(index, last) {
        if (chat) {
          res.write(part(sse([{ index: 0, delta: { content: fillerToken(index) }, logprobs: null, finish_reason: last ? finishReason : null }])));
        } else if (!last) {
          res.write(part(`${JSON.stringify({ token: { id: index, text: fillerToken(index), logprob: 0, special: false }, generated_text: null, details: null })}\n`));
        }
      },
      onStreamError(generated) {
        res.end(
          codec!.encode({
            headers: {
              ":message-type": { type: "string", value: "exception" },
              ":exception-type": { type: "string", value: "ModelStreamError" },
              ":content-type": { type: "string", value: "application/json" },
            },
            body: utf8.encode(JSON.stringify({ Message: `Injected fault: model stream error after ${generated} tokens`, ErrorCode: "ModelStreamError" })),
          }),
        );
      },
      onDone(r) {
        const usage = usageOf(r);
        if (stream) {
          if (chat) {
            res.write(part(sse([], usage)));
            res.end(part("data: [DONE]\n\n"));
          } else {
            const last = r.outputTokens - 1;
            res.end(
              part(
                `${JSON.stringify({
                  token: { id: last, text: fillerToken(last), logprob: 0, special: false },
                  generated_text: fillerText(r.outputTokens),
                  details: details(r.promptTokens, r.cachedTokens, r.outputTokens),
                  usage,
                })}\n`,
              ),
            );
          }
          return;
        }
        const text = fillerText(r.outputTokens);
        const payload = chat
          ? {
              id,
              object: "chat.completion",
              created,
              model,
              choices: [{ index: 0, message: { role: "assistant", content: text, tool_calls: [] }, logprobs: null, finish_reason: finishReason, stop_reason: null }],
              usage,
            }
          : { generated_text: text, details: details(r.promptTokens, r.cachedTokens, r.outputTokens), usage };
        sendJson(res, 200, payload, {
          "x-Amzn-Invoked-Production-Variant": variant,
          "X-Amzn-SageMaker-Custom-Attributes": attributes(r.promptTokens, r.cachedTokens),
          "x-amzn-RequestId": id,
          ...servedHeaders(rt, { promptTokens: r.promptTokens, cachedTokens: r.cachedTokens, ttftMs: r.firstTokenMs - r.arrivalMs, queueMs: r.queueMs }),
        });
      },
    });
  } catch (e) {
    modelError(rt, res, 400, isFleetError(e) ? e.message : String(e));
  }
}
