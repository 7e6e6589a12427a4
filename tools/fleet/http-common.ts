/**
 * What the protocol handlers (openai-server.ts, sagemaker-server.ts) share: the instance they
 * serve, body reading, JSON replies, the prefix-router response headers, and one generation
 * loop that drives the engine and applies the streaming fault knobs.
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import type { EngineCallbacks, EngineTicket, VirtualResult } from "./engine.js";
import type { FaultKnobs } from "./faults.js";
import { countTokens } from "./tokenizer.js";
import { parseJson as parseJsonText } from "prefix-router";

/** Maximum request body accepted, bytes. */
export const MAX_BODY_BYTES = 32 * 1024 * 1024;

/** A request for one generation, after rendering and validation. */
export interface GenerationSpec {
  /** Rendered prompt text. */
  prompt: string;
  /** Model (also the prefix-cache namespace). */
  model: string;
  /** vLLM's `cache_salt`: a prefix-cache namespace within the model (see cache-salt.ts). */
  cacheSalt?: string;
  /** Tokens to generate. */
  outputTokens: number;
}

/** One AWS event-stream message, as smithy's `EventStreamCodec` encodes it. */
export type EventStreamMessage = Parameters<import("@smithy/core/event-streams").EventStreamCodec["encode"]>[0];

/** Encodes AWS event-stream frames (smithy's codec, loaded lazily so the fleet's other parts need no AWS package). */
export interface EventStreamEncoder {
  encode(message: EventStreamMessage): Uint8Array;
}

/**
 * Loads smithy's `EventStreamCodec` from the optional peer `@smithy/core` (a dependency of the
 * AWS SDK). `undefined` when it is not installed: the SageMaker streaming route then answers
 * with an error that says so, and everything else works.
 */
export async function loadEventStreamEncoder(): Promise<EventStreamEncoder | undefined> {
  try {
    const [{ EventStreamCodec }, { fromUtf8, toUtf8 }] = await Promise.all([
      import("@smithy/core/event-streams"),
      import("@smithy/core/serde"),
    ]);
    return new EventStreamCodec(toUtf8, fromUtf8);
  } catch {
    return undefined;
  }
}

/** The instance a handler serves (implemented by live.ts). */
export interface InstanceRuntime {
  /** Instance id, sent in `x-prefix-router-instance`. */
  readonly id: string;
  /** Served models; the first is the default. */
  readonly models: readonly string[];
  /** The engine's `maxModelLen`. */
  readonly maxModelLen: number;
  /** Output tokens when a request sets no limit. */
  readonly defaultMaxTokens: number;
  /** SageMaker production variants (first = default) and inference components → model. */
  readonly sagemaker: {
    readonly variants: readonly string[];
    readonly inferenceComponents: Readonly<Record<string, string>>;
    /** The AWS event-stream encoder, or `undefined` when the optional peer `@smithy/core` is missing. */
    readonly eventStream: EventStreamEncoder | undefined;
  };
  /** Current fault knobs. */
  currentFaults(): Readonly<FaultKnobs>;
  /** The instance's seeded random source (fault draws). */
  random(): number;
  /** Enqueues a generation now; callbacks run later. Throws FleetError for invalid requests. */
  submit(spec: GenerationSpec, callbacks: EngineCallbacks): { ticket: EngineTicket; arrivalMs: number };
  /** A fresh per-instance sequence number for response ids. */
  nextSequence(): number;
  /** Wall-clock ms for `created` timestamps. */
  wallClockMs(): number;
  /** Prometheus text of this instance. */
  metricsText(): string;
  /** SGLang's `/v1/loads?format=prometheus` text, when the instance speaks SGLang's names. */
  loadsText?(): string | undefined;
}

/** Reads the whole body; rejects past {@link MAX_BODY_BYTES}. */
export function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error(`request body larger than ${MAX_BODY_BYTES} bytes`));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/** Parses JSON (escaped keys read right on every runtime), returning `undefined` (not throwing) on malformed input. */
export function parseJson(buf: Buffer): unknown {
  try {
    return parseJsonText(buf.toString("utf8"));
  } catch {
    return undefined;
  }
}

