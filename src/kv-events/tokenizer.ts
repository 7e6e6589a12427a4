/**
 * Tokens the way the engine sees them: the request rendered with the model's chat template
 * (`@huggingface/jinja`, the template of `tokenizer_config.json`) and tokenized with the model's
 * `tokenizer.json` (`@huggingface/tokenizers`), or through an engine's `POST /tokenize` (vLLM:
 * `{model, prompt, add_special_tokens}` → `{count, max_model_len, tokens}`), or by the user's own
 * functions (`{ render, encode }`: {@link OwnTokenizerSource}), called synchronously in the read.
 *
 * **Segments.** A tokenizer cuts its input at every added token (`<|im_start|>`, `<|eot_id|>`…)
 * before normalising, pre-tokenizing and merging, and no merge crosses such a cut. So the
 * rendered prompt is cut just before each added token (before the whitespace an `lstrip` token
 * eats) and each segment is tokenized alone; the concatenation equals the whole prompt's tokens.
 * A start-up self-check verifies it for the tokenizer at hand (a Metaspace pre-tokenizer that
 * prepends `▁` to the first piece only breaks it): if it fails, the prompt is one segment.
 *
 * **Incremental.** Segments' tokens are cached by their text (an LRU bounded in tokens): a
 * conversation's next turn finds every earlier message's segments in the cache and tokenizes
 * only its new ones. Reading a request never tokenizes: it returns the tokens of the leading
 * run of cached segments (the exact start of the prompt, usually everything but the new
 * message), and queues the missing segments for tokenization off the event loop (a worker
 * thread, or the engine's `/tokenize`), so the next turn — or a retry — finds them.
 *
 * Segments are cached by a 64-bit content key (two XXH32 lanes over their text — one byte per
 * character when ASCII, else UTF-16LE — and its length), not by the text itself: a Map keyed by long strings compares them character by
 * character, and a sliced key would keep its whole prompt alive.
 *
 * Cost of a read: the template's render (≈ 1 µs per message with `@huggingface/jinja`), one
 * scan for added tokens, the text written out once and hashed once (two lanes), one Map lookup per
 * segment and a copy of the known tokens.
 */
import { createRequire } from "node:module";
import { join } from "node:path";
import { RouterError } from "../errors.js";
import { importPeer } from "../internal/optional-peer.js";
import type { Logger } from "../logger.js";
import { xxh32Lanes, xxh32x2 } from "./xxh32x2.js";

/** A loaded `@huggingface/tokenizers` tokenizer (the part used here). */
export interface HfTokenizer {
  encode(text: string, options?: { add_special_tokens?: boolean }): { ids: number[] };
}

/** A compiled chat template (`@huggingface/jinja`'s `Template`). */
export interface ChatTemplate {
  render(items: Record<string, unknown>): string;
}

/** The tokens of a request's prompt known now. */
export interface PromptTokens {
  /** Tokens of the prompt's leading segments that are tokenized (all of them when `complete`). */
  readonly tokens: Uint32Array;
  /** Whether `tokens` is the whole prompt. */
  readonly complete: boolean;
  /**
   * A 32-bit hash of what follows `tokens` (the first segment not tokenized yet, or the
   * prompt's end): the ranking's divergence key when nothing beyond the known tokens is held.
   */
  readonly tailKey: number;
  /** Characters of the rendered prompt. */
  readonly chars: number;
  /**
   * Per known segment k: a 64-bit key of the prompt's text up to its end (`prefixKeys[2k]` hi,
   * `[2k + 1]` lo) and the tokens up to its end (`tokenEnds[k]`): a later request sharing those
   * segments shares that much of the chain (the strategy caches chain hashes by them).
   */
  readonly prefixKeys: Uint32Array;
  readonly tokenEnds: Int32Array;
}

/** Where the tokens come from. */
export interface TokenizerBackend {
  /** Tokenizes segments off the event loop. */
  encode(texts: readonly string[]): Promise<Uint32Array[]>;
  /**
   * Tokenizes one segment now, in the read (the user's own `encode`, assumed cheap): a backend
   * that has it never queues, so a prompt is always known whole.
   */
  encodeSync?(text: string): Uint32Array;
  /** Stops what the backend runs (a worker). */
  close(): Promise<void>;
}

