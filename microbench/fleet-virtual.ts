/**
 * Replays 10,000 requests with 10,000-token prompts through 7 virtual instances and prints the
 * wall-clock time: the speed requirement of the virtual fleet (well under a minute).
 *
 *   npx tsx microbench/fleet-virtual.ts [requests=10000] [promptTokens=10000] [instances=7]
 *
 * Workload: 20 shared 8,000-token documents (a RAG/support-assistant shape) each followed by a
 * unique question, 200 output tokens, Poisson arrivals at 5 requests/s, each request sent to
 * the instance `document mod instances` (perfect prefix affinity, so the cache does real work:
 * hits, misses and LRU eviction).
 */

import { performance } from "node:perf_hooks";
import { VirtualFleet, type VirtualResult } from "../tools/fleet/index.js";
import { createRandom } from "../tools/sim/random.js";

const requests = Number(process.argv[2] ?? 10_000);
const promptTokens = Number(process.argv[3] ?? 10_000);
const instances = Number(process.argv[4] ?? 7);
const documents = 20;
const rng = createRandom(1);

const docChars = Math.min(8_000, promptTokens - 100) * 4;
const docs = Array.from({ length: documents }, (_, d) => {
  let s = "";
  while (s.length < docChars) s += `Document ${d} paragraph ${s.length}: the policy text continues here. `;
  return s.slice(0, docChars);
});

const t0 = performance.now();
const fleet = new VirtualFleet({ instances, seed: 1 });
const ids = fleet.instanceIds();
const results: VirtualResult[] = [];
let at = 0;
for (let i = 0; i < requests; i++) {
  at += -Math.log(1 - rng()) * 200;
  const d = Math.floor(rng() * documents);
  const head = ` Question ${i}: `;
  const prompt = docs[d]! + (head + `q${i} `.repeat(promptTokens)).slice(0, promptTokens * 4 - docChars);
  fleet.advanceTo(at);
  fleet.submit(ids[d % ids.length]!, { id: i, prompt, outputTokens: 200 }, { onDone: (r) => results.push(r) });
}
fleet.runUntilIdle();
const elapsed = performance.now() - t0;

const ttft = results.map((r) => r.firstTokenMs - r.arrivalMs).sort((a, b) => a - b);
const q = (p: number) => ttft[Math.min(ttft.length - 1, Math.floor(p * ttft.length))]!.toFixed(1);
const prompt = results.reduce((s, r) => s + r.promptTokens, 0);
const cached = results.reduce((s, r) => s + r.cachedTokens, 0);
console.log(
  `${results.length} requests × ${promptTokens} prompt tokens × ${instances} instances: ` +
    `${(elapsed / 1000).toFixed(2)} s wall clock, ${(fleet.now / 1000).toFixed(0)} s virtual`,
);
console.log(`TTFT p50 ${q(0.5)} ms, p90 ${q(0.9)} ms, p99 ${q(0.99)} ms; cache hit rate ${((100 * cached) / prompt).toFixed(1)} %`);
