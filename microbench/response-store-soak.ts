/**
 * Soak benchmark of the shared response store (`responseAffinity.store`) against a frozen Redis:
 * does its memory stay bounded, is what it cannot send dropped and counted, and is nothing stale
 * applied once Redis thaws?
 *
 *   npx tsx microbench/response-store-soak.ts                       # 500 responses/s, 60 s frozen
 *   npx tsx microbench/response-store-soak.ts --rate 1000 --freeze-s 60 --timeout-ms 50
 *
 * A redis-server from PATH, on loopback, that this script owns. The store (the library's own,
 * `timeoutMs` as given) gets `--rate` writes a second — each a response id carrying its creation
 * time, `remember(id, target)` as a response would call it — for `--warm-s` seconds; then Redis
 * is frozen (SIGSTOP) for `--freeze-s` seconds while the writes go on; then thawed (SIGCONT), and
 * the writes go on for `--after-s` seconds. Printed: the achieved rate, the store's counts, the
 * heap after a full GC just before the freeze and at the end (goal: within 10 %), and the keys
 * Redis holds for ids created while it was frozen more than `timeoutMs` before the thaw — each
 * one a write applied after the thaw although older than `timeoutMs` (goal: none).
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createServer } from "node:net";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { Redis } from "ioredis";
import { ResponseAffinity } from "../src/openai/responses.js";
import { openResponseStore, resolveResponseStore } from "../src/openai/response-store.js";

const args = new Map<string, string>();
for (let k = 2; k < process.argv.length; k += 2) args.set(process.argv[k]!.replace(/^--/, ""), process.argv[k + 1] ?? "");
const RATE = Number(args.get("rate") ?? 500);
const WARM_S = Number(args.get("warm-s") ?? 10);
const FREEZE_S = Number(args.get("freeze-s") ?? 60);
const AFTER_S = Number(args.get("after-s") ?? 15);
const TIMEOUT_MS = Number(args.get("timeout-ms") ?? 50);

const gc: () => void =
  (globalThis as { gc?: () => void }).gc ??
  (() => {
    setFlagsFromString("--expose-gc");
    return runInNewContext("gc") as () => void;
  })();
const heapMiB = (): number => {
  gc();
  gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

if (spawnSync("redis-server", ["--version"], { stdio: "ignore" }).status !== 0) throw new Error("no redis-server on PATH");
const port = await new Promise<number>((resolve) => {
  const s = createServer().listen(0, "127.0.0.1", () => {
    const p = (s.address() as { port: number }).port;
    s.close(() => resolve(p));
  });
});
const redis: ChildProcess = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdio: "ignore" });
const url = `redis://127.0.0.1:${port}`;
await sleep(300);
const inspect = new Redis(url);

const keyPrefix = `soak-${process.pid}`;
const config = resolveResponseStore({ source: "redis", url, keyPrefix, timeoutMs: TIMEOUT_MS });
const store = await openResponseStore(config, performance);
const affinity = new ResponseAffinity({ maxEntries: 1000 }, store);

// Writes at RATE per second, spread over every millisecond, catching up after a late timer.
const start = Date.now();
let sent = 0;
let running = true;
const pump = (async () => {
  while (running) {
    const due = Math.floor(((Date.now() - start) * RATE) / 1000);
    for (; sent < due; sent++) affinity.remember(`resp_${Date.now()}_${sent}`, `vllm-${sent % 8}`);
    await sleep(1);
  }
})();

const line = (label: string): void => {
  const s = store.stats();
  console.log(
    `${label.padEnd(14)} t=${((Date.now() - start) / 1000).toFixed(1)}s sent=${sent} writes=${s.writes} writeErrors=${s.writeErrors} dropped=${s.writesDropped} expired=${s.writesExpired} healthy=${s.healthy} heap=${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(1)}MiB`,
  );
};

await sleep(WARM_S * 1000);
const heapBefore = heapMiB();
line("before freeze");
const frozenAt = Date.now();
redis.kill("SIGSTOP");
for (let s = 10; s <= FREEZE_S; s += 10) {
  await sleep(10_000);
  line(`frozen ${s}s`);
}
const thawedAt = Date.now();
redis.kill("SIGCONT");
for (let s = 5; s <= AFTER_S; s += 5) {
  await sleep(5000);
  line(`thawed +${s}s`);
}
running = false;
await pump;
const heapAfter = heapMiB();
const elapsedS = (Date.now() - start) / 1000;

// Keys of ids created while Redis was frozen, more than timeoutMs before the thaw: applied after the thaw, stale.
let stale = 0;
let keys = 0;
let cursor = "0";
do {
  const [next, batch] = await inspect.scan(cursor, "MATCH", `{${keyPrefix}}:resp:*`, "COUNT", 10_000);
  cursor = next;
  for (const key of batch) {
    keys++;
    const created = Number(/resp:resp_(\d+)_/.exec(key)?.[1]);
    if (created >= frozenAt && created < thawedAt - TIMEOUT_MS) stale++;
  }
} while (cursor !== "0");

const s = store.stats();
console.log("");
console.log(`rate: ${(sent / elapsedS).toFixed(0)} responses/s (asked ${RATE}) over ${elapsedS.toFixed(0)} s; frozen ${((thawedAt - frozenAt) / 1000).toFixed(1)} s; timeoutMs ${TIMEOUT_MS}`);
console.log(`store: writes ${s.writes}, writeErrors ${s.writeErrors} (dropped ${s.writesDropped}, expired ${s.writesExpired}), lastError ${JSON.stringify(s.lastError)}`);
console.log(`heap after a full GC: before the freeze ${heapBefore.toFixed(2)} MiB, after the thaw ${heapAfter.toFixed(2)} MiB (${(((heapAfter - heapBefore) / heapBefore) * 100).toFixed(1)} %)`);
console.log(`Redis keys: ${keys}; of ids created while frozen more than timeoutMs before the thaw: ${stale} (goal 0)`);
await affinity.close();
inspect.disconnect();
redis.kill("SIGKILL");
process.exit(0);
