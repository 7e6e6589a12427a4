/**
 * The tiny llama model's tokenizer: a byte-level BPE learned, deterministically, from a built-in
 * corpus of English-like text (sim/prose.ts — the real-engine bench's prompts are made of it —
 * and a paragraph of plain English), written both into the GGUF (gguf.ts) and as a Hugging Face
 * `tokenizer.json` + `tokenizer_config.json` (tokenizer-files.ts), which agree token for token.
 *
 * - **Bytes**: every byte is a token (ids 0–255), written with GPT-2's byte → character table,
 *   so no text is ever unknown.
 * - **Pre-tokenizer**: Qwen2's split (llama.cpp's `qwen2` pre-tokenizer, which also leaves
 *   `clean_spaces` off, so decoding gives the bytes back): `'s`-style suffixes, words with at
 *   most one leading non-letter, single digits, punctuation runs with their line breaks,
 *   whitespace runs. Hugging Face expresses it as a `Split` with the same regex followed by a
 *   `ByteLevel` step without its own regex.
 * - **Merges**: learned by the textbook algorithm (Sennrich et al., 2016): count adjacent symbol
 *   pairs over the corpus's pre-tokenized words, merge the most frequent (ties: the
 *   lexicographically smallest pair of texts), repeat. Cost: O(merges × corpus symbols), about
 *   0.1–0.2 s for the default corpus and {@link TINY_BPE_MERGES} merges.
 * - **Encoding** ({@link BpeTokenizer.encode}) is llama.cpp's and Hugging Face's: pre-tokenize,
 *   then in each piece apply the merge of lowest rank among adjacent pairs (leftmost on a tie)
 *   until none applies. Control tokens (`<|begin_of_text|>`, …) are matched in the text first,
 *   as llama-server's `/tokenize` and chat completions do (`parse_special`).
 */

import { prose } from "../../sim/prose.js";
import { Rng } from "../../sim/random.js";

/**
 * Qwen2's pre-tokenizer regex as llama.cpp spells it (its `(?i:…)` written out, which JavaScript
 * regexes of Node.js 20 do not parse); used with the `gu` flags.
 */
export const QWEN2_PRETOKENIZER_REGEX =
  "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/** Merges the tiny model's tokenizer learns: its vocabulary is 256 bytes + the control tokens + these. */
export const TINY_BPE_MERGES = 1000;

/** The control tokens, in id order from 256: the Llama 3.1 chat template's markers. */
export const TINY_LLAMA_CONTROL_TOKENS = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"] as const;

/**
 * GPT-2's byte → character table: printable Latin-1 bytes map to themselves, the others to
 * U+0100 onwards, so every byte is a visible one-character token text.
 */
export function byteCharacters(): string[] {
  const chars: string[] = new Array<string>(256);
  let next = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    chars[b] = String.fromCharCode(printable ? b : 256 + next++);
  }
  return chars;
}

const PLAIN_ENGLISH =
  "The quick brown fox jumps over the lazy dog. It's a small model, and it doesn't know much: " +
  "what it says is noise, but the way it reads text is the way real models read theirs. " +
  "Each word is split into pieces that were common in the text it learned from; a rare word " +
  "takes more pieces, a common one fewer. Numbers are read one digit at a time (2026, 3.14, 100%), " +
  "and spaces, tabs and new lines keep their own tokens.\n\n" +
  "Please summarise the document above in three sentences. Thank you! Could you also list the " +
  "dates, the amounts and the names of the people involved? We'll review them tomorrow morning.\n";

/**
 * The built-in training text: the chat template's role names, plain English, and 48,000
 * characters of {@link prose} from a fixed seed with the bench's question and profile lines.
 */
export function tinyBpeCorpus(): string {
  const rng = new Rng(0x5eed);
  let out = "system\n\nuser\n\nassistant\n\n" + PLAIN_ENGLISH;
  for (let i = 0; i < 48; i++) {
    out += `You are prefix-router's assistant for a support desk, profile ${i % 12}.\n${prose(rng, 800)}\n`;
    out += `Question ${i}.${i % 3}: ${prose(rng, 80)}?\n`;
  }
  return out;
}

/** The pieces the pre-tokenizer cuts `text` into (their concatenation is `text`). */
export function pretokenize(text: string): string[] {
  return text.match(new RegExp(QWEN2_PRETOKENIZER_REGEX, "gu")) ?? [];
}

const ENCODER = new TextEncoder();

/** A learned byte-level BPE: its merges, in rank order, as pairs of token texts. */
export interface BpeModel {
  /** Token texts by id: 256 byte characters, the control tokens, then one per merge. */
  readonly tokens: readonly string[];
  /** Merges in rank order (rank = index), each two token texts. */
  readonly merges: readonly (readonly [string, string])[];
  /** Ids of the control tokens, by text. */
  readonly controls: ReadonlyMap<string, number>;
}

/**
 * Learns `merges` merges from `corpus` (see the file header); fewer when no pair occurs twice.
 * Deterministic: the same corpus and count give the same model.
 */
