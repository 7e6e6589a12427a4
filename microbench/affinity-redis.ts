/**
 * What shared response affinity (`responseAffinity.store`, Redis) costs per request.
 *
 *   npx tsx microbench/affinity-redis.ts                       # a redis-server from PATH, on loopback
 *   npx tsx microbench/affinity-redis.ts --redis redis://127.0.0.1:6379 --n 20000
 *
 * The response-path write is the median of 5 interleaved rounds; the others are one pass each.
 *
 * Measured side by side in one run, same process, same ids:
 *
 * - write, on the response path: `remember(id, target)` as the response's first event calls it —
 *   the local map only, then with the store (the map insert and the queued write; the `SET` goes
 *   out in a microtask after it).
 * - write, everything: one response per event-loop turn, the `SET` sent and its answer read, CPU
 *   time of the process per response (`process.cpuUsage`), minus the same loop without the store.
 * - read, on a local miss: a follow-up whose id this process does not know waits for one `GETRANGE`
 *   (loopback round trip), found and not found; the local map's lookup beside it.
 *
 * Loopback Redis: a real network adds its round trip to the read (the wait is bounded by
 * `timeoutMs`, 50 ms by default); the write's cost stays CPU only.
 */
import { spawn, spawnSync } from "node:child_process";
import { createServer } from "node:net";
import { ResponseAffinity } from "../src/openai/responses.js";
import { openResponseStore, resolveResponseStore } from "../src/openai/response-store.js";

const args = new Map<string, string>();
for (let k = 2; k < process.argv.length; k += 2) args.set(process.argv[k]!.replace(/^--/, ""), process.argv[k + 1] ?? "");
const N = Number(args.get("n") ?? 20_000);
const clock = { now: () => performance.now() };

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

let url = args.get("redis");
let stopRedis = (): void => {};
if (url === undefined) {
  if (spawnSync("redis-server", ["--version"], { stdio: "ignore" }).status !== 0) throw new Error("no redis-server on PATH: pass --redis URL");
  const port = await freePort();
  const proc = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdio: "ignore" });
  stopRedis = () => void proc.kill("SIGKILL");
  url = `redis://127.0.0.1:${port}`;
  await new Promise((r) => setTimeout(r, 300));
}

const config = resolveResponseStore({ source: "redis", url, keyPrefix: `bench-${process.pid}`, timeoutMs: 1000 });
const local = new ResponseAffinity({ maxEntries: 100_000 });
const shared = new ResponseAffinity({ maxEntries: 100_000 }, await openResponseStore(config, clock));
const isTarget = (id: string): boolean => id === "vllm-3";
const ids = (tag: string): string[] => Array.from({ length: N }, (_, i) => `resp_${tag}_${i.toString(16).padStart(24, "0")}`);
const macrotask = (): Promise<void> => new Promise((r) => setImmediate(r));

/** µs per call of `f` over `list`, synchronous, in runs of 500 calls (as responses arrive) with an event-loop turn between runs (not timed). */
async function timeSync(list: string[], f: (id: string) => void): Promise<number> {
  let ms = 0;
  for (let i = 0; i < list.length; i += 500) {
    const t0 = performance.now();
    for (let j = i; j < Math.min(i + 500, list.length); j++) f(list[j]!);
    ms += performance.now() - t0;
    await macrotask();
  }
  return (ms * 1000) / list.length;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ROUNDS = 5;

/** CPU µs per response when each response is its own event-loop turn. */
async function cpuPerTurn(list: string[], f: (id: string) => void): Promise<number> {
  const c0 = process.cpuUsage();
  for (const id of list) {
    f(id);
    await macrotask();
  }
  await new Promise((r) => setTimeout(r, 50)); // the last answers
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / list.length;
}

/** µs per awaited call of `f` over `list`, one after the other. */
async function timeAsync(list: string[], f: (id: string) => Promise<unknown>): Promise<{ mean: number; p50: number; p99: number }> {
  const samples: number[] = [];
  for (const id of list) {
    const t0 = performance.now();
    await f(id);
    samples.push((performance.now() - t0) * 1000);
  }
  samples.sort((a, b) => a - b);
  return { mean: samples.reduce((a, b) => a + b, 0) / samples.length, p50: samples[Math.floor(samples.length / 2)]!, p99: samples[Math.floor(samples.length * 0.99)]! };
}

// Warm-up (JIT, connection).
await timeSync(ids("warm"), (id) => local.remember(id, "vllm-3"));
await timeSync(ids("warm"), (id) => shared.remember(id, "vllm-3"));
await timeAsync(ids("warm").slice(0, 2000), (id) => shared.fromStore(id, isTarget));

const f = (n: number): string => n.toFixed(2).padStart(8);
console.log(`response affinity with a Redis store (${url}), ${N} ids per row, node ${process.version}\n`);
console.log("write, on the response path (remember)          µs/response");
// Interleaved rounds, the median of each: the order of the two does not favour either.
const wl: number[] = [];
const ws: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  wl.push(await timeSync(ids(`a${r}`), (id) => local.remember(id, "vllm-3")));
  ws.push(await timeSync(ids(`b${r}`), (id) => shared.remember(id, "vllm-3")));
}
const [wLocal, wShared] = [median(wl), median(ws)];
await new Promise((r) => setTimeout(r, 100));
console.log(`  local map only                               ${f(wLocal)}`);
console.log(`  local map + store (queued write)             ${f(wShared)}   ratio ${(wShared / wLocal).toFixed(1)}×`);

console.log("\nwrite, everything (SET sent, answer read)       CPU µs/response");
const cLocal = await cpuPerTurn(ids("c"), (id) => local.remember(id, "vllm-3"));
const cShared = await cpuPerTurn(ids("d"), (id) => shared.remember(id, "vllm-3"));
console.log(`  local map only                               ${f(cLocal)}`);
console.log(`  local map + store                            ${f(cShared)}   the store's share ${f(cShared - cLocal)}`);

console.log("\nread, a follow-up's id not in the local map     µs/request (mean, p50, p99)");
const known = ids("d");
const rLocal = await timeSync(known, (id) => void shared.targetOf(id));
const hit = await timeAsync(known, (id) => shared.fromStore(id, isTarget));
const miss = await timeAsync(ids("missing"), (id) => shared.fromStore(id, isTarget));
console.log(`  local map hit (no store read)                ${f(rLocal)}`);
console.log(`  store hit (GETRANGE, loopback)               ${f(hit.mean)} ${f(hit.p50)} ${f(hit.p99)}`);
console.log(`  store miss                                   ${f(miss.mean)} ${f(miss.p50)} ${f(miss.p99)}`);
console.log(`\nstore stats: ${JSON.stringify(shared.stats().store)}`);
await shared.close();
stopRedis();
