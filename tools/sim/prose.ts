/**
 * English-like text drawn from a seed: sentences of 6–14 words from a fixed list of business
 * words, each capitalised and ended by a number and a period. The real-engine bench's prompts are
 * made of it, and the tiny llama model's tokenizer (fleet/llama/bpe.ts) learns its merges from it.
 */
import type { Rng } from "./random.js";

export const PROSE_WORDS = (
  "account audit balance batch billing branch budget cache claim client cluster contract credit " +
  "customer deadline delivery deposit device dispute escalate export field filing freight grant " +
  "holder invoice journal ledger license limit margin merchant notice order owner partner payment " +
  "period policy portal premium quota rebate record refund region renewal report request reserve " +
  "retention review schedule segment service settlement shipment storage supplier support tariff " +
  "tenant ticket transfer upgrade vendor voucher warranty window"
).split(" ");

/** About `chars` characters of sentences drawn from `rng`, cut at `chars`. */
export function prose(rng: Rng, chars: number): string {
  let out = "";
  while (out.length < chars) {
    const n = rng.intBetween(6, 14);
    const words = Array.from({ length: n }, () => PROSE_WORDS[rng.int(PROSE_WORDS.length)]!);
    words[0] = words[0]!.charAt(0).toUpperCase() + words[0]!.slice(1);
    out += `${words.join(" ")} ${rng.intBetween(1, 999)}. `;
  }
  return out.slice(0, chars);
}