/** Settings of a {@link PromptTokenizer}. */
export interface PromptTokenizerSettings {
  /** The chat template, for chat bodies (`messages`); `undefined`: chat requests are not tokenized. */
  readonly template: ChatTemplate | undefined;
  /** Variables the template reads besides `messages` (`bos_token`, `eos_token`…). */
  readonly templateVars: Readonly<Record<string, unknown>>;
  /** Added tokens' contents (cut points), and those that eat the whitespace before them. */
  readonly addedTokens: readonly string[];
  readonly lstripTokens: readonly string[];
  /** Tokens a completion prompt gets before and after its text (`add_special_tokens`: BOS…). */
  readonly promptPrefix: readonly number[];
  readonly promptSuffix: readonly number[];
  /** Whether cutting at added tokens is exact for this tokenizer (the self-check). */
  readonly segmented: boolean;
  /** Most tokens the segment cache keeps. */
  readonly cacheTokens: number;
  /** Most characters queued for tokenization; past it new segments are dropped (and counted). */
  readonly maxQueuedChars: number;
  /** The user's own rendering (replaces the template, for every body shape); `undefined` from it: not readable. */
  readonly render?: ((body: unknown) => string | undefined) | undefined;
}

/** Tokenizer statistics (`router.stats().precise.tokenizer`). */
export interface TokenizerStats {
  /** Segments found in the cache, and not. */
  hits: number;
  misses: number;
  /** Segments tokenized off the loop, their characters and the time spent, ms (wall, summed over batches). */
  tokenized: number;
  tokenizedChars: number;
  tokenizeMs: number;
  /** Segments dropped because the queue was full, and batches that failed. */
  dropped: number;
  failures: number;
  /** Cached segments and their tokens. */
  cachedSegments: number;
  cachedTokens: number;
  /** Requests read whole, partly, and not at all (no template, an image…). */
  complete: number;
  partial: number;
  unreadable: number;
}

const EMPTY_TOKENS = new Uint32Array(0);
const EMPTY_LIST: readonly number[] = Object.freeze([]);
/** Seeds of the segment content keys' two XXH32 lanes. */
const KEY_SEED_HI = 0x5bd1e995;
const KEY_SEED_LO = 0x27d4eb2f;

/**
 * Renders and tokenizes requests incrementally (see the file header). Synchronous reads, async
 * tokenization through a {@link TokenizerBackend}.
 */
export class PromptTokenizer {
  /** Segment tokens by the segment's content key ({@link PromptTokenizer.keyOf}). */
  private readonly cache = new Map<string, Uint32Array>();
  /** The rendered text as UTF-16LE, hashed per segment (reused: no allocation per read). */
  private buf = Buffer.alloc(1 << 16);
  private words = new Uint32Array(this.buf.buffer, this.buf.byteOffset, this.buf.length >>> 2);
  private readonly lanes = xxh32Lanes(KEY_SEED_HI, KEY_SEED_LO);
  private cachedTokens = 0;
  private readonly queued = new Set<string>();
  private queue: string[] = [];
  private queuedChars = 0;
  private running = false;
  private readonly cut: RegExp | undefined;
  private readonly lstrip: ReadonlySet<string>;
  /** Added tokens, longest first, and the prefix they all share (`""`: none; the RegExp scans). */
  private readonly sortedAdded: readonly string[];
  private readonly lead: string;
  private idle: Promise<void> = Promise.resolve();
  private readonly counts = { hits: 0, misses: 0, tokenized: 0, tokenizedChars: 0, tokenizeMs: 0, dropped: 0, failures: 0, complete: 0, partial: 0, unreadable: 0 };

  constructor(
    private readonly settings: PromptTokenizerSettings,
    private readonly backend: TokenizerBackend,
    private readonly clock: { now(): number },
    private readonly logger: Logger,
  ) {
    const added = [...settings.addedTokens].filter((t) => t.length > 0).sort((a, b) => b.length - a.length);
    this.cut = added.length === 0 || !settings.segmented ? undefined : new RegExp(added.map(escapeRegExp).join("|"), "g");
    this.sortedAdded = added;
    let lead = added[0] ?? "";
    for (const t of added) while (!t.startsWith(lead)) lead = lead.slice(0, -1);
    this.lead = lead;
    this.lstrip = new Set(settings.lstripTokens);
  }

