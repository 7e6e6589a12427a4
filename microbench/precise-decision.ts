/**
 * Event-loop time of a `precise-prefix` decision for the next turn of a 32 KB conversation whose
 * earlier turns were tokenized: `route()` + `release()` (render the chat template, find the
 * earlier turns' segments in the cache, hash the known blocks, query the index, place), 7 engines
 * in sync, each conversation held by one engine (its events applied). The new turn's message is
 * queued for the worker and is not part of the decision.
 *
 *   npx tsx microbench/precise-decision.ts [--conversations=200] [--targets=7]
 */
import { createRouter } from "prefix-router";
import type { KvEventSink } from "../src/kv-events/events.js";
import type { PrecisePrefix } from "../src/strategies/precise-prefix/strategy.js";
import { FILES, conversation, percentile, reference } from "./precise-shared.js";

const arg = (name: string, d: number) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? d);
const N = arg("conversations", 200);
const T = arg("targets", 7);
const B = 16;

let sink: KvEventSink | undefined;
let strategy: PrecisePrefix | undefined;
const router = await createRouter({
  targets: Array.from({ length: T }, (_, i) => ({ id: `e${i}` })),
  strategy: (env) => (strategy = env.create("precise-prefix") as unknown as PrecisePrefix) as never,
  // In-thread tokenization (one batch per macrotask, after the timed loop): nothing of ours runs
  // beside the timed decisions; microbench/precise-cold.ts times the worker.
  precisePrefix: { tokenizer: FILES, blockSize: B, model: "m", worker: false, feed: (s) => ((sink = s), { inSync: () => true }) },
});
await strategy!.ready;
const chatml = (ms: { role: string; content: string }[]) => `${ms.map((m) => `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`).join("")}<|im_start|>assistant\n`;

// Earlier turns: tokenized (through the strategy's own tokenizer) and held by one engine each.
const convs = Array.from({ length: N }, (_, k) => conversation(k + 1));
let chars = 0;
for (const [k, messages] of convs.entries()) {
  await strategy!.tokens!.tokenize({ messages });
  const ids = reference.encode(chatml(messages), { add_special_tokens: false }).ids as number[];
  const n = Math.floor(ids.length / B);
  sink!.apply(`e${k % T}`, { ts: 0, dataParallelRank: undefined, events: [{ type: "BlockStored", blockHashes: Array.from({ length: n }, (_, j) => BigInt(k * 100_000 + j + 1)), parentBlockHash: undefined, tokenIds: ids.slice(0, n * B), blockSize: B, loraName: undefined, medium: "GPU" }] });
  chars += chatml(messages).length;
}
// The next turn: the assistant's answer and a new question, never seen.
const next = convs.map((messages, k) => ({ model: "m", messages: [...messages, { role: "assistant", content: `Answer ${k}.` }, { role: "user", content: `And a follow-up question number ${k}?` }] }));
// The earlier turn was routed (as it was in production), then its follow-up is decided: timed, once each.
for (const messages of convs) router.route({ body: { model: "m", messages } }).release("success");
const times: number[] = [];
let right = 0;
// Where the time goes, by strategy step (wrapped: the wrapper's own cost is a few hundred ns).
const spent = { read: [] as number[], pick: [] as number[], commit: [] as number[] };
const st = strategy as unknown as Record<"read" | "pick" | "commit", (...a: unknown[]) => unknown>;
for (const step of ["read", "pick", "commit"] as const) {
  const f = st[step].bind(strategy);
  st[step] = (...a: unknown[]) => {
    const t0 = performance.now();
    const out = f(...a);
    spent[step].push((performance.now() - t0) * 1000);
    return out;
  };
}
const cpu0 = process.cpuUsage();
for (const [k, body] of next.entries()) {
  const t0 = performance.now();
  const lease = router.route({ body });
  lease.release("success");
  times.push((performance.now() - t0) * 1000);
  if (lease.target.id === `e${k % T}`) right++;
}
const cpu = process.cpuUsage(cpu0);
const stats = router.stats().precise!;
console.log(`precise-prefix decision, next turn of a ${(chars / N / 1000).toFixed(1)} KB conversation (earlier turns tokenized), ${T} engines, ${N} conversations`);
console.log(`  route()+release(): median ${percentile(times, 50).toFixed(1)} µs, p90 ${percentile(times, 90).toFixed(1)} µs, p99 ${percentile(times, 99).toFixed(1)} µs (goal ≤ 200 µs); CPU ${((cpu.user + cpu.system) / N).toFixed(1)} µs per decision (mean, immune to preemption)`);
console.log(`  median by step: read ${percentile(spent.read, 50).toFixed(1)} µs (render, segment keys, chain hashes), pick ${percentile(spent.pick, 50).toFixed(1)} µs (index walk, placement), commit ${percentile(spent.commit, 50).toFixed(1)} µs`);
console.log(`  machine: load average ${(await import("node:os")).loadavg().map((x) => x.toFixed(1)).join(" ")} on ${(await import("node:os")).cpus().length} cores`);
console.log(`  sent to the holder: ${right} of ${N}; routed precisely ${stats.routed.precise}, approximately ${stats.routed.approximate}; index ${stats.index.held} blocks, ${stats.index.bytesPerBlock.toFixed(1)} B/block`);
await strategy!.close();
