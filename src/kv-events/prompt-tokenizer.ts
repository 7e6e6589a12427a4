/**
 * The prompt tokenizer: a request's prompt rendered, cut into segments and read from a segment
 * cache (see `tokenizer.ts` for where its tokens come from).
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
import type { Logger } from "../logger.js";
import type { PromptTokenizerSettings, PromptTokens, TokenizerBackend, TokenizerStats } from "./tokenizer-types.js";
import { xxh32Lanes, xxh32x2 } from "./xxh32x2.js";

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
    return { tokens, complete, tailKey, chars: text.length, knownChars: cuts[known] as number, prefixKeys: prefixKeys.subarray(0, 2 * known), tokenEnds: tokenEnds.subarray(0, known) };
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
