/**
 * The live check: four application processes, each embedding a router with the `redis` load
 * view, send streams that all share one prompt prefix to the live emulated fleet. Fleet-wide,
 * no instance holds more than concurrencyThreshold × 1.1 requests at steady state — one process
 * alone would fill it, four on their local views would put everything on the prefix's first
 * choice — and after one process is killed mid-stream its counts leave Redis once its lease
 * expires (leaseTtlMs 2000), with zero left after the others close.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LiveFleet, startFleet } from "prefix-router/fleet";
import { REDIS_SKIP_REASON, eventually, redisForTests } from "./redis-server.js";

const PROCESSES = 4;
const CONCURRENCY = 10;
const THRESHOLD = 20;
const worker = fileURLToPath(new URL("./live-worker.ts", import.meta.url));

interface Worker {
  proc: ChildProcess;
  lines: string[];
}

function startWorker(args: string[]): Worker {
  const proc = spawn(process.execPath, ["--import", "tsx", worker, ...args], { stdio: ["pipe", "pipe", "inherit"] });
  const w: Worker = { proc, lines: [] };
  createInterface({ input: proc.stdout! }).on("line", (l) => w.lines.push(l));
  return w;
}

async function stopWorker(w: Worker): Promise<{ completed: number; failed: number }> {
  w.proc.stdin!.write("stop\n");
  await eventually(() => w.lines.length >= 2);
  return JSON.parse(w.lines[1]!) as { completed: number; failed: number };
}

describe.skipIf(REDIS_SKIP_REASON !== undefined)("live: several processes share one Redis load view", () => {
  let server: { url: string; stop(): Promise<void> };
  let fleet: LiveFleet;
  let redis: Redis;
  beforeAll(async () => {
    server = await redisForTests();
    redis = new Redis(server.url);
    fleet = await startFleet({ instances: 4, timeScale: 0.1 });
  });
  afterAll(async () => {
    redis?.disconnect();
    await fleet?.stop();
    await server?.stop();
  });

  it(`${PROCESSES} processes: in flight per instance ≤ threshold × 1.1 at steady state; a killed process leaves no counts`, async () => {
    const prefix = randomUUID();
    const workers = Array.from({ length: PROCESSES }, (_, k) =>
      startWorker([server.url, prefix, `w${k}`, JSON.stringify(fleet.urls), String(CONCURRENCY), String(THRESHOLD)]),
    );
    const total = async () => {
      const h = await redis.hgetall(`{${prefix}}:total`);
      return Object.fromEntries(Object.entries(h).map(([k, v]) => [k, Number(v)]));
    };
    try {
      await eventually(() => workers.every((w) => w.lines[0] === "ready"));
      // Steady state: every instance has served requests since the start.
      const served = () => Object.values(fleet.stats()).map((s) => s.completed);
      const start = served();
      await eventually(() => served().every((n, i) => n >= start[i]! + 5) || served().reduce((a, b) => a + b, 0) > 200);
      let maxEngine = 0;
      let maxRedis = 0;
      let samples = 0;
      const before = served().reduce((a, b) => a + b, 0);
      await eventually(async () => {
        for (const s of Object.values(fleet.stats())) maxEngine = Math.max(maxEngine, s.running + s.waiting);
        for (const [field, n] of Object.entries(await total())) if (field.startsWith("n:")) maxRedis = Math.max(maxRedis, n);
        samples++;
        return served().reduce((a, b) => a + b, 0) >= before + 600;
      });
      console.log(`live: ${samples} samples; max in flight on one instance: ${maxEngine} (engine), ${maxRedis} (Redis); threshold ${THRESHOLD}`);
      expect(maxEngine).toBeLessThanOrEqual(THRESHOLD * 1.1);
      expect(maxRedis).toBeLessThanOrEqual(THRESHOLD * 1.1);
      // More than one instance took the prefix: the shared view spilled it.
      expect(Object.values(fleet.stats()).filter((s) => s.completed > 0).length).toBeGreaterThan(1);

      // Kill one process mid-stream: its leases are in Redis until its heartbeat expires.
      const victim = workers[0]!;
      await eventually(async () => (await redis.hlen(`{${prefix}}:proc:w0`)) > 0);
      const leftAtKill = Number(await redis.hlen(`{${prefix}}:proc:w0`));
      victim.proc.kill("SIGKILL");
      const killedAt = performance.now();
      expect(await redis.exists(`{${prefix}}:proc:w0`)).toBe(1);
      await eventually(async () => (await redis.exists(`{${prefix}}:proc:w0`)) === 0);
      console.log(`live: killed w0 with counts on ${leftAtKill} instance(s); its counts left Redis ${Math.round(performance.now() - killedAt)} ms later (leaseTtlMs 2000)`);
      expect(await redis.sismember(`{${prefix}}:procs`, "w0")).toBe(0);
      // The total is again the sum of the live processes' counts.
      const results = await Promise.all(workers.slice(1).map(stopWorker));
      expect(results.every((r) => r.failed === 0)).toBe(true);
      expect(await total()).toEqual({});
      expect(await redis.keys(`{${prefix}}:*`)).toEqual([]);
    } finally {
      for (const w of workers) if (w.proc.exitCode === null) w.proc.kill("SIGKILL");
    }
  }, 180_000);
});
