/**
 * Deterministic synthetic text. Workloads never ship real prompts: every document, question,
 * answer and trace block is generated from a 32-bit key, so the same key always gives the same
 * text and different keys give different text from the very first word (the first ten words
 * alone carry ~100 bits). Routers that read text therefore see exactly the prefix sharing the
 * workload intends, and nothing else.
 *
 * Length is exact in characters: `tokens * CHARS_PER_TOKEN` characters (ASCII, so characters,
 * UTF-16 units and UTF-8 bytes coincide), which is how the emulated engine counts tokens.
 *
 * Cost: generation is ~1 word per PRNG draw; long texts that repeat (documents, trace blocks)
 * are kept in a bounded LRU so a popular document is built once.
 */
import { LRUCache } from "lru-cache";
import { CHARS_PER_TOKEN } from "../fleet/tokenizer.js";
import { Rng, mix32 } from "../sim/random.js";

export { CHARS_PER_TOKEN };

const SYLLABLES = [
  "ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "pe", "da", "gu", "ho", "ji", "ze", "ba", "fi",
  "qua", "tri", "sto", "pla", "mon", "ter", "ion", "ent", "ash", "or", "el", "un", "ax", "ov", "im", "es",
] as const;

/** 1,024 pseudo-words of 2–9 letters built from the syllables above (fixed: part of the format). */
const WORDS: readonly string[] = (() => {
  const rng = new Rng(0x5eed7e47);
  const seen = new Set<string>();
  const words: string[] = [];
  while (words.length < 1024) {
    const n = 1 + rng.int(3);
    let w = "";
    for (let i = 0; i < n; i++) w += SYLLABLES[rng.int(SYLLABLES.length)];
    if (!seen.has(w)) {
      seen.add(w);
      words.push(w);
    }
  }
  return words;
})();

/**
 * Synthetic text of exactly `tokens * CHARS_PER_TOKEN` characters, a pure function of `key`
 * and `tokens`. Words separated by spaces, with a sentence break every 8–20 words.
 *
 * @param key - 32-bit key; derive it with `mix32(seed, namespace, id)`
 * @param tokens - length in tokens (≥ 0)
 */
export function syntheticText(key: number, tokens: number): string {
  const chars = Math.max(0, Math.floor(tokens)) * CHARS_PER_TOKEN;
  if (chars === 0) return "";
  const rng = new Rng(key);
  const parts: string[] = [];
  let length = 0;
  let untilBreak = 8 + rng.int(13);
  while (length < chars) {
    const r = rng.nextUint32();
    const word = WORDS[r & 1023]!;
    const sep = --untilBreak === 0 ? ". " : " ";
    if (untilBreak === 0) untilBreak = 8 + ((r >>> 10) % 13);
    parts.push(word, sep);
    length += word.length + sep.length;
  }
  const text = parts.join("");
  return text.length === chars ? text : text.slice(0, chars);
}

/**
 * A cache of synthetic texts keyed by (namespace, id, tokens), under one seed. Each workload run
 * owns one; nothing is shared between runs.
 */
export class TextSource {
  readonly #seed: number;
  readonly #cache: LRUCache<string, string>;

  /**
   * @param seed - the run's seed: different seeds give different corpora
   * @param maxChars - total characters kept in the LRU (default 64 Mi characters ≈ 128 MiB)
   */
  constructor(seed: number, maxChars = 64 * 1024 * 1024) {
    this.#seed = seed;
    this.#cache = new LRUCache<string, string>({
      maxSize: maxChars,
      sizeCalculation: (v) => Math.max(1, v.length),
    });
  }

  /** Text for (`namespace`, `id`) of `tokens` tokens, cached. Use for repeated texts. */
  cached(namespace: number, id: number, tokens: number): string {
    const k = `${namespace}:${id}:${tokens}`;
    let v = this.#cache.get(k);
    if (v === undefined) {
      v = syntheticText(mix32(this.#seed, namespace, id, tokens), tokens);
      this.#cache.set(k, v);
    }
    return v;
  }

  /** Text for (`namespace`, `id`) of `tokens` tokens, not cached. Use for one-off texts. */
  once(namespace: number, id: number, tokens: number): string {
    return syntheticText(mix32(this.#seed, namespace, id, tokens), tokens);
  }
}