  /** The prompt text the engine tokenizes for `body` (chat: the rendered template), or `undefined` when it cannot be rendered. */
  render(body: unknown): { text: string; chat: boolean } | undefined {
    const own = this.settings.render;
    if (own !== undefined) {
      try {
        const text = own(body);
        return typeof text === "string" ? { text, chat: true } : undefined;
      } catch {
        return undefined;
      }
    }
    if (body === null || typeof body !== "object") return undefined;
    const b = body as Record<string, unknown>;
    if (Array.isArray(b.messages)) {
      if (this.settings.template === undefined) return undefined;
      const messages = normaliseMessages(b.messages);
      if (messages === undefined) return undefined;
      const vars: Record<string, unknown> = { ...this.settings.templateVars, messages, add_generation_prompt: b.add_generation_prompt ?? true };
      if (Array.isArray(b.tools)) vars.tools = b.tools;
      if (b.chat_template_kwargs !== null && typeof b.chat_template_kwargs === "object") Object.assign(vars, b.chat_template_kwargs);
      try {
        return { text: this.settings.template.render(vars), chat: true };
      } catch {
        return undefined;
      }
    }
    if (typeof b.prompt === "string") return { text: b.prompt, chat: false };
    return undefined;
  }

  /** The rendered text cut into segments (just before each added token). */
  segments(text: string): string[] {
    const c = this.cuts(text);
    return c.slice(0, -1).map((from, k) => text.slice(from, c[k + 1]));
  }

  /** Segment boundaries: 0, the cuts, `text.length` (at least one segment). */
  cuts(text: string): number[] {
    const cut = this.cut;
    if (cut === undefined || text.length === 0) return [0, text.length];
    const out = [0];
    let from = 0;
    const at = (index: number, token: string): void => {
      let x = index;
      if (this.lstrip.has(token)) while (x > from && /\s/.test(text[x - 1] as string)) x--;
      if (x > from) out.push(x);
      from = x;
    };
    const lead = this.lead;
    if (lead.length > 0) {
      // Every added token starts with `lead` (`<|`, `<`…): native indexOf, then the longest token there.
      let i = text.indexOf(lead);
      while (i !== -1) {
        const token = this.sortedAdded.find((t) => text.startsWith(t, i));
        if (token === undefined) {
          i = text.indexOf(lead, i + 1);
          continue;
        }
        at(i, token);
        i = text.indexOf(lead, i + token.length);
      }
    } else {
      cut.lastIndex = 0;
      for (let m = cut.exec(text); m !== null; m = cut.exec(text)) at(m.index, m[0]);
    }
    out.push(text.length);
    return out;
  }

  /**
   * The cache key of a segment's text: two XXH32 lanes over its bytes and its length — one byte
   * per character when it is ASCII (most prompts: half the bytes to hash), else UTF-16LE; the
   * encoding is part of the key.
   */
  private keyParts(segment: string): [number, number, number] {
    const ascii = Buffer.byteLength(segment, "utf8") === segment.length;
    const bytes = ascii ? segment.length : 2 * segment.length;
    if (this.buf.length < bytes) {
      this.buf = Buffer.alloc(bytes + 4096);
      this.words = new Uint32Array(this.buf.buffer, this.buf.byteOffset, this.buf.length >>> 2);
    }
    this.buf.write(segment, 0, ascii ? "latin1" : "utf16le");
    const lanes = this.lanes;
    xxh32x2(this.buf, this.words, 0, bytes, lanes);
    return [lanes.out[0] as number, lanes.out[1] as number, ascii ? segment.length : -segment.length];
  }

  /** The cache key of a segment's text. */
  keyOf(segment: string): string {
    const [hi, lo, len] = this.keyParts(segment);
    return `${hi}.${lo}.${len}`;
  }

