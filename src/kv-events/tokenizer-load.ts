/**
 * Loading a tokenizer (`precisePrefix.tokenizer`): the model's files, an engine's `/tokenize`, or
 * the user's own functions; and the start-up checks (segments against whole prompts, this
 * router's tokens against the engine's).
 */
import { RouterError } from "../errors.js";
import { importPeer } from "../internal/optional-peer.js";
import type { Logger } from "../logger.js";
import { PromptTokenizer } from "./prompt-tokenizer.js";
import { EndpointBackend, InThreadBackend, WorkerBackend } from "./tokenizer-backends.js";
import type { ChatTemplate, HfTokenizer, PromptTokenizerSettings, TokenizerBackend } from "./tokenizer-types.js";

const EMPTY_TOKENS = new Uint32Array(0);

/**
 * Your own tokenizer (`precisePrefix.tokenizer: { render, encode }`): the prompt text the engine
 * tokenizes for a request body, and its tokens. Both are called synchronously inside the
 * router's read of each request (never off the event loop, never queued), so they must be cheap:
 * a few µs per kilo-character. In exchange every readable request routes precisely at once — a
 * simulation in virtual time that never yields to the event loop still does.
 *
 * @example
 * precisePrefix: {
 *   tokenizer: {
 *     render: (body) => myTemplate(body),        // undefined: not readable, routes approximately
 *     encode: (text) => myTokenizer.encode(text), // token ids, integers from 0 to 2^32 − 1
 *   },
 * }
 */
export interface OwnTokenizerSource {
  /** The prompt text the engine tokenizes for `body` (the chat template applied), or `undefined` when this body cannot be read (it then routes on the approximate strategy). A throw counts as `undefined`. */
  readonly render: (body: unknown) => string | undefined;
  /** The token ids of `text`, as the engine's tokenizer gives them (integers from 0 to 2^32 − 1). A throw, or an id out of range, routes that request approximately. */
  readonly encode: (text: string) => readonly number[];
}

/** Whether a tokenizer source is the user's own functions. */
export function isOwnTokenizer(source: TokenizerSource): source is OwnTokenizerSource {
  return typeof (source as Partial<OwnTokenizerSource>).encode === "function";
}

/**
 * The tokenizer of an {@link OwnTokenizerSource}, built synchronously: the prompt is one segment
 * (no added tokens are known to cut at), tokenized in the read and cached like any segment.
 */
export function ownTokenizer(source: OwnTokenizerSource, o: { readonly cacheTokens: number; readonly maxQueuedChars: number; readonly clock: { now(): number }; readonly logger: Logger }): LoadedTokenizer {
  const encode = (text: string): Uint32Array => {
    const ids = source.encode(text);
    if (!Array.isArray(ids) && !ArrayBuffer.isView(ids)) throw new TypeError(`\`precisePrefix.tokenizer.encode\` returned ${typeof ids}, not an array of token ids`);
    const out = new Uint32Array(ids.length);
    for (let k = 0; k < ids.length; k++) {
      const t = ids[k] as number;
      if (!Number.isInteger(t) || t < 0 || t > 0xffffffff) throw new RangeError(`\`precisePrefix.tokenizer.encode\` returned token id ${String(t)}, not an integer from 0 to 2^32 − 1`);
      out[k] = t;
    }
    return out;
  };
  const backend: TokenizerBackend = {
    encodeSync: encode,
    encode: async (texts) => texts.map(encode),
    close: async () => {},
  };
  const settings: PromptTokenizerSettings = {
    template: undefined,
    templateVars: {},
    addedTokens: [],
    lstripTokens: [],
    promptPrefix: [],
    promptSuffix: [],
    segmented: false,
    cacheTokens: o.cacheTokens,
    maxQueuedChars: o.maxQueuedChars,
    render: source.render,
  };
  return { tokenizer: new PromptTokenizer(settings, backend, o.clock, o.logger), encodeHere: (text) => Array.from(encode(text)) };
}

/** Where the tokenizer comes from (`precisePrefix.tokenizer`). */
export type TokenizerSource =
  | OwnTokenizerSource
  | {
      /** Path of the model's `tokenizer.json`, or its parsed content. */
      readonly tokenizerJson: string | object;
      /** Path of the model's `tokenizer_config.json` (its `chat_template`, special tokens), or its parsed content. */
      readonly tokenizerConfig: string | object;
      /** A chat template overriding the config's (vLLM's `--chat-template`). */
      readonly chatTemplate?: string | undefined;
    }
  | {
      /** Base URL of an engine whose `POST /tokenize` tokenizes prompt segments (vLLM, SGLang). */
      readonly endpoint: string;
      /** The chat template (the engine's), to render chat requests; without it chats route on the approximate strategy. */
      readonly chatTemplate?: string | undefined;
      /** Or the `tokenizer_config.json` holding it (path or content). */
      readonly tokenizerConfig?: string | object | undefined;
    };