/** Writes a complete JSON response. */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** Answers 500 for a bug in a handler, or drops the connection if the response had started. */
export function internalError(res: ServerResponse, err: unknown): void {
  if (res.headersSent) res.destroy();
  else sendJson(res, 500, { error: { message: `Emulator error: ${String(err)}`, type: "InternalServerError", param: null, code: 500 } });
}

/** The headers that say which instance served a response and what it cost. */
export function servedHeaders(
  rt: Pick<InstanceRuntime, "id">,
  info?: { promptTokens: number; cachedTokens: number; ttftMs: number; queueMs: number },
): Record<string, string> {
  const h: Record<string, string> = { "x-prefix-router-instance": rt.id };
  if (info) {
    h["x-prefix-router-prompt-tokens"] = String(info.promptTokens);
    h["x-prefix-router-cached-tokens"] = String(info.cachedTokens);
    h["x-prefix-router-ttft-ms"] = info.ttftMs.toFixed(3);
    h["x-prefix-router-queue-ms"] = info.queueMs.toFixed(3);
  }
  return h;
}

/** Usage in OpenAI's shape with vLLM's `prompt_tokens_details.cached_tokens`. */
export function usageOf(r: { promptTokens: number; cachedTokens: number; outputTokens: number }): Record<string, unknown> {
  return {
    prompt_tokens: r.promptTokens,
    total_tokens: r.promptTokens + r.outputTokens,
    completion_tokens: r.outputTokens,
    prompt_tokens_details: { cached_tokens: r.cachedTokens },
  };
}

/** First-token information passed to {@link GenerationHandlers.onFirstToken}. */
export interface FirstTokenInfo {
  promptTokens: number;
  cachedTokens: number;
  ttftMs: number;
  queueMs: number;
}

/** Protocol-specific writers called by {@link runGeneration}. */
export interface GenerationHandlers {
  /** Streaming: the first token exists (write the status and headers now). */
  onFirstToken?(info: FirstTokenInfo): void;
  /** Streaming: token `index` (0-based) was generated; `last` on the final one. */
  onToken?(index: number, last: boolean): void;
  /** The generation finished normally. */
  onDone(result: VirtualResult): void;
  /** Streaming: the `streamErrorRate` fault fired; write an in-band error and end. */
  onStreamError?(generated: number): void;
}

/**
 * Submits a generation and calls `h` as the engine produces tokens. Streaming responses get
 * the `resetStreamRate` and `streamErrorRate` faults half-way through; a client that goes away
 * aborts the request in the engine (as vLLM does).
 */
export function runGeneration(
  rt: InstanceRuntime,
  res: ServerResponse,
  spec: GenerationSpec,
  stream: boolean,
  h: GenerationHandlers,
): void {
  const faults = rt.currentFaults();
  const half = Math.ceil(spec.outputTokens / 2);
  const resetAt = stream && faults.resetStreamRate > 0 && rt.random() < faults.resetStreamRate ? half : 0;
  const errorAt = stream && faults.streamErrorRate > 0 && rt.random() < faults.streamErrorRate ? half : 0;
  const promptTokens = countTokens(spec.prompt);
  let finished = false;
  let cached = 0;
  let queued = 0;
  const callbacks: EngineCallbacks = {
    onAdmit(_t, c, q) {
      cached = c;
      queued = q;
    },
    onDone(r) {
      if (finished) return;
      finished = true;
      h.onDone(r);
    },
  };
  if (stream) {
    callbacks.onToken = (t, g) => {
      if (finished) return;
      if (g === 1) h.onFirstToken?.({ promptTokens, cachedTokens: cached, ttftMs: t - started.arrivalMs, queueMs: queued });
      h.onToken?.(g - 1, g === spec.outputTokens);
      if (g === spec.outputTokens) return;
      if (g === resetAt) {
        finished = true;
        started.ticket.cancel();
        // Destroy once what was written is flushed, so the client sees part of the stream.
        const socket = res.socket;
        socket?.write(new Uint8Array(0), () => socket.destroy());
      } else if (g === errorAt) {
        finished = true;
        started.ticket.cancel();
        h.onStreamError?.(g);
      }
    };
  }
  const started = rt.submit(spec, callbacks);
  res.on("close", () => {
    if (!finished) {
      finished = true;
      started.ticket.cancel();
    }
  });
}
