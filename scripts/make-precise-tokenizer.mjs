/**
 * Builds test/fixtures/precise-tokenizer/: a small but real byte-level BPE (GPT-2's scheme: the
 * GPT-2 pre-tokenizer regex, bytes mapped to printable characters, merges learned greedily from a
 * corpus) with ChatML special tokens and a ChatML chat template — the files a user points
 * `precisePrefix.tokenizer` at (tokenizer.json, tokenizer_config.json).
 *
 * Deterministic: the corpus is below, merges are taken by count then lexical order.
 * Run: node scripts/make-precise-tokenizer.mjs
 */
import { mkdirSync, writeFileSync } from "node:fs";

const MERGES = 600;
const OUT = new URL("../test/fixtures/precise-tokenizer/", import.meta.url);

const CORPUS = `
The router sends each request to the engine that holds the longest run of its blocks.
An engine publishes the blocks it stores and removes; the index keeps what each engine holds.
You are a helpful assistant. Answer the question using the document below.
The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs.
Prefix caching reuses the key and value tensors of a prompt's leading tokens across requests.
def route(request): return max(engines, key=lambda e: e.match(request.blocks))
Les requêtes partagent un long préfixe : le document, puis la question. Ça marche, très bien.
Numbers 0123456789 and 2026-12-06, 16 tokens per block, 1,048,576 blocks, 64 bytes each.
`.repeat(3);

function bytesToUnicode() {
  const bs = [];
  for (let b = 33; b <= 126; b++) bs.push(b);
  for (let b = 161; b <= 172; b++) bs.push(b);
  for (let b = 174; b <= 255; b++) bs.push(b);
  const cs = [...bs];
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!bs.includes(b)) {
      bs.push(b);
      cs.push(256 + n++);
    }
  }
  const map = new Map();
  bs.forEach((b, i) => map.set(b, String.fromCodePoint(cs[i])));
  return map;
}

const PAT = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;
const b2u = bytesToUnicode();
const enc = new TextEncoder();
const words = new Map();
for (const w of CORPUS.match(PAT)) {
  const symbols = [...enc.encode(w)].map((b) => b2u.get(b));
  const key = symbols.join("\u0000");
  words.set(key, (words.get(key) ?? 0) + 1);
}
let split = [...words].map(([k, c]) => [k.split("\u0000"), c]);
const vocab = new Map();
for (let b = 0; b < 256; b++) vocab.set(b2u.get(b), vocab.size);
const merges = [];
for (let m = 0; m < MERGES; m++) {
  const pairs = new Map();
  for (const [syms, c] of split) {
    for (let i = 0; i + 1 < syms.length; i++) {
      const p = `${syms[i]}\u0000${syms[i + 1]}`;
      pairs.set(p, (pairs.get(p) ?? 0) + c);
    }
  }
  let best;
  let bestCount = 1;
  for (const [p, c] of pairs) if (c > bestCount || (c === bestCount && best !== undefined && p < best)) [best, bestCount] = [p, c];
  if (best === undefined) break;
  const [a, b] = best.split("\u0000");
  merges.push([a, b]);
  vocab.set(a + b, vocab.size);
  split = split.map(([syms, c]) => {
    const out = [];
    for (let i = 0; i < syms.length; i++) {
      if (i + 1 < syms.length && syms[i] === a && syms[i + 1] === b) {
        out.push(a + b);
        i++;
      } else out.push(syms[i]);
    }
    return [out, c];
  });
}

const specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"];
const added = specials.map((content, k) => ({ id: vocab.size + k, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }));
const tokenizer = {
  version: "1.0",
  truncation: null,
  padding: null,
  added_tokens: added,
  normalizer: null,
  pre_tokenizer: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
  post_processor: { type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: true },
  decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
  model: {
    type: "BPE",
    dropout: null,
    unk_token: null,
    continuing_subword_prefix: null,
    end_of_word_suffix: null,
    fuse_unk: false,
    byte_fallback: false,
    ignore_merges: false,
    vocab: Object.fromEntries(vocab),
    merges,
  },
};
const config = {
  tokenizer_class: "PreTrainedTokenizerFast",
  model_max_length: 32768,
  bos_token: null,
  eos_token: "<|im_end|>",
  pad_token: "<|endoftext|>",
  unk_token: null,
  add_bos_token: false,
  clean_up_tokenization_spaces: false,
  added_tokens_decoder: Object.fromEntries(added.map((t) => [String(t.id), { ...t, id: undefined }])),
  chat_template:
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
};
mkdirSync(OUT, { recursive: true });
writeFileSync(new URL("tokenizer.json", OUT), `${JSON.stringify(tokenizer, null, 1)}\n`);
writeFileSync(new URL("tokenizer_config.json", OUT), `${JSON.stringify(config, null, 2)}\n`);
console.log(`vocab ${vocab.size} + ${added.length} special, ${merges.length} merges`);