async function readJson(what: string, source: string | object): Promise<Record<string, unknown>> {
  if (typeof source !== "string") return source as Record<string, unknown>;
  const { readFile } = await import("node:fs/promises");
  try {
    return JSON.parse(await readFile(source, "utf8")) as Record<string, unknown>;
  } catch (e) {
    throw new RouterError("ERR_TOKENIZER", `precise-prefix could not read ${what} from ${JSON.stringify(source)}: ${(e as Error).message}`, { cause: e });
  }
}

/** What {@link loadTokenizer} builds. */
export interface LoadedTokenizer {
  readonly tokenizer: PromptTokenizer;
  /** Tokenizes a text in this thread (the self-check, and tests); `undefined` for an endpoint. */
  readonly encodeHere: ((text: string, special: boolean) => number[]) | undefined;
}

/** Options of {@link loadTokenizer} beyond the source. */
export interface LoadTokenizerOptions {
  readonly model: string | undefined;
  readonly cacheTokens: number;
  readonly maxQueuedChars: number;
  /** Use a worker thread for files (false: tokenize in this thread, one batch per macrotask). */
  readonly worker: boolean;
  readonly timeoutMs: number;
  readonly clock: { now(): number };
  readonly logger: Logger;
}

/**
 * Loads the tokenizer files (or prepares the endpoint), imports the optional peers, compiles the
 * chat template and runs the segment self-check.
 * @throws RouterError `ERR_MISSING_PEER` without `@huggingface/tokenizers` / `@huggingface/jinja`; `ERR_TOKENIZER` for unreadable files
 */
export async function loadTokenizer(source: TokenizerSource, o: LoadTokenizerOptions): Promise<LoadedTokenizer> {
  if (isOwnTokenizer(source)) return ownTokenizer(source, o);
  const configSource = "tokenizerConfig" in source ? source.tokenizerConfig : undefined;
  const config = configSource === undefined ? {} : await readJson("`precisePrefix.tokenizer.tokenizerConfig`", configSource);
  const templateText = source.chatTemplate ?? (typeof config.chat_template === "string" ? config.chat_template : undefined);
  let template: ChatTemplate | undefined;
  if (templateText !== undefined) {
    const jinja = await importPeer("@huggingface/jinja", "The precise-prefix strategy's chat templates", () => import("@huggingface/jinja"));
    try {
      template = new jinja.Template(templateText);
    } catch (e) {
      throw new RouterError("ERR_TOKENIZER", `precise-prefix could not compile the chat template: ${(e as Error).message}`, { cause: e });
    }
  }
  const tokenName = (t: unknown): string | undefined => (typeof t === "string" ? t : t !== null && typeof t === "object" && typeof (t as { content?: unknown }).content === "string" ? (t as { content: string }).content : undefined);
  const templateVars = { bos_token: tokenName(config.bos_token) ?? "", eos_token: tokenName(config.eos_token) ?? "", unk_token: tokenName(config.unk_token) ?? "", pad_token: tokenName(config.pad_token) ?? "" };

  if ("endpoint" in source) {
    const backend = new EndpointBackend(source.endpoint, o.model, o.timeoutMs);
    const added = Object.values((config.added_tokens_decoder ?? {}) as Record<string, { content?: string; lstrip?: boolean }>);
    const settings: PromptTokenizerSettings = {
      template,
      templateVars,
      addedTokens: added.map((t) => t.content ?? "").filter((s) => s.length > 0),
      lstripTokens: added.filter((t) => t.lstrip === true).map((t) => t.content ?? ""),
      promptPrefix: [],
      promptSuffix: [],
      segmented: true,
      cacheTokens: o.cacheTokens,
      maxQueuedChars: o.maxQueuedChars,
    };
    return { tokenizer: new PromptTokenizer(settings, backend, o.clock, o.logger), encodeHere: undefined };
  }

  const json = await readJson("`precisePrefix.tokenizer.tokenizerJson`", source.tokenizerJson);
  const hf = await importPeer("@huggingface/tokenizers", "The precise-prefix strategy's tokenizer", () => import("@huggingface/tokenizers"));
  let tok: HfTokenizer;
  try {
    tok = new hf.Tokenizer(json, config) as unknown as HfTokenizer;
  } catch (e) {
    throw new RouterError("ERR_TOKENIZER", `precise-prefix could not load tokenizer.json: ${(e as Error).message}`, { cause: e });
  }
  const added = ((json.added_tokens ?? []) as { content?: string; lstrip?: boolean }[]).filter((t) => typeof t.content === "string" && t.content.length > 0);
  const encodeHere = (text: string, special: boolean): number[] => tok.encode(text, { add_special_tokens: special }).ids;
  const [promptPrefix, promptSuffix] = specialAround(encodeHere);
  const base: PromptTokenizerSettings = {
    template,
    templateVars,
    addedTokens: added.map((t) => t.content as string),
    lstripTokens: added.filter((t) => t.lstrip === true).map((t) => t.content as string),
    promptPrefix,
    promptSuffix,
    segmented: true,
    cacheTokens: o.cacheTokens,
    maxQueuedChars: o.maxQueuedChars,
  };
  const segmented = selfCheck(base, encodeHere);
  if (!segmented) o.logger.warn("precise-prefix: this tokenizer does not tokenize a prompt cut at its special tokens like the whole prompt; each prompt is tokenized whole (no incremental tokenization)");
  const settings = { ...base, segmented };
  const encodeOne = (t: string): Uint32Array => Uint32Array.from(encodeHere(t, false));
  let backend: TokenizerBackend;
  if (o.worker) {
    const worker = new WorkerBackend(json, config, (texts) => texts.map(encodeOne));
    // Started now, not by the first prompts (a thread's start and the tokenizer's load: 0.1–0.3 s).
    if (!(await worker.started())) o.logger.warn("precise-prefix: the tokenizer's worker thread did not start; prompts are tokenized in this thread, one batch per macrotask");
    backend = worker;
  } else backend = new InThreadBackend(encodeOne);
  return { tokenizer: new PromptTokenizer(settings, backend, o.clock, o.logger), encodeHere };
}