  /**
   * The tokens of `body`'s prompt known now (synchronous, never tokenizes): the leading run of
   * cached segments; the others are queued for tokenization. `undefined` when the body cannot be
   * rendered (no messages or prompt, a non-text part, no chat template).
   */
  read(body: unknown): PromptTokens | undefined {
    const r = this.render(body);
    if (r === undefined) {
      this.counts.unreadable++;
      return undefined;
    }
    const text = r.text;
    const cuts = this.cuts(text);
    const S = cuts.length - 1;
    const parts: Uint32Array[] = [];
    const prefixKeys = new Uint32Array(2 * S);
    const tokenEnds = new Int32Array(S);
    const prefix = r.chat ? EMPTY_LIST : this.settings.promptPrefix;
    let known = 0;
    let encodedNow = 0;
    let total = prefix.length;
    let cumHi = r.chat ? 0x43484154 : 0x50524d54; // 'CHAT' / 'PRMT': a prompt's tokens differ from a chat's
    let cumLo = 0;
    for (; known < S; known++) {
      const from = cuts[known] as number;
      const to = cuts[known + 1] as number;
      const segment = text.slice(from, to);
      const [hi, lo, len] = this.keyParts(segment);
      let t = this.cache.get(`${hi}.${lo}.${len}`);
      if (t === undefined) {
        // Only a backend that tokenizes in the read (the user's own `encode`) fills a miss here.
        t = this.encodeNow(segment);
        if (t === undefined) break;
        encodedNow++;
      }
      parts.push(t);
      total += t.length;
      cumHi = Math.imul(cumHi ^ hi, 0x9e3779b1) ^ (cumLo >>> 15);
      cumLo = Math.imul(cumLo ^ lo, 0x85ebca77) ^ (cumHi >>> 13) ^ (to - from);
      prefixKeys[2 * known] = cumHi >>> 0;
      prefixKeys[2 * known + 1] = cumLo >>> 0;
      tokenEnds[known] = total;
    }
    this.counts.hits += known - encodedNow;
    const complete = known === S;
    if (!complete) {
      this.counts.misses += S - known;
      for (let k = known; k < S; k++) this.enqueue(text.slice(cuts[k], cuts[k + 1]));
      this.counts.partial++;
    } else this.counts.complete++;
    const suffix = r.chat || !complete ? EMPTY_LIST : this.settings.promptSuffix;
    const tokens = new Uint32Array(total + suffix.length);
    tokens.set(prefix, 0);
    let at = prefix.length;
    for (const p of parts) {
      tokens.set(p, at);
      at += p.length;
    }
    tokens.set(suffix, at);
    const tailKey = complete ? 0 : this.keyParts(text.slice(cuts[known], Math.min(cuts[known + 1] as number, (cuts[known] as number) + 4096)))[1];
    return { tokens, complete, tailKey, chars: text.length, prefixKeys: prefixKeys.subarray(0, 2 * known), tokenEnds: tokenEnds.subarray(0, known) };
  }

  /** Tokenizes `body`'s prompt whole (waiting for what is missing); `undefined` when it cannot be rendered. */
  async tokenize(body: unknown): Promise<Uint32Array | undefined> {
    const r = this.render(body);
    if (r === undefined) return undefined;
    const segs = this.segments(r.text);
    const missing = [...new Set(segs.filter((s) => !this.cache.has(this.keyOf(s))))];
    if (missing.length > 0) {
      const out = await this.backend.encode(missing);
      missing.forEach((s, k) => this.remember(s, out[k] as Uint32Array));
    }
    const t = this.read(body);
    return t?.tokens;
  }

  /** Resolves when every queued segment has been tokenized (tests, benchmarks). */
  async settled(): Promise<void> {
    while (this.running || this.queue.length > 0) await this.idle;
  }

  /** Stops the backend. */
  async close(): Promise<void> {
    this.queue = [];
    await this.backend.close();
  }

  stats(): TokenizerStats {
    return { ...this.counts, cachedSegments: this.cache.size, cachedTokens: this.cachedTokens };
  }

  /** Tokenizes a segment in the read when the backend can (the user's own `encode`); `undefined` otherwise or when it throws. */
  private encodeNow(segment: string): Uint32Array | undefined {
    const sync = this.backend.encodeSync;
    if (sync === undefined) return undefined;
    const start = this.clock.now();
    let tokens: Uint32Array;
    try {
      tokens = sync.call(this.backend, segment);
    } catch (e) {
      this.counts.failures++;
      if (this.counts.failures === 1) this.logger.warn(`precise-prefix: the tokenizer's encode failed: ${(e as Error).message}; such requests route on the approximate strategy`, { error: e });
      return undefined;
    }
    this.counts.misses++;
    this.counts.tokenized++;
    this.counts.tokenizedChars += segment.length;
    this.counts.tokenizeMs += this.clock.now() - start;
    this.remember(segment, tokens);
    return tokens;
  }

