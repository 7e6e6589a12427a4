/**
 * What one line of a request log says: a request body (and when it arrived, its tenant, how long
 * its answer was), or a Mooncake trace record. Accepted lines, one JSON object each:
 *
 * - a body as the application sends it: OpenAI chat (`messages`, `tools`), Responses
 *   (`input`, `instructions`, `tools`), completions (`prompt`), SageMaker TGI/LMI (`inputs`);
 * - a wrapper around one: `{ "body": …, "timestamp"?, "tenant"?, "output_tokens"?, "response"? }`
 *   (the OpenAI Batch API's `{ custom_id, method, url, body }` is one), or a SageMaker
 *   `InvokeEndpoint` input `{ "Body": "<JSON text>", "PrefixAwareId"?, … }`;
 * - a Mooncake record `{ timestamp, input_length, output_length, hash_ids }`.
 *
 * Every body becomes the chat body the emulated engine renders and the router reads: Responses
 * `instructions` a system message and `input` items messages, a `prompt` or `inputs` string one
 * user message, content parts their text. Timestamps: a number ≥ 10¹² is epoch milliseconds,
 * ≥ 10⁹ epoch seconds, smaller a millisecond offset; a string is an ISO 8601 date. The tenant is
 * the wrapper's `tenant`, else `prompt_cache_key` or `PrefixAwareId`. The answer length is
 * `output_tokens` or the logged response's usage, else the body's `max_tokens` (or
 * `max_completion_tokens`, `max_output_tokens`, `parameters.max_new_tokens`), else a default.
 *
 * A line is refused (`ERR_LOG_FORMAT`, naming it) when it is longer than the reader's
 * `maxLineBytes`, is no JSON, or nests arrays and objects deeper than {@link MAX_LOG_DEPTH}
 * levels — checked right after parsing, without recursion, so no later step can run out of stack.
 */
import stableStringify from "fast-json-stable-stringify";
import { BenchError, isBenchError } from "../common/errors.js";
import { type TraceRecord, MOONCAKE_BLOCK_TOKENS, traceRecordOf } from "../bench/trace.js";
import type { ChatBody, ChatMessage, ChatTool } from "../bench/workload.js";
import type { LogLine } from "./lines.js";
import { parseJson } from "prefix-router";

/** One request of a log, as the advisor reads it. */
export interface LogRequest {
  readonly kind: "request";
  /** 1-based line of the log. */
  readonly line: number;
  /** Arrival in epoch or offset milliseconds, when the line says. */
  readonly timestampMs: number | undefined;
  /** The chat body the engine renders and the router reads. */
  readonly body: ChatBody;
  readonly tenant: string | undefined;
  /** Tokens of the answer. */
  readonly outputTokens: number;
  /** How the body spelled objects whose key order canonical JSON ignores (compared between requests). */
  readonly keyOrders: readonly KeyOrder[];
}

/** An object of a body as sent and in canonical form: two requests with equal `canonical` and different `sent` differ only in key order. */
export interface KeyOrder {
  /** Where: "the body", "tools", "messages". */
  readonly field: string;
  readonly canonical: string;
  readonly sent: string;
}

/** One record of a Mooncake trace. */
export interface LogTrace {
  readonly kind: "trace";
  readonly line: number;
  readonly record: TraceRecord;
}

/** A log line's meaning. */
export type LogEntry = LogRequest | LogTrace;

/** Answer length when a line says nothing about it, tokens. */
export const DEFAULT_OUTPUT_TOKENS = 200;

/** Deepest nesting a log line may have (a top-level object is level 1). */
export const MAX_LOG_DEPTH = 1024;

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Reads one log line; `undefined` for a blank line.
 * @throws {BenchError} `ERR_LOG_FORMAT` naming the source and line
 */
