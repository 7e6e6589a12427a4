/**
 * The deterministic tokenizer and the chained block hashes of the emulated engine.
 *
 * Tokenizer: the rendered prompt is cut into tokens of {@link CHARS_PER_TOKEN} = 4 UTF-16 code
 * units (the last one may be shorter), so `countTokens(text) = ceil(text.length / 4)`. Four
 * characters per token is the usual rule of thumb for English text under Llama 3's tokenizer
 * and the ratio llm-d's router assumes. It is a model, not Llama's BPE: what matters for prefix
 * caching is that equal leading text gives equal leading tokens.
 *
 * Block hashes (vLLM's automatic prefix caching): block `i` holds tokens `[16i, 16i + 16)`; only
 * full blocks are hashed. The hash of block `i` covers every token before its end — it is the
 * running state of one pass over the text, finalised at each block boundary — so two prompts
 * share block `i`'s hash only if they share all of its first `16(i + 1)` tokens. The pass is
 * MurmurHash3's x86 body on two 32-bit lanes with different constants, two code units per
 * round, seeded with the hash of the model name (a different model never hits); the two
 * finalised lanes are packed into a 53-bit integer key (a JS number, a fast `Map` key).
 * Collisions need ~2^26 distinct blocks to become likely, 1,000 times an instance's capacity.
 * Cost: one linear pass over the prompt, no per-token allocation.
 */

/** UTF-16 code units per token of the emulated tokenizer. */
export const CHARS_PER_TOKEN = 4;

/**
 * Number of tokens the emulated engine sees in `text`: `ceil(text.length / 4)`, with
 * `text.length` in UTF-16 code units.
 * @example
 * countTokens("Hello, world"); // 3
 */
export function countTokens(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN);
}

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;
const C3 = 0x85ebca6b;
const C4 = 0xc2b2ae35;

function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * Hashes a string into the two 32-bit lanes used to seed a prompt's block chain.
 * @internal
 */
export function seedLanes(text: string): [number, number] {
  let h1 = 0x9747b28c;
  let h2 = 0x7a3b1c5d;
  for (let i = 0; i < text.length; i++) {
    h1 = Math.imul(h1 ^ text.charCodeAt(i), 0x01000193);
    h2 = Math.imul(h2 + text.charCodeAt(i), 0x5bd1e995) ^ (h2 >>> 15);
  }
  return [fmix32(h1 ^ text.length), fmix32(h2 ^ Math.imul(text.length, 31))];
}

/**
 * Chained hash keys of the full blocks of `text`, in order: `floor(countTokens(text) /
 * blockSizeTokens)` keys. Key `i` depends on `seed` and on every character before the end of
 * block `i`, so the keys of a prefix are a prefix of the keys.
 * @param text the rendered prompt
 * @param blockSizeTokens tokens per block (16 in vLLM)
 * @param seed a namespace, usually the model name; different seeds never share keys
 */
export function blockKeys(text: string, blockSizeTokens: number, seed = ""): Float64Array {
  const blockChars = blockSizeTokens * CHARS_PER_TOKEN;
  const fullBlocks = Math.floor(countTokens(text) / blockSizeTokens);
  const keys = new Float64Array(fullBlocks);
  let [h1, h2] = seedLanes(seed);
  const len = text.length;
  for (let b = 0; b < fullBlocks; b++) {
    const start = b * blockChars;
    const end = Math.min(start + blockChars, len);
    for (let i = start; i < end; i += 2) {
      // charCodeAt past the end is NaN, and NaN | 0 and NaN << 16 are 0.
      const k = (text.charCodeAt(i) | 0) | (text.charCodeAt(i + 1) << 16);
      let k1 = Math.imul(k, C1);
      k1 = (k1 << 15) | (k1 >>> 17);
      h1 ^= Math.imul(k1, C2);
      h1 = (h1 << 13) | (h1 >>> 19);
      h1 = (Math.imul(h1, 5) + 0xe6546b64) | 0;
      let k2 = Math.imul(k, C3);
      k2 = (k2 << 17) | (k2 >>> 15);
      h2 ^= Math.imul(k2, C4);
      h2 = (h2 << 11) | (h2 >>> 21);
      h2 = (Math.imul(h2, 5) + 0x561ccd1b) | 0;
      h1 = (h1 + h2) | 0;
      h2 = (h2 + h1) | 0;
    }
    const f1 = fmix32(h1 ^ end);
    const f2 = fmix32(h2 ^ b);
    keys[b] = f1 * 2097152 + (f2 >>> 11);
  }
  return keys;
}