/** Tokens the post-processor puts around a text (`add_special_tokens`): found by encoding a probe both ways. */
function specialAround(encode: (text: string, special: boolean) => number[]): [number[], number[]] {
  const probe = "probe text 0123";
  const bare = encode(probe, false);
  const full = encode(probe, true);
  for (let at = 0; at + bare.length <= full.length; at++) {
    if (bare.every((t, k) => full[at + k] === t)) return [full.slice(0, at), full.slice(at + bare.length)];
  }
  return [[], []];
}

/** Whether tokenizing the segments of probe conversations equals tokenizing them whole. */
function selfCheck(settings: PromptTokenizerSettings, encode: (text: string, special: boolean) => number[]): boolean {
  const t = new PromptTokenizer({ ...settings, segmented: true }, new InThreadBackend(() => EMPTY_TOKENS), { now: () => 0 }, { debug() {}, info() {}, warn() {}, error() {} });
  const probes = PROBE_CONVERSATIONS.map((messages) => t.render({ messages })?.text).filter((s): s is string => s !== undefined);
  probes.push(`  leading spaces\n${settings.addedTokens.join(" x ")}  trailing  `);
  for (const text of probes) {
    const whole = encode(text, false);
    const parts = t.segments(text).flatMap((s) => encode(s, false));
    if (whole.length !== parts.length || whole.some((x, k) => x !== parts[k])) return false;
  }
  return true;
}

/** Conversations the checks render: several roles, whitespace at the edges, non-ASCII text. */
export const PROBE_CONVERSATIONS: readonly { role: string; content: string }[][] = Object.freeze([
  [
    { role: "system", content: "You are a helpful assistant." },
    { role: "user", content: "  Hello, what is prefix caching?  " },
    { role: "assistant", content: "It reuses the KV cache of a prompt's leading tokens.\n" },
    { role: "user", content: "Et en français ? Ça marche très bien — 2026." },
  ],
  [{ role: "user", content: "\n\nOne message only\twith a tab." }],
]);

/**
 * The start-up check against an engine's `/tokenize`: the probe conversations tokenized by the
 * engine (`{messages}`) and here. Returns `undefined` when they agree, else a sentence saying
 * where they differ (the caller warns and routes on the approximate strategy).
 */
export async function checkAgainstEngine(tokenizer: PromptTokenizer, engine: EndpointBackend): Promise<string | undefined> {
  for (const messages of PROBE_CONVERSATIONS) {
    const ours = await tokenizer.tokenize({ messages });
    if (ours === undefined) return "this router cannot render chat requests (no chat template)";
    const theirs = await engine.post({ messages, add_generation_prompt: true, add_special_tokens: false });
    const n = Math.min(ours.length, theirs.length);
    let k = 0;
    while (k < n && ours[k] === theirs[k]) k++;
    if (k < n || ours.length !== theirs.length) {
      return `the engine's /tokenize gives ${theirs.length} tokens for a probe conversation and this router ${ours.length}, first difference at token ${k} (engine ${theirs[k] ?? "end"}, router ${ours[k] ?? "end"})`;
    }
  }
  return undefined;
}
