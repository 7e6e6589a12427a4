/**
 * The fixed prompt template of the emulated engine: request body → the text it tokenizes.
 *
 * A Llama 3.1-style chat template, as vLLM applies it with `add_generation_prompt`:
 *
 *   <|begin_of_text|>
 *   <|start_header_id|>tools<|end_header_id|>\n\n{tool 1}\n{tool 2}...<|eot_id|>   (only with tools)
 *   <|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>            (each message)
 *   <|start_header_id|>assistant<|end_header_id|>\n\n                            (generation prompt)
 *
 * - Tools come first, so a tool list shared by every request is part of the shared prefix.
 *   Each tool, and each assistant `tool_calls` entry, is JSON with keys sorted (what Jinja's
 *   `tojson` does), so key order in the request does not change the prompt.
 * - `content` is a string, `null`, or an array of parts: text parts are concatenated, any other
 *   part (image, audio, file) renders as `<|{type}|>`. The `tool` role renders as `ipython`
 *   (Llama 3.1's name for tool output); every other role is kept as sent.
 * - Completions `prompt` and SageMaker TGI/LMI `inputs` render as `<|begin_of_text|>` + text.
 */

import stableStringify from "fast-json-stable-stringify";
import { FleetError } from "./errors.js";

const BOS = "<|begin_of_text|>";
const EOT = "<|eot_id|>";
const header = (role: string): string => `<|start_header_id|>${role}<|end_header_id|>\n\n`;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function renderContent(content: unknown, where: string): string {
  if (content === null || content === undefined) return "";
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    let out = "";
    for (const part of content) {
      if (typeof part === "string") out += part;
      else if (isRecord(part) && part.type === "text" && typeof part.text === "string") out += part.text;
      else if (isRecord(part) && typeof part.type === "string") out += `<|${part.type}|>`;
      else throw new FleetError("INVALID_REQUEST", `${where}: a content part must be an object with a \`type\``);
    }
    return out;
  }
  throw new FleetError("INVALID_REQUEST", `${where}: \`content\` must be a string, an array of parts or null`);
}

function renderChat(messages: unknown, tools: unknown): string {
  if (!Array.isArray(messages) || messages.length === 0) {
    throw new FleetError("INVALID_REQUEST", "`messages` must be a non-empty array");
  }
  let out = BOS;
  if (tools !== undefined && tools !== null) {
    if (!Array.isArray(tools)) throw new FleetError("INVALID_REQUEST", "`tools` must be an array");
    if (tools.length > 0) out += header("tools") + tools.map((t) => stableStringify(t)).join("\n") + EOT;
  }
  messages.forEach((m, i) => {
    if (!isRecord(m) || typeof m.role !== "string") {
      throw new FleetError("INVALID_REQUEST", `messages[${i}] must be an object with a string \`role\``);
    }
    let content = renderContent(m.content, `messages[${i}]`);
    if (Array.isArray(m.tool_calls) && m.tool_calls.length > 0) {
      content += (content ? "\n" : "") + m.tool_calls.map((c) => stableStringify(c)).join("\n");
    }
    out += header(m.role === "tool" ? "ipython" : m.role) + content + EOT;
  });
  return out + header("assistant");
}

function renderText(value: unknown, field: string): string {
  if (Array.isArray(value) && value.length === 1 && typeof value[0] === "string") value = value[0];
  if (typeof value !== "string") {
    throw new FleetError("INVALID_REQUEST", `\`${field}\` must be a string (the emulator serves one prompt per request)`);
  }
  if (value.length === 0) throw new FleetError("INVALID_REQUEST", `\`${field}\` must not be empty`);
  return BOS + value;
}

/**
 * Renders a request body into the prompt text the engine tokenizes (see the file header):
 * an OpenAI chat body (`messages`, optional `tools`; also the SageMaker messages style), an
 * OpenAI completions body (`prompt`), or a SageMaker TGI/LMI body (`inputs`).
 * @throws FleetError `INVALID_REQUEST` for any other shape
 * @example
 * renderPrompt({ messages: [{ role: "user", content: "Hi" }] });
 * // "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
 */
export function renderPrompt(body: unknown): string {
  if (!isRecord(body)) throw new FleetError("INVALID_REQUEST", "The request body must be a JSON object");
  if ("messages" in body) return renderChat(body.messages, body.tools);
  if ("prompt" in body) return renderText(body.prompt, "prompt");
  if ("inputs" in body) return renderText(body.inputs, "inputs");
  throw new FleetError("INVALID_REQUEST", "The request body needs `messages`, `prompt` or `inputs`");
}
