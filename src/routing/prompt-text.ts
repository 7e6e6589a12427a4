/**
 * The prompt text of an OpenAI-style body (text mode's routing input before truncation): what a
 * chat template renders, in its order, with structure markers that keep different message
 * structures apart. Rendered into a collector (`prompt-collector.ts`) that keeps the text, writes
 * it as UTF-16LE, or only counts it.
 */
import { canonicalize, parseJson } from "./canonical-json.js";
import { type Collector, TextCollector, Utf16Collector } from "./prompt-collector.js";
import { RouterError } from "../errors.js";
import type { PrefixWriter } from "./prefix-writer.js";

/**
 * Structure markers. Each is U+0000 followed by one ASCII letter. Content has every U+0000
 * doubled, so a single U+0000 followed by a letter can only be a marker: two bodies with
 * different message structure can never produce the same text.
 */
const M = {
  tools: "\u0000T",
  instructions: "\u0000S",
  message: "\u0000m",
  name: "\u0000n",
  content: "\u0000c",
  toolCalls: "\u0000F",
  toolCallId: "\u0000I",
  prompt: "\u0000p",
  input: "\u0000i",
  text: "\u0000t",
  image: "\u0000g",
  audio: "\u0000a",
  file: "\u0000f",
  other: "\u0000o",
} as const;

/**
 * The prompt text of an OpenAI-style body, in rendering order, with structure markers. Stops
 * once at least `budget` UTF-16 units are collected (the caller keeps a prefix of it).
 *
 * - `tools`: marker + canonical JSON of the array. First in chat and completions bodies (chat
 *   templates render tools before the messages); last in Responses API bodies (no `messages`,
 *   no `prompt`), which read `instructions`, then `input` items, then `tools`: message text
 *   first, as SageMaker's OpenAI-compatible routing reads it.
 * - `instructions` (responses): marker + the text.
 * - `messages` (chat) and `input` items with a `role` (responses): per message, a marker, the
 *   role, optionally a name marker and the name, then a content marker and the content. String
 *   content counts as one text part (chat templates render `"hi"` and
 *   `[{ type: "text", text: "hi" }]` alike); array content part by part: text parts (`text`, `input_text`, `output_text`,
 *   `refusal`) by their text, images by their URL (`image_url.url` or `image_url`), audio by its
 *   data, files by `file_id`, else `filename` + `file_data`; any other part by its canonical JSON.
 *   Assistant `tool_calls` and a tool message's `tool_call_id` follow as canonical JSON / text.
 * - `prompt` (completions) and `input` (embeddings, responses): a string as is; an array of
 *   strings one by one; token arrays as canonical JSON.
 * @internal
 */
export function promptText(body: unknown, budget = Number.POSITIVE_INFINITY): string {
  const out = new TextCollector(budget);
  renderPrompt(body, out);
  return out.text();
}

/**
 * @internal Writes the text-mode routing input of `body` — the first `maxPoints` code points of its
 * prompt text — into `out` (begun with a limit of at least 4 × `maxPoints` bytes) as UTF-16LE, the
 * pieces straight from the body: equal to the UTF-16LE bytes of `textPrefix(body, maxPoints)`.
 */
export function writeTextInput(body: unknown, maxPoints: number, out: PrefixWriter): void {
  renderPrompt(body, new Utf16Collector(maxPoints, out));
}

/** @internal The walk of {@link promptText}: the body's prompt pieces, in rendering order, into `out` until it is full. */
export function renderPrompt(body: unknown, out: Collector): void {
  const obj = asObject(body);
  // A Responses API body (no `messages`, no `prompt`): instructions, input items, then tools.
  if (obj.messages === undefined && obj.prompt === undefined) {
    const instructions = typeof obj.instructions === "string";
    if (instructions) out.field(M.instructions, obj.instructions as string);
    if (Array.isArray(obj.input)) pushItems(out, obj.input, instructions);
    else {
      if (instructions) out.markLead();
      if (obj.input !== undefined) pushPromptLike(out, M.input, obj.input);
    }
    if (obj.tools !== undefined) out.json(M.tools, obj.tools);
    return;
  }
  if (obj.tools !== undefined) out.json(M.tools, obj.tools);
  if (typeof obj.instructions === "string") out.field(M.instructions, obj.instructions);
  if (Array.isArray(obj.messages)) {
    let leading = true;
    let system = false;
    const single = oneAfterLead(obj.messages);
    for (const message of obj.messages) {
      if (out.full) break;
      if (leading && !isSystem(message)) {
        leading = false;
        if (system && single) out.markLead();
      }
      system ||= leading;
      pushMessage(out, message);
    }
  }
  if (obj.prompt !== undefined) pushPromptLike(out, M.prompt, obj.prompt);
  if (obj.input !== undefined) pushPromptLike(out, M.input, obj.input);
}