export function readEntry(line: LogLine, source: string, outputTokens = DEFAULT_OUTPUT_TOKENS): LogEntry | undefined {
  const fail = (why: string, cause?: unknown): never => {
    const text = line.text.length > 120 ? `${line.text.slice(0, 117)}...` : line.text;
    throw new BenchError("ERR_LOG_FORMAT", `${source}:${line.line}: ${why}${text === "" ? "" : ` (line: ${text})`}`, { line: line.line, cause });
  };
  if (line.tooLong !== undefined) {
    const { bytes, maxLineBytes } = line.tooLong;
    return fail(`the line is ${int(bytes)} bytes, longer than the ${int(maxLineBytes)} a line may have (\`maxLineBytes\`); it was not read`);
  }
  let value = line.value;
  if (value === undefined) {
    if (line.text.trim() === "") return undefined;
    try {
      value = parseJson(line.text);
    } catch (e) {
      fail("not valid JSON", e);
    }
  }
  if (deeperThan(value, MAX_LOG_DEPTH)) return fail(`nested deeper than ${int(MAX_LOG_DEPTH)} levels`);
  if (!isObject(value)) return fail("expected a JSON object");
  if ("hash_ids" in value) return { kind: "trace", line: line.line, record: traceRecordOf(value, MOONCAKE_BLOCK_TOKENS, fail) };
  let body: unknown = value;
  let wrapper: Json = {};
  if ("body" in value || "Body" in value) {
    wrapper = value;
    body = value["body"] ?? value["Body"];
    if (typeof body === "string") {
      try {
        body = parseJson(body);
      } catch (e) {
        fail("the `body` string is not JSON", e);
      }
      if (deeperThan(body, MAX_LOG_DEPTH)) return fail(`the \`body\` string is nested deeper than ${int(MAX_LOG_DEPTH)} levels`);
    }
  }
  if (!isObject(body)) return fail("expected a request body (an object with `messages`, `input`, `prompt` or `inputs`)");
  const chat = chatBodyOf(body, fail);
  // An id the router would refuse (not 1–64 printable ASCII) is read as no tenant.
  const named = firstString(wrapper["tenant"], body["prompt_cache_key"], wrapper["PrefixAwareId"]);
  const tenant = named !== undefined && /^[\x20-\x7e]{1,64}$/.test(named) ? named : undefined;
  return {
    kind: "request",
    line: line.line,
    timestampMs: timestampOf(wrapper["timestamp"] ?? wrapper["ts"] ?? body["timestamp"], fail),
    body: { ...chat, max_tokens: answerTokens(wrapper, body, outputTokens) },
    tenant,
    outputTokens: answerTokens(wrapper, body, outputTokens),
    keyOrders: keyOrdersOf(body),
  };
}

const int = (v: number) => v.toLocaleString("en-US");

/**
 * Whether `value` nests arrays and objects deeper than `max` levels: a walk with its own stack,
 * linear in the value, that stops at the first container past `max`.
 */
