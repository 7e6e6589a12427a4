/**
 * The KV-event index alone: events applied per second (BlockStored chains of 4 blocks of 16 tokens
 * with their parents, and the BlockRemoved that evict them), and bytes per held block when full.
 *
 *   npx tsx microbench/precise-index.ts [--capacity=1048576] [--engines=8]
 */
import { KvBlockIndex } from "../src/kv-events/block-index.js";
import type { KvEvent } from "../src/kv-events/events.js";

const arg = (name: string, d: number) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? d);
const CAP = arg("capacity", 1 << 20);
const E = arg("engines", 8);
const B = 16;
const index = new KvBlockIndex({ blockSize: B, capacityBlocks: CAP, model: "m", pendingTtlMs: 10_000, pendingCapacity: 65_536 });

// Prebuilt events: per engine, prompts of 8 blocks published as 2 events of 4 blocks (the second chained to the first).
const PROMPTS = 4096;
const events: { engine: string; event: KvEvent }[] = [];
for (let p = 0; p < PROMPTS; p++) {
  const engine = `e${p % E}`;
  const tokens = Array.from({ length: 8 * B }, (_, i) => (p * 7919 + i * 31) % 50_000);
  const h = (j: number) => BigInt(p) * 16n + BigInt(j) + 1n;
  for (const [from, to] of [[0, 4], [4, 8]] as const) {
    events.push({ engine, event: { type: "BlockStored", blockHashes: [0, 1, 2, 3].map((j) => h(from + j)), parentBlockHash: from === 0 ? undefined : h(from - 1), tokenIds: tokens.slice(from * B, to * B), blockSize: B, loraName: undefined, medium: "GPU" } });
  }
}
const removals = events.map(({ engine, event }) => ({ engine, event: { type: "BlockRemoved", blockHashes: (event as unknown as { blockHashes: bigint[] }).blockHashes, medium: "GPU" } as KvEvent }));

let applied = 0;
let blocks = 0;
const t0 = performance.now();
for (let round = 0; round < 10; round++) {
  for (const { engine, event } of events) index.apply(engine, { ts: 0, events: [event], dataParallelRank: undefined });
  for (const { engine, event } of removals) index.apply(engine, { ts: 0, events: [event], dataParallelRank: undefined });
  applied += events.length + removals.length;
  blocks += 8 * PROMPTS;
}
const s1 = (performance.now() - t0) / 1000;
console.log(`KV-event index, ${E} engines: ${(applied / s1 / 1000).toFixed(0)}k events/s (BlockStored of 4 blocks and their BlockRemoved, half each; ${((2 * blocks) / s1 / 1e6).toFixed(2)}M block operations/s)`);

// Fill to capacity: bytes per held block.
let p = 0;
const tokens = new Array<number>(8 * B);
const t1 = performance.now();
let stored = 0;
while (index.held < CAP) {
  for (let i = 0; i < tokens.length; i++) tokens[i] = (p * 7919 + i * 31) % 50_000;
  const base = BigInt(p) * 16n + 1_000_000_000n;
  index.apply(`e${p % E}`, { ts: 0, dataParallelRank: undefined, events: [{ type: "BlockStored", blockHashes: Array.from({ length: 8 }, (_, j) => base + BigInt(j)), parentBlockHash: undefined, tokenIds: tokens, blockSize: B, loraName: undefined, medium: "GPU" }] });
  p++;
  stored++;
}
const s2 = (performance.now() - t1) / 1000;
const st = index.stats();
console.log(`filled to ${st.held.toLocaleString("en")} blocks (${(stored / s2 / 1000).toFixed(0)}k BlockStored of 8 blocks/s): ${(st.bytes / 1e6).toFixed(1)} MB, ${st.bytesPerBlock.toFixed(1)} bytes per held block (goal ≤ 64), evicted ${st.evicted}`);
console.log(`  machine: load average ${(await import("node:os")).loadavg().map((x) => x.toFixed(1)).join(" ")} on ${(await import("node:os")).cpus().length} cores`);
