/** The shapes the prompt tokenizer's parts share: its settings, backends, results and statistics. */

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
  /** Characters of the rendered prompt, and of its leading segments that `tokens` covers. */
  readonly chars: number;
  readonly knownChars: number;
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

/** Settings of a `PromptTokenizer` (`prompt-tokenizer.ts`). */
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