  private enqueue(segment: string): void {
    if (this.queued.has(segment)) return;
    if (this.queuedChars + segment.length > this.settings.maxQueuedChars) {
      this.counts.dropped++;
      return;
    }
    this.queued.add(segment);
    this.queue.push(segment);
    this.queuedChars += segment.length;
    if (!this.running) this.idle = this.drain();
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue;
        this.queue = [];
        const start = this.clock.now();
        try {
          const out = await this.backend.encode(batch);
          batch.forEach((s, k) => this.remember(s, out[k] as Uint32Array));
          this.counts.tokenized += batch.length;
          this.counts.tokenizedChars += batch.reduce((n, s) => n + s.length, 0);
        } catch (e) {
          this.counts.failures++;
          this.logger.warn(`precise-prefix: tokenizing ${batch.length} prompt segment(s) failed: ${(e as Error).message}; those requests route on the approximate strategy`, { error: e });
        }
        this.counts.tokenizeMs += this.clock.now() - start;
        for (const s of batch) {
          this.queued.delete(s);
          this.queuedChars -= s.length;
        }
      }
    } finally {
      this.running = false;
    }
  }

  private remember(segment: string, tokens: Uint32Array): void {
    const key = this.keyOf(segment);
    const old = this.cache.get(key);
    if (old !== undefined) {
      this.cache.delete(key);
      this.cachedTokens -= old.length;
    }
    this.cache.set(key, tokens);
    this.cachedTokens += tokens.length;
    while (this.cachedTokens > this.settings.cacheTokens && this.cache.size > 1) {
      const [k, v] = this.cache.entries().next().value as [string, Uint32Array];
      this.cache.delete(k);
      this.cachedTokens -= v.length;
    }
  }
}