const FILLER =
  "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor " +
  "incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercita" +
  "tion ullamco laboris nisi ut aliquip ex ea commodo consequat. ";
const FILLER_TOKENS = Math.floor(FILLER.length / CHARS_PER_TOKEN);

/**
 * The deterministic generated text: output token `index` (0-based) is the 4-character piece
 * `index mod n` of a fixed lorem-ipsum sentence, so `countTokens` of `n` generated tokens is `n`.
 */
export function fillerToken(index: number): string {
  const at = (index % FILLER_TOKENS) * CHARS_PER_TOKEN;
  return FILLER.slice(at, at + CHARS_PER_TOKEN);
}

/** The text of generated tokens `[from, to)`; see {@link fillerToken}. */
export function fillerText(to: number, from = 0): string {
  let out = "";
  for (let i = from; i < to; i++) out += fillerToken(i);
  return out;
}

const utf8 = new TextEncoder();

/**
 * The default tokenizer of a fleet that publishes KV events: the UTF-8 bytes of `text`, one token
 * each. Trivial to reproduce on the router's side (`new TextEncoder().encode(text)`), so the
 * router's index and the emulated engines agree without a model's vocabulary.
 * @example
 * byteTokens("Hé"); // [72, 195, 169]
 */
export function byteTokens(text: string): number[] {
  return Array.from(utf8.encode(text));
}

/**
 * The emulated engine's own tokens as ids: the text cut into {@link CHARS_PER_TOKEN} UTF-16 code
 * units a token (the last one may be shorter), each token's id a 31-bit hash of its code units
 * and length. So `emulatedTokens(text).length === countTokens(text)`: a fleet that publishes KV
 * events with it keeps the 4-characters-per-token model its timings are calibrated on. The
 * default tokenizer of an emulated fleet that publishes events; a router routing on those events
 * tokenizes with the same function. Two different 4-unit pieces share an id with probability
 * about 2^-31 per pair.
 * @example
 * emulatedTokens("Hello, world").length; // 3
 */
export function emulatedTokens(text: string): number[] {
  const n = countTokens(text);
  const out = new Array<number>(n);
  for (let t = 0; t < n; t++) {
    const start = t * CHARS_PER_TOKEN;
    const end = Math.min(start + CHARS_PER_TOKEN, text.length);
    let h = 0x811c9dc5 ^ (end - start);
    for (let i = start; i < end; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
    out[t] = fmix32(h) >>> 1;
  }
  return out;
}

/**
 * Chained hash keys of the full blocks of a tokenized prompt, as {@link blockKeys} computes them
 * from text: `floor(tokens.length / blockSizeTokens)` keys, key `i` depending on `seed` and on
 * every token before the end of block `i`. Used when the fleet tokenizes with a real tokenizer
 * (or {@link byteTokens}), so that its cache blocks are the blocks its KV events describe.
 */
export function tokenBlockKeys(tokens: readonly number[], blockSizeTokens: number, seed = ""): Float64Array {
  const fullBlocks = Math.floor(tokens.length / blockSizeTokens);
  const keys = new Float64Array(fullBlocks);
  let [h1, h2] = seedLanes(seed);
  for (let b = 0; b < fullBlocks; b++) {
    const end = (b + 1) * blockSizeTokens;
    for (let i = b * blockSizeTokens; i < end; i++) {
      const k = tokens[i]! | 0;
      let k1 = Math.imul(k, C1);
      k1 = (k1 << 15) | (k1 >>> 17);
      h1 ^= Math.imul(k1, C2);
      h1 = (h1 << 13) | (h1 >>> 19);
      h1 = (Math.imul(h1, 5) + 0xe6546b64) | 0;
      let k2 = Math.imul(k, C3);
      k2 = (k2 << 17) | (k2 >>> 15);
      h2 ^= Math.imul(k2, C4);
      h2 = (h2 << 11) | (h2 >>> 21);
      h2 = (Math.imul(h2, 5) + 0x561ccd1b) | 0;
      h1 = (h1 + h2) | 0;
      h2 = (h2 + h1) | 0;
    }
    keys[b] = fmix32(h1 ^ end) * 2097152 + (fmix32(h2 ^ b) >>> 11);
  }
  return keys;
}