export function trainBpe(corpus: string, merges: number = TINY_BPE_MERGES, controls: readonly string[] = TINY_LLAMA_CONTROL_TOKENS): BpeModel {
  const chars = byteCharacters();
  const tokens: string[] = [...chars, ...controls];
  // Distinct pieces with their counts, each as a list of token ids.
  const counts = new Map<string, number>();
  for (const piece of pretokenize(corpus)) counts.set(piece, (counts.get(piece) ?? 0) + 1);
  const words: { ids: number[]; count: number }[] = [];
  for (const [piece, count] of counts) words.push({ ids: [...ENCODER.encode(piece)], count });
  const learned: [string, string][] = [];
  for (let m = 0; m < merges; m++) {
    const pairs = new Map<number, number>();
    for (const w of words) {
      for (let i = 0; i + 1 < w.ids.length; i++) {
        const key = w.ids[i]! * 65536 + w.ids[i + 1]!;
        pairs.set(key, (pairs.get(key) ?? 0) + w.count);
      }
    }
    let best = -1;
    let bestCount = 1;
    let bestText = "";
    for (const [key, n] of pairs) {
      if (n < bestCount) continue;
      const text = `${tokens[Math.floor(key / 65536)]!} ${tokens[key % 65536]!}`;
      if (n > bestCount || best < 0 || text < bestText) {
        best = key;
        bestCount = n;
        bestText = text;
      }
    }
    if (best < 0) break;
    const a = Math.floor(best / 65536);
    const b = best % 65536;
    const id = tokens.length;
    tokens.push(tokens[a]! + tokens[b]!);
    learned.push([tokens[a]!, tokens[b]!]);
    for (const w of words) {
      const ids = w.ids;
      let j = 0;
      for (let i = 0; i < ids.length; i++) {
        if (i + 1 < ids.length && ids[i] === a && ids[i + 1] === b) {
          ids[j++] = id;
          i++;
        } else ids[j++] = ids[i]!;
      }
      ids.length = j;
    }
  }
  return { tokens, merges: learned, controls: new Map(controls.map((c, i) => [c, 256 + i])) };
}

/** Encodes and decodes with a {@link BpeModel} (see the file header). */
export class BpeTokenizer {
  readonly vocabularySize: number;
  private readonly ids = new Map<string, number>();
  private readonly ranks = new Map<string, number>();
  private readonly bytes: (Uint8Array | undefined)[];
  private readonly byteChars = byteCharacters();
  private readonly controlRegex: RegExp | undefined;
  private readonly cache = new Map<string, number[]>();

  constructor(readonly model: BpeModel) {
    model.tokens.forEach((t, id) => this.ids.set(t, id));
    model.merges.forEach(([a, b], rank) => this.ranks.set(`${a} ${b}`, rank));
    this.vocabularySize = model.tokens.length;
    const charByte = new Map(this.byteChars.map((c, b) => [c, b]));
    this.bytes = model.tokens.map((t, id) => (model.controls.has(t) && id >= 256 && id < 256 + model.controls.size ? undefined : Uint8Array.from([...t].map((c) => charByte.get(c)!))));
    const escaped = [...model.controls.keys()].map((c) => c.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
    this.controlRegex = escaped.length === 0 ? undefined : new RegExp(escaped.join("|"), "g");
  }

  /** Token ids of `text`; with `specialTokens` (the default) control-token texts are those tokens. */
  encode(text: string, specialTokens = true): number[] {
    const out: number[] = [];
    if (!specialTokens || this.controlRegex === undefined) {
      this.encodeOrdinary(text, out);
      return out;
    }
    let at = 0;
    for (const m of text.matchAll(this.controlRegex)) {
      this.encodeOrdinary(text.slice(at, m.index), out);
      out.push(this.model.controls.get(m[0])!);
      at = m.index + m[0].length;
    }
    this.encodeOrdinary(text.slice(at), out);
    return out;
  }

  /** The bytes token `id` stands for; `undefined` for a control token or an unknown id. */
  tokenBytes(id: number): Uint8Array | undefined {
    return this.bytes[id];
  }

  /** The text of `ids`, control tokens dropped (invalid UTF-8 becomes U+FFFD). */
  decode(ids: readonly number[]): string {
    const parts: Uint8Array[] = [];
    for (const id of ids) {
      const b = this.bytes[id];
      if (b !== undefined) parts.push(b);
    }
    return new TextDecoder().decode(Buffer.concat(parts));
  }

  private encodeOrdinary(text: string, out: number[]): void {
    for (const piece of pretokenize(text)) {
      let ids = this.cache.get(piece);
      if (ids === undefined) {
        ids = this.encodePiece(piece);
        // Words recur; long pieces (whitespace runs, unbroken strings) rarely do.
        if (piece.length <= 64 && this.cache.size < 65536) this.cache.set(piece, ids);
      }
      for (const id of ids) out.push(id);
    }
  }

  /** Merges by rank, lowest first, leftmost on a tie: O(length²) per piece, fine for words. */
  private encodePiece(piece: string): number[] {
    const symbols = [...ENCODER.encode(piece)].map((b) => this.byteChars[b]!);
    for (;;) {
      let best = -1;
      let bestRank = Infinity;
      for (let i = 0; i + 1 < symbols.length; i++) {
        const rank = this.ranks.get(`${symbols[i]!} ${symbols[i + 1]!}`);
        if (rank !== undefined && rank < bestRank) {
          bestRank = rank;
          best = i;
        }
      }
      if (best < 0) break;
      symbols.splice(best, 2, symbols[best]! + symbols[best + 1]!);
    }
    return symbols.map((s) => this.ids.get(s)!);
  }
}

let tiny: BpeTokenizer | undefined;

/** The tiny model's tokenizer: {@link trainBpe} over {@link tinyBpeCorpus}, learned once per process. */
export function tinyLlamaTokenizer(): BpeTokenizer {
  return (tiny ??= new BpeTokenizer(trainBpe(tinyBpeCorpus())));
}