/** Message contents as the templates expect them: a string (text parts joined by newlines, as vLLM's "string" content format). `undefined` for a non-text part. */
function normaliseMessages(messages: readonly unknown[]): Record<string, unknown>[] | undefined {
  const out: Record<string, unknown>[] = [];
  for (const m of messages) {
    if (m === null || typeof m !== "object") return undefined;
    const msg = m as Record<string, unknown>;
    const c = msg.content;
    if (typeof c === "string" || c === null || c === undefined) {
      out.push(msg);
      continue;
    }
    if (!Array.isArray(c)) return undefined;
    const texts: string[] = [];
    for (const part of c) {
      if (part === null || typeof part !== "object" || (part as { type?: unknown }).type !== "text") return undefined;
      const text = (part as { text?: unknown }).text;
      if (typeof text !== "string") return undefined;
      texts.push(text);
    }
    out.push({ ...msg, content: texts.join("\n") });
  }
  return out;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

// ───────────────────────── loading ─────────────────────────

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
  const backend: TokenizerBackend = o.worker ? new WorkerBackend(json, config, (texts) => texts.map((t) => Uint32Array.from(encodeHere(t, false)))) : new InThreadBackend((t) => Uint32Array.from(encodeHere(t, false)));
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

// ───────────────────────── backends ─────────────────────────

/** Tokenizes in this thread, one batch per macrotask (when no worker can start). */
class InThreadBackend implements TokenizerBackend {
  constructor(private readonly encodeOne: (text: string) => Uint32Array) {}
  encode(texts: readonly string[]): Promise<Uint32Array[]> {
    return new Promise((resolve, reject) =>
      setImmediate(() => {
        try {
          resolve(texts.map(this.encodeOne));
        } catch (e) {
          reject(e);
        }
      }),
    );
  }
  async close(): Promise<void> {}
}

/** The worker's script (CommonJS, evaluated): loads the tokenizer from the same files' content. */
const WORKER_SCRIPT = `
const { parentPort, workerData } = require("node:worker_threads");
const { Tokenizer } = require(workerData.modulePath);
const tok = new Tokenizer(workerData.json, workerData.config);
parentPort.on("message", (m) => {
  try {
    const out = m.texts.map((t) => Uint32Array.from(tok.encode(t, { add_special_tokens: false }).ids));
    parentPort.postMessage({ id: m.id, out }, out.map((a) => a.buffer));
  } catch (e) {
    parentPort.postMessage({ id: m.id, error: String(e && e.message || e) });
  }
});
`;

/**
 * Tokenizes in a worker thread (started on first use; unref'd, so it never keeps the process
 * alive). If the worker cannot start, batches are tokenized in this thread, one per macrotask.
 */
class WorkerBackend implements TokenizerBackend {
  private worker: import("node:worker_threads").Worker | undefined;
  private starting: Promise<import("node:worker_threads").Worker | undefined> | undefined;
  private next = 0;
  private answered = false;
  private readonly waiting = new Map<number, { resolve(v: Uint32Array[]): void; reject(e: Error): void }>();
  private readonly fallback: InThreadBackend;

  constructor(
    private readonly json: object,
    private readonly config: object,
    encodeHere: (texts: readonly string[]) => Uint32Array[],
  ) {
    this.fallback = new InThreadBackend((t) => encodeHere([t])[0] as Uint32Array);
  }

  async encode(texts: readonly string[]): Promise<Uint32Array[]> {
    const w = await (this.starting ??= this.start());
    if (w === undefined) return this.fallback.encode(texts);
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      w.postMessage({ id, texts });
    });
  }

  private async start(): Promise<import("node:worker_threads").Worker | undefined> {
    try {
      const { Worker } = await import("node:worker_threads");
      const modulePath = createRequire(join(process.cwd(), "package.json")).resolve("@huggingface/tokenizers");
      const w = new Worker(WORKER_SCRIPT, { eval: true, workerData: { modulePath, json: this.json, config: this.config } });
      w.unref();
      w.on("message", (m: { id: number; out?: Uint32Array[]; error?: string }) => {
        this.answered = true;
        const p = this.waiting.get(m.id);
        this.waiting.delete(m.id);
        if (m.out !== undefined) p?.resolve(m.out);
        else p?.reject(new Error(m.error ?? "tokenizer worker failed"));
      });
      w.on("error", (e) => this.failAll(e));
      w.on("exit", () => {
        this.failAll(new Error("tokenizer worker exited"));
        this.worker = undefined;
        // A worker that never answered (its module could not load there) is not started again:
        // later batches are tokenized in this thread.
        this.starting = this.answered ? undefined : Promise.resolve(undefined);
      });
      this.worker = w;
      return w;
    } catch {
      return undefined;
    }
  }

  private failAll(e: Error): void {
    for (const p of this.waiting.values()) p.reject(e);
    this.waiting.clear();
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    this.starting = Promise.resolve(undefined);
    if (w !== undefined) await w.terminate();
  }
}

/** vLLM's (and SGLang's) `POST /tokenize`: one request per segment, at most 4 in flight. */
export class EndpointBackend implements TokenizerBackend {
  constructor(
    private readonly baseUrl: string,
    private readonly model: string | undefined,
    private readonly timeoutMs: number,
  ) {}

  async encode(texts: readonly string[]): Promise<Uint32Array[]> {
    const out: Uint32Array[] = new Array(texts.length);
    let next = 0;
    const run = async (): Promise<void> => {
      while (next < texts.length) {
        const k = next++;
        out[k] = Uint32Array.from(await this.post({ prompt: texts[k], add_special_tokens: false }));
      }
    };
    await Promise.all(Array.from({ length: Math.min(4, texts.length) }, run));
    return out;
  }

  /** `POST /tokenize` with `body` (and the model); the `tokens` of the answer. */
  async post(body: Record<string, unknown>): Promise<number[]> {
    const url = new URL("tokenize", this.baseUrl.endsWith("/") ? this.baseUrl : `${this.baseUrl}/`);
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(this.model === undefined ? body : { model: this.model, ...body }),
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`POST ${url.href} answered ${res.status}: ${text.slice(0, 200)}`);
    const parsed = JSON.parse(text) as { tokens?: unknown };
    if (!Array.isArray(parsed.tokens) || !parsed.tokens.every((t) => Number.isInteger(t) && (t as number) >= 0)) {
      throw new Error(`POST ${url.href} answered without a \`tokens\` array of non-negative integers`);
    }
    return parsed.tokens as number[];
  }

  async close(): Promise<void> {}
}

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
