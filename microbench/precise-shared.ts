/** What the precise-* micro-benchmarks share: the fixture tokenizer, a 32 KB conversation, percentiles. */
import { readFileSync } from "node:fs";
import { Tokenizer } from "@huggingface/tokenizers";

export const DIR = "test/fixtures/precise-tokenizer";
export const FILES = { tokenizerJson: `${DIR}/tokenizer.json`, tokenizerConfig: `${DIR}/tokenizer_config.json` };
export const reference = new Tokenizer(JSON.parse(readFileSync(FILES.tokenizerJson, "utf8")), JSON.parse(readFileSync(FILES.tokenizerConfig, "utf8")));

const WORDS = ["router", "engine", "block", "cache", "prefix", "token", "request", "the", "of", "holds", "longest", "run", "événement", "données", "2026", "sends", "each", "and", "question", "answer"];

/** Deterministic text of about `chars` characters (a seeded word salad). */
export function text(chars: number, seed: number): string {
  let s = seed >>> 0 || 1;
  const out: string[] = [];
  let n = 0;
  while (n < chars) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    const w = WORDS[s % WORDS.length] as string;
    out.push(w);
    n += w.length + 1;
  }
  return out.join(" ");
}

/** A conversation of about `chars` characters: a system document, then `turns` question/answer pairs, ending on a user message. */
export function conversation(seed: number, chars = 32_000, turns = 8): { role: string; content: string }[] {
  const messages = [{ role: "system", content: text(chars - turns * 400, seed) }];
  for (let t = 0; t < turns; t++) {
    messages.push({ role: "user", content: text(150, seed * 100 + t) });
    if (t < turns - 1) messages.push({ role: "assistant", content: text(230, seed * 1000 + t) });
  }
  return messages;
}

export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
}
