/**
 * The tiny llama model's tokenizer as Hugging Face files, for whoever tokenizes requests the way
 * the engine does (`@huggingface/tokenizers`, `transformers`, a router's own tokenizer):
 *
 * - `tokenizer.json`: a BPE model with the GGUF's vocabulary and merges (bpe.ts), no normalizer,
 *   the pre-tokenizer `Sequence[Split(Qwen2's regex, Isolated), ByteLevel(use_regex: false)]`,
 *   the control tokens as special added tokens, the `ByteLevel` decoder, no post-processor (no
 *   token is added). llama.cpp's tokenizer and this file give the same ids for any text.
 * - `tokenizer_config.json`: the special tokens and a Jinja `chat_template` that renders a chat
 *   request into exactly the text the llama fleet's server renders (template.ts: Llama 3.1's
 *   headers, content parts joined, tools and tool calls as JSON with sorted keys and no spaces).
 *
 * {@link writeTinyLlamaTokenizer} writes both into a folder; `startLlamaFleet` writes them beside
 * the model and returns the folder as `tokenizerDir`.
 */

import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { QWEN2_PRETOKENIZER_REGEX, TINY_LLAMA_CONTROL_TOKENS, tinyLlamaTokenizer } from "./bpe.js";

/**
 * The chat template of the llama fleet (template.ts), in Jinja: `bos_token`, an optional tools
 * header, each message as `<|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>`
 * (`tool` as `ipython`; text parts joined, other parts `<|{type}|>`; tool calls appended as JSON,
 * one a line), then the assistant's header. JSON is `tojson(separators=(",", ":"), sort_keys=true)`,
 * as template.ts's sorted-key JSON (keys compared alike when they are ASCII of one case).
 */
export const TINY_LLAMA_CHAT_TEMPLATE =
  "{{- bos_token }}" +
  "{%- if tools is defined and tools is not none and tools | length > 0 %}" +
  "{{- '<|start_header_id|>tools<|end_header_id|>\\n\\n' }}" +
  "{%- for tool in tools %}{%- if not loop.first %}{{- '\\n' }}{%- endif %}{{- tool | tojson(separators=(',', ':'), sort_keys=true) }}{%- endfor %}" +
  "{{- '<|eot_id|>' }}" +
  "{%- endif %}" +
  "{%- for message in messages %}" +
  "{%- set ns = namespace(content='') %}" +
  "{%- if message.content is string %}{%- set ns.content = message.content %}" +
  "{%- elif message.content is not none and message.content is defined %}" +
  "{%- for part in message.content %}" +
  "{%- if part is string %}{%- set ns.content = ns.content + part %}" +
  "{%- elif part.type == 'text' %}{%- set ns.content = ns.content + part.text %}" +
  "{%- else %}{%- set ns.content = ns.content + '<|' + part.type + '|>' %}{%- endif %}" +
  "{%- endfor %}" +
  "{%- endif %}" +
  "{%- if message.tool_calls is defined and message.tool_calls is not none and message.tool_calls | length > 0 %}" +
  "{%- for call in message.tool_calls %}" +
  "{%- if ns.content | length > 0 %}{%- set ns.content = ns.content + '\\n' %}{%- endif %}" +
  "{%- set ns.content = ns.content + (call | tojson(separators=(',', ':'), sort_keys=true)) %}" +
  "{%- endfor %}" +
  "{%- endif %}" +
  "{{- '<|start_header_id|>' + ('ipython' if message.role == 'tool' else message.role) + '<|end_header_id|>\\n\\n' + ns.content + '<|eot_id|>' }}" +
  "{%- endfor %}" +
  "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}";

/** The tiny model's `tokenizer.json` (see the file header). */
export function tinyLlamaTokenizerJson(): Record<string, unknown> {
  const { model } = tinyLlamaTokenizer();
  const control = new Set<string>(TINY_LLAMA_CONTROL_TOKENS);
  const vocab: Record<string, number> = {};
  model.tokens.forEach((t, id) => {
    if (!control.has(t) || id >= 256 + TINY_LLAMA_CONTROL_TOKENS.length) vocab[t] = id;
  });
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: TINY_LLAMA_CONTROL_TOKENS.map((content, i) => ({
      id: 256 + i,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: null,
    pre_tokenizer: {
      type: "Sequence",
      pretokenizers: [
        { type: "Split", pattern: { Regex: QWEN2_PRETOKENIZER_REGEX }, behavior: "Isolated", invert: false },
        { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false },
      ],
    },
    post_processor: null,
    decoder: { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false },
    model: {
      type: "BPE",
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: model.merges.map(([a, b]) => [a, b]),
    },
  };
}

/** The tiny model's `tokenizer_config.json`: special tokens and {@link TINY_LLAMA_CHAT_TEMPLATE}. */
export function tinyLlamaTokenizerConfig(): Record<string, unknown> {
  return {
    tokenizer_class: "PreTrainedTokenizerFast",
    bos_token: "<|begin_of_text|>",
    eos_token: "<|eot_id|>",
    add_bos_token: false,
    add_eos_token: false,
    clean_up_tokenization_spaces: false,
    model_max_length: 131072,
    added_tokens_decoder: Object.fromEntries(
      TINY_LLAMA_CONTROL_TOKENS.map((content, i) => [String(256 + i), { content, lstrip: false, normalized: false, rstrip: false, single_word: false, special: true }]),
    ),
    chat_template: TINY_LLAMA_CHAT_TEMPLATE,
  };
}

/** The two files' contents, as written (JSON, two-space indent, a final newline). */
export function tinyLlamaTokenizerFiles(): { "tokenizer.json": string; "tokenizer_config.json": string } {
  return {
    "tokenizer.json": `${JSON.stringify(tinyLlamaTokenizerJson(), null, 2)}\n`,
    "tokenizer_config.json": `${JSON.stringify(tinyLlamaTokenizerConfig(), null, 2)}\n`,
  };
}

/**
 * Writes `tokenizer.json` and `tokenizer_config.json` into `dir` (created if needed).
 * @example
 * await writeTinyLlamaTokenizer("tiny-llama-tokenizer");
 */
export async function writeTinyLlamaTokenizer(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const [name, text] of Object.entries(tinyLlamaTokenizerFiles())) await writeFile(join(dir, name), text);
}
