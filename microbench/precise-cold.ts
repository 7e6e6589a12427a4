/**
 * A cold 32 KB prompt: how long its tokenization takes off the event loop (a worker thread), and
 * what the event loop pays meanwhile — the decision itself (routed on `longest-prefix` while the
 * prompt is cold) and the largest event-loop delay seen while the worker runs.
 *
 *   npx tsx microbench/precise-cold.ts [--prompts=10]
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import { createRouter } from "prefix-router";
import type { PrecisePrefix } from "../src/strategies/precise-prefix/strategy.js";
import { FILES, conversation, percentile } from "./precise-shared.js";

const N = Number(process.argv.find((a) => a.startsWith("--prompts="))?.split("=")[1] ?? 10);
let strategy: PrecisePrefix | undefined;
const router = await createRouter({
  targets: Array.from({ length: 7 }, (_, i) => ({ id: `e${i}` })),
  strategy: (env) => (strategy = env.create("precise-prefix") as unknown as PrecisePrefix) as never,
  precisePrefix: { tokenizer: FILES, model: "m", worker: true, feed: () => ({ inSync: () => true }) },
});
await strategy!.ready;
const tk = strategy!.tokens!;
// Start the worker (its first batch loads the tokenizer there).
await tk.tokenize({ messages: [{ role: "user", content: "warm up" }] });

const decide: number[] = [];
const wall: number[] = [];
const delays: number[] = [];
for (let k = 0; k < N; k++) {
  const body = { model: "m", messages: conversation(10_000 + k, 32_000, 1) };
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  const t0 = performance.now();
  const lease = router.route({ body }); // cold: routed on longest-prefix, the prompt queued for the worker
  decide.push((performance.now() - t0) * 1000);
  lease.release("success");
  await tk.settled();
  wall.push(performance.now() - t0);
  h.disable();
  delays.push(h.max / 1e6);
  const again = router.route({ body }, { explain: true });
  if (again.reason?.matchedBy === undefined) throw new Error("the prompt should route precisely once tokenized");
  again.release("success");
}
const s = tk.stats();
console.log(`cold 32 KB prompt (${(s.tokenizedChars / s.tokenized / 1000).toFixed(1)} KB per segment), tokenized in a worker, ${N} prompts`);
console.log(`  time to tokens (queue → cached): median ${percentile(wall, 50).toFixed(1)} ms, max ${Math.max(...wall).toFixed(1)} ms`);
console.log(`  event loop: the cold decision median ${percentile(decide, 50).toFixed(1)} µs; largest event-loop delay while the worker ran: median ${percentile(delays, 50).toFixed(2)} ms`);
console.log(`  machine: load average ${(await import("node:os")).loadavg().map((x) => x.toFixed(1)).join(" ")} on ${(await import("node:os")).cpus().length} cores`);
await strategy!.close();