export function deeperThan(value: unknown, max: number): boolean {
  if (value === null || typeof value !== "object") return false;
  const stack: unknown[] = [value];
  const depths: number[] = [1];
  while (stack.length > 0) {
    const node = stack.pop() as object;
    const depth = depths.pop() as number;
    if (depth > max) return true;
    const children = Array.isArray(node) ? node : Object.values(node);
    for (const child of children) {
      if (child !== null && typeof child === "object") {
        stack.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

/** What a bad log line does: stop the run, or be left out and counted. */
export type BadLines = "fail" | "skip";

/** Bad lines stop the run. */
export const DEFAULT_BAD_LINES: BadLines = "fail";

/**
 * {@link readEntry}, where a bad line (`ERR_LOG_FORMAT`) is `undefined` under `"skip"`, after
 * `onSkip` has seen its error.
 */
export function readEntryOr(
  badLines: BadLines,
  line: LogLine,
  source: string,
  outputTokens: number,
  onSkip?: (error: BenchError) => void,
): LogEntry | undefined {
  try {
    return readEntry(line, source, outputTokens);
  } catch (e) {
    if (badLines !== "skip" || !isBenchError(e) || e.code !== "ERR_LOG_FORMAT") throw e;
    onSkip?.(e);
    return undefined;
  }
}

function keyOrdersOf(body: Json): KeyOrder[] {
  const keys = (o: Json) => Object.keys(o).join(",");
  const sorted = (o: Json) => Object.keys(o).sort().join(",");
  const out: KeyOrder[] = [{ field: "the body", canonical: sorted(body), sent: keys(body) }];
  if (Array.isArray(body["tools"])) for (const t of body["tools"]) out.push({ field: "tools", canonical: stableStringify(t), sent: JSON.stringify(t) });
  const messages = Array.isArray(body["messages"]) ? body["messages"] : Array.isArray(body["input"]) ? body["input"] : [];
  for (const m of messages) if (isObject(m)) out.push({ field: "messages", canonical: sorted(m), sent: keys(m) });
  return out;
}

function firstString(...values: unknown[]): string | undefined {
  for (const v of values) if (typeof v === "string" && v.length > 0) return v;
  return undefined;
}

function timestampOf(v: unknown, fail: (why: string) => never): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === "number" && Number.isFinite(v) && v >= 0) return v >= 1e12 ? v : v >= 1e9 ? v * 1000 : v;
  if (typeof v === "string") {
    const ms = Date.parse(v);
    if (Number.isFinite(ms)) return ms;
  }
  return fail(`\`timestamp\` must be milliseconds, epoch seconds or an ISO 8601 date, got ${JSON.stringify(v)}`);
}

function answerTokens(wrapper: Json, body: Json, fallback: number): number {
  const usage = isObject(wrapper["response"]) && isObject(wrapper["response"]["usage"]) ? wrapper["response"]["usage"] : {};
  const params = isObject(body["parameters"]) ? body["parameters"] : {};
  for (const v of [
    wrapper["output_tokens"],
    usage["completion_tokens"],
    usage["output_tokens"],
    body["max_completion_tokens"],
    body["max_tokens"],
    body["max_output_tokens"],
    params["max_new_tokens"],
  ]) {
    if (typeof v === "number" && Number.isInteger(v) && v >= 1) return v;
  }
  return fallback;
}

/** The chat body a request body stands for (see the file header). */
function chatBodyOf(body: Json, fail: (why: string) => never): Omit<ChatBody, "max_tokens"> {
  const model = typeof body["model"] === "string" ? body["model"] : "";
  const tools = Array.isArray(body["tools"]) ? body["tools"].map(chatTool) : undefined;
  const messages: ChatMessage[] = [];
  if (typeof body["instructions"] === "string") messages.push({ role: "system", content: body["instructions"] });
  if (Array.isArray(body["messages"])) {
    for (const m of body["messages"]) messages.push(chatMessage(m));
  } else if (typeof body["input"] === "string") {
    messages.push({ role: "user", content: body["input"] });
  } else if (Array.isArray(body["input"])) {
    for (const item of body["input"]) messages.push(responsesItem(item));
  } else {
    const text = body["prompt"] ?? body["inputs"];
    const prompt = Array.isArray(text) && text.length === 1 ? text[0] : text;
    if (typeof prompt !== "string") return fail("expected a request body with `messages`, `input`, `prompt` or `inputs`");
    messages.push({ role: "user", content: prompt });
  }
  if (messages.length === 0) return fail("the request has no messages");
  return tools === undefined || tools.length === 0 ? { model, messages } : { model, messages, tools };
}

/** Text of message content: a string, or parts (text parts concatenated, others as the engine's `<|type|>`). */
function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return content === null || content === undefined ? "" : JSON.stringify(content);
  let out = "";
  for (const part of content) {
    if (typeof part === "string") out += part;
    else if (isObject(part) && typeof part["text"] === "string") out += part["text"];
    else if (isObject(part) && typeof part["type"] === "string") out += `<|${part["type"]}|>`;
  }
  return out;
}

function chatMessage(m: unknown): ChatMessage {
  if (!isObject(m)) return { role: "user", content: contentText(m) };
  const role = m["role"] === "system" || m["role"] === "assistant" || m["role"] === "tool" ? m["role"] : m["role"] === "developer" ? "system" : "user";
  const calls = Array.isArray(m["tool_calls"]) && m["tool_calls"].length > 0 ? (m["tool_calls"] as ChatMessage["tool_calls"]) : undefined;
  return {
    role,
    content: contentText(m["content"]),
    ...(calls === undefined ? {} : { tool_calls: calls }),
    ...(typeof m["tool_call_id"] === "string" ? { tool_call_id: m["tool_call_id"] } : {}),
  };
}

/** A Responses API input item as a chat message. */
function responsesItem(item: unknown): ChatMessage {
  if (isObject(item) && item["type"] === "function_call") {
    const call = { id: String(item["call_id"] ?? ""), type: "function" as const, function: { name: String(item["name"] ?? ""), arguments: String(item["arguments"] ?? "") } };
    return { role: "assistant", content: "", tool_calls: [call] };
  }
  if (isObject(item) && item["type"] === "function_call_output") {
    return { role: "tool", content: contentText(item["output"]), tool_call_id: String(item["call_id"] ?? "") };
  }
  return chatMessage(item);
}

/** A chat tool from a chat tool (kept) or a Responses function tool (`{ type, name, description, parameters }`). */
function chatTool(t: unknown): ChatTool {
  if (isObject(t) && isObject(t["function"])) return t as unknown as ChatTool;
  const o = isObject(t) ? t : {};
  return {
    type: "function",
    function: {
      name: String(o["name"] ?? ""),
      description: String(o["description"] ?? ""),
      parameters: isObject(o["parameters"]) ? o["parameters"] : {},
    },
  };
}
