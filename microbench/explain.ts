/**
 * Micro-benchmark of what explaining and shadowing add to a decision: `route()` + `release()`
 * per request with nothing listening, with `explain: true`, with an `onDecision` listener, and
 * with a shadow strategy, side by side in one run (7 targets, text mode, a 2,000-character shared
 * document and a different question per call; threshold 1 on a second set of rows, so every
 * other pick spills and the reason names the first choice).
 *
 *   npx tsx microbench/explain.ts [--time=1000] [--strategy=prefix-aware]
 */
import { Bench } from "tinybench";
import { createRouter, type RouterOptions } from "prefix-router";

const arg = (name: string, fallback: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const TIME_MS = Number(arg("time", "1000"));
const STRATEGY = arg("strategy", "prefix-aware") as RouterOptions["strategy"];
const targets = Array.from({ length: 7 }, (_, i) => ({ id: `t${i}` }));
const doc = "The refund policy covers returns within thirty days with a receipt. ".repeat(30);
const bodies = Array.from({ length: 512 }, (_, i) => ({ model: "m", messages: [{ role: "system", content: `${doc} Document ${i % 16}.` }, { role: "user", content: `Question ${i}?` }] }));

async function task(options: Partial<RouterOptions>, explain: boolean, hold: boolean): Promise<() => void> {
  const router = await createRouter({ targets, strategy: STRATEGY, ...options });
  let k = 0;
  const routeOptions = explain ? { explain: true } : undefined;
  return () => {
    const body = bodies[k++ % bodies.length];
    const lease = router.route({ body }, routeOptions);
    // hold: the next request finds its first choice full half of the time.
    if (!hold) lease.release("success", { promptTokens: 600, cachedTokens: 500 });
    else {
      const second = router.route({ body }, routeOptions);
      second.release("success", { promptTokens: 600, cachedTokens: 500 });
      lease.release("success", { promptTokens: 600, cachedTokens: 500 });
    }
  };
}

const bench = new Bench({ time: TIME_MS, warmupTime: 200 });
for (const hold of [false, true]) {
  const t = hold ? 1 : 32;
  const suffix = hold ? " (threshold 1, spills)" : "";
  bench.add(`nothing listening${suffix}`, await task({ concurrencyThreshold: t }, false, hold));
  bench.add(`explain: true${suffix}`, await task({ concurrencyThreshold: t }, true, hold));
  bench.add(`onDecision${suffix}`, await task({ concurrencyThreshold: t, onDecision: () => {} }, false, hold));
  bench.add(`shadow: longest-prefix${suffix}`, await task({ concurrencyThreshold: t, shadow: "longest-prefix" }, false, hold));
}
await bench.run();
let base = 0;
console.log(`strategy ${STRATEGY}, 7 targets; mean µs per iteration (hold rows: two routes per iteration), ratio to nothing listening`);
for (const t of bench.tasks) {
  const mean = (t.result as { latency?: { mean: number } }).latency?.mean ?? Number.NaN;
  if (t.name.startsWith("nothing")) base = mean;
  console.log(`${t.name.padEnd(48)} ${(mean * 1000).toFixed(2).padStart(9)} µs  ×${(mean / base).toFixed(2)}`);
}
