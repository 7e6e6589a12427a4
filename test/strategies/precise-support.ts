/**
 * What the `precise-prefix` tests share: the fixture tokenizer, a conversation, its tokens, a
 * `BlockStored` for them, and a router with a fake feed whose sink the test drives.
 */
import { readFileSync } from "node:fs";
import { Tokenizer } from "@huggingface/tokenizers";
import { createRouter, type RouterOptions } from "prefix-router";
import type { BlockStored, KvEventSink } from "../../src/kv-events/events.js";
import type { PrecisePrefix } from "../../src/strategies/precise-prefix/strategy.js";
import { FakeClock } from "../support.js";

export const DIR = "test/fixtures/precise-tokenizer";
export const FILES = { tokenizerJson: `${DIR}/tokenizer.json`, tokenizerConfig: `${DIR}/tokenizer_config.json` };
export const reference = new Tokenizer(JSON.parse(readFileSync(FILES.tokenizerJson, "utf8")), JSON.parse(readFileSync(FILES.tokenizerConfig, "utf8")));
export const chatml = (messages: { role: string; content: string }[]) =>
  `${messages.map((m) => `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`).join("")}<|im_start|>assistant\n`;
export const B = 4;
export const DOC = "The router sends each request to the engine that holds the longest run of its blocks. ".repeat(4);
export const conversation = (question: string) => ({ model: "m", messages: [{ role: "system", content: DOC }, { role: "user", content: question }] });
export const tokensOf = (body: { messages: { role: string; content: string }[] }): number[] => reference.encode(chatml(body.messages), { add_special_tokens: false }).ids;

/** BlockStored for the first `blocks` blocks of `tokens`, in one event, with the engine's own (made-up) hashes. */
export function stored(tokens: number[], blocks: number, salt = 0n): BlockStored {
  return {
    type: "BlockStored",
    blockHashes: Array.from({ length: blocks }, (_, k) => 1_000_000n * salt + BigInt(k + 1)),
    parentBlockHash: undefined,
    tokenIds: tokens.slice(0, blocks * B),
    blockSize: B,
    loraName: undefined,
    medium: "GPU",
  };
}

/** A router with the fixture tokenizer, a fake feed (`inSync` from a set) and the strategy object. */
export async function setup(extra: Partial<RouterOptions> = {}, precise: Record<string, unknown> = {}) {
  const clock = new FakeClock(1000);
  const synced = new Set(["a", "b", "c"]);
  let sink: KvEventSink | undefined;
  let strategy: PrecisePrefix | undefined;
  const warnings: string[] = [];
  const router = await createRouter({
    targets: [{ id: "a" }, { id: "b" }, { id: "c" }],
    strategy: (env) => (strategy = env.create("precise-prefix") as unknown as PrecisePrefix) as never,
    precisePrefix: {
      tokenizer: FILES,
      blockSize: B,
      model: "m",
      worker: false,
      pendingTtlMs: 5000,
      feed: (s) => {
        sink = s;
        return { inSync: (e: string) => synced.has(e), stats: () => ({ eventsPerSecond: 0 }) };
      },
      ...precise,
    },
    clock,
    random: () => 0.5,
    logger: { debug() {}, info() {}, warn: (m: string) => warnings.push(m), error() {} },
    ...extra,
  });
  const s = strategy as PrecisePrefix;
  await s.ready;
  const apply = (engine: string, event: BlockStored) => sink?.apply(engine, { ts: 0, events: [event], dataParallelRank: undefined });
  return { router, strategy: s, clock, synced, apply, warnings, sink: sink as KvEventSink };
}