function asObject(body: unknown): Record<string, unknown> {
  let value = body;
  if (typeof body === "string" || body instanceof Uint8Array) {
    value = parseJson(body);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new RouterError(
      "ERR_INVALID_BODY",
      `Text mode reads an OpenAI-style JSON object body (chat, completions, responses or embeddings), got ${
        value === null ? "null" : Array.isArray(value) ? "an array" : typeof value
      }`,
    );
  }
  return value as Record<string, unknown>;
}

function pushMessage(out: Collector, message: unknown): void {
  if (message === null || typeof message !== "object") {
    out.push(M.other, canonicalizeOrString(message));
    return;
  }
  const m = message as Record<string, unknown>;
  out.field(M.message, typeof m.role === "string" ? m.role : "");
  if (typeof m.name === "string") out.field(M.name, m.name);
  out.push(M.content);
  pushContent(out, m.content);
  if (m.tool_calls !== undefined) out.json(M.toolCalls, m.tool_calls);
  if (typeof m.tool_call_id === "string") out.field(M.toolCallId, m.tool_call_id);
}

function pushContent(out: Collector, content: unknown): void {
  if (typeof content === "string") {
    if (content.length > 0) out.field(M.text, content);
    return;
  }
  if (!Array.isArray(content)) {
    if (content !== undefined && content !== null) out.json(M.other, content);
    return;
  }
  for (const part of content) {
    if (out.full) return;
    pushPart(out, part);
  }
}

function pushPart(out: Collector, part: unknown): void {
  if (typeof part === "string") {
    out.field(M.text, part);
    return;
  }
  if (part === null || typeof part !== "object") {
    out.push(M.other, canonicalizeOrString(part));
    return;
  }
  const p = part as Record<string, unknown>;
  const text = typeof p.text === "string" ? p.text : typeof p.refusal === "string" ? p.refusal : undefined;
  if (text !== undefined) {
    out.field(M.text, text);
    return;
  }
  const image = p.image_url;
  if (typeof image === "string") {
    out.field(M.image, image);
    return;
  }
  if (image !== null && typeof image === "object" && typeof (image as { url?: unknown }).url === "string") {
    out.field(M.image, (image as { url: string }).url);
    return;
  }
  const audio = p.input_audio;
  if (audio !== null && typeof audio === "object" && typeof (audio as { data?: unknown }).data === "string") {
    out.field(M.audio, (audio as { data: string }).data);
    return;
  }
  const file = (p.file ?? p) as Record<string, unknown>;
  if (typeof file.file_id === "string") {
    out.field(M.file, file.file_id);
    return;
  }
  if (typeof file.file_data === "string") {
    out.field(M.file, typeof file.filename === "string" ? file.filename : "");
    out.field(M.file, file.file_data);
    return;
  }
  out.json(M.other, part);
}

/**
 * Exactly one message follows the leading system messages: a single-turn request (a question
 * after a system prompt). A conversation's later turns keep their own prefix as key, so a
 * conversation moves at most once, after its first turn, when it has little history to lose.
 */
function oneAfterLead(messages: readonly unknown[]): boolean {
  let i = 0;
  while (i < messages.length && isSystem(messages[i])) i++;
  return messages.length - i === 1;
}

/** A system or developer message: what a leading system part is made of. */
function isSystem(message: unknown): boolean {
  if (message === null || typeof message !== "object") return false;
  const role = (message as { role?: unknown }).role;
  return role === "system" || role === "developer";
}

/** Responses API input items, marking where the leading system part (instructions, system items) ends. */
function pushItems(out: Collector, items: readonly unknown[], instructions: boolean): void {
  let system = instructions;
  let leading = true;
  const single = oneAfterLead(items);
  for (const item of items) {
    if (out.full) return;
    if (leading && !isSystem(item)) {
      leading = false;
      if (system && single) out.markLead();
    }
    system ||= leading;
    pushPromptItem(out, M.input, item);
  }
}

function pushPromptItem(out: Collector, marker: string, item: unknown): void {
  if (typeof item === "string") out.field(marker, item);
  else if (item !== null && typeof item === "object" && !Array.isArray(item) && "role" in item) pushMessage(out, item);
  else if (item !== null && typeof item === "object" && !Array.isArray(item) && "type" in item) pushPart(out, item);
  else out.json(marker, item);
}

function pushPromptLike(out: Collector, marker: string, value: unknown): void {
  if (typeof value === "string") {
    out.field(marker, value);
    return;
  }
  if (Array.isArray(value)) {
    for (const item of value) {
      if (out.full) return;
      pushPromptItem(out, marker, item);
    }
    return;
  }
  out.push(marker, canonicalizeOrString(value));
}

function canonicalizeOrString(value: unknown): string {
  return value === undefined ? "" : canonicalize(value);
}

