/**
 * The shared response store (`responseAffinity.store`) against a frozen Redis (SIGSTOP), a paused
 * one (`CLIENT PAUSE … WRITE`), this process stalling, and ids built to collide: memory stays
 * bounded and nothing stale is applied after the thaw; start-up waits at most max(1,000 ms,
 * `timeoutMs`); a write Redis answered is never counted failed because this process stalled; a
 * non-streamed answer reaches the caller only once its id is in Redis (or `timeoutMs` passed,
 * counted); an id with a lone surrogate never shares a key with its U+FFFD twin.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { type Server, createServer } from "node:http";
import { createServer as netServer, connect } from "node:net";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRoutedFetch } from "prefix-router/openai";
import { HAS_REDIS_BINARY, eventually } from "../load-view/redis-server.js";
import { RedisResponseStore, responseKey } from "../../src/openai/response-store.js";

const SKIP = HAS_REDIS_BINARY ? undefined : "no redis-server binary on PATH";
if (SKIP !== undefined && process.env["CI"] === "true") throw new Error(`CI=true but ${SKIP}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A redis-server this file owns, which it can freeze (SIGSTOP) and thaw (SIGCONT). */
class FreezableRedis {
  private constructor(
    readonly port: number,
    private readonly proc: ChildProcess,
  ) {}
  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }
  static async start(): Promise<FreezableRedis> {
    const port = await new Promise<number>((resolve) => {
      const s = netServer().listen(0, "127.0.0.1", () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const proc = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdio: "ignore" });
    for (;;) {
      const up = await new Promise<boolean>((resolve) => {
        const c = connect(port, "127.0.0.1");
        c.once("connect", () => (c.end(), resolve(true)));
        c.once("error", () => resolve(false));
      });
      if (up) break;
      await sleep(25);
    }
    return new FreezableRedis(port, proc);
  }
  freeze(): void {
    this.proc.kill("SIGSTOP");
  }
  thaw(): void {
    this.proc.kill("SIGCONT");
  }
  async stop(): Promise<void> {
    if (this.proc.exitCode !== null) return;
    this.proc.kill("SIGCONT");
    await new Promise<void>((resolve) => {
      this.proc.once("exit", () => resolve());
      this.proc.kill("SIGKILL");
    });
  }
}

describe.skipIf(SKIP !== undefined)("the response store under a frozen, paused or stalled Redis", () => {
  let redis: FreezableRedis;
  let raw: Redis;
  let server: Server;
  let baseURL: string;
  let nextId = () => "resp_x";

  beforeAll(async () => {
    redis = await FreezableRedis.start();
    raw = new Redis(redis.url);
    raw.on("error", () => {});
    // A Responses server answering JSON with the id it is given.
    server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ id: nextId(), object: "response", status: "completed", output: [], usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    baseURL = `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`;
  });
  afterAll(async () => {
    raw?.disconnect();
    server?.close();
    await redis?.stop();
  });

  const storeOf = (keyPrefix: string, timeoutMs: number) => new RedisResponseStore({ source: "redis", url: redis.url, keyPrefix, ttlMs: 60_000, timeoutMs }, performance, Redis as never);

  it("a lone surrogate id and its U+FFFD twin get two keys, and each its own target", async () => {
    const keyPrefix = `twins-${randomUUID()}`;
    expect(responseKey(keyPrefix, "\ud800dup")).not.toBe(responseKey(keyPrefix, "\ufffddup"));
    expect(responseKey(keyPrefix, "\udfffdup")).not.toBe(responseKey(keyPrefix, "\ud800dup"));
    const store = storeOf(keyPrefix, 2000);
    await store.ready();
    store.put("\ud800dup", "a");
    store.put("\ufffddup", "b");
    await eventually(() => store.stats().writes === 2);
    expect(await store.get("\ud800dup", () => true)).toBe("a");
    expect(await store.get("\ufffddup", () => true)).toBe("b");
    await store.close();
  });

  it("a write Redis answered is not counted failed after a 1.3 s stall of this process", async () => {
    const store = storeOf(`stall-${randomUUID()}`, 50);
    await store.ready();
    store.put("resp_stalled", "a");
    await Promise.resolve(); // the write goes out in a microtask
    await Promise.resolve();
    const until = Date.now() + 1300;
    while (Date.now() < until) {
      // This process stalls; Redis answers meanwhile.
    }
    await sleep(200);
    expect(store.stats()).toMatchObject({ writes: 1, writeErrors: 0, healthy: true });
    await store.close();
  });

  it("start-up against a frozen Redis waits at most max(1,000 ms, timeoutMs)", async () => {
    redis.freeze();
    try {
      const started = Date.now();
      const { router } = await createRoutedFetch({ targets: [{ id: "a", baseURL }], responseAffinity: { store: { source: "redis", url: redis.url, timeoutMs: 50 } } });
      const elapsed = Date.now() - started;
      expect(elapsed).toBeLessThan(2000);
      expect(router.stats().responseAffinity!.store!.healthy).toBe(false);
      void router.close();
    } finally {
      redis.thaw();
    }
  });

  it("a non-streamed answer is handed over once its id's write is acknowledged", async () => {
    const keyPrefix = `ack-${randomUUID()}`;
    const { fetch, router } = await createRoutedFetch({ targets: [{ id: "a", baseURL }], responseAffinity: { store: { source: "redis", url: redis.url, keyPrefix, timeoutMs: 3000 } } });
    nextId = () => "resp_acked";
    await raw.call("CLIENT", "PAUSE", "400", "WRITE");
    const started = Date.now();
    const res = await fetch(`${baseURL}/responses`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "m", input: "hi" }) });
    const body = (await res.json()) as { id: string };
    // The moment the caller has the id, another process finds it in Redis (reads are not paused).
    expect(await raw.get(responseKey(keyPrefix, body.id))).toBe("a");
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    expect(router.stats().responseAffinity!.store).toMatchObject({ writes: 1, lateAnswers: 0 });
    await router.close();
  });

  it("…and after timeoutMs without an acknowledgement, counted late", async () => {
    const keyPrefix = `late-${randomUUID()}`;
    const { fetch, router } = await createRoutedFetch({ targets: [{ id: "a", baseURL }], responseAffinity: { store: { source: "redis", url: redis.url, keyPrefix, timeoutMs: 200 } } });
    nextId = () => "resp_late";
    await raw.call("CLIENT", "PAUSE", "1500", "WRITE");
    const started = Date.now();
    const res = await fetch(`${baseURL}/responses`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "m", input: "hi" }) });
    await res.json();
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(180);
    expect(elapsed).toBeLessThan(1400);
    expect(router.stats().responseAffinity!.store).toMatchObject({ lateAnswers: 1 });
    await raw.call("CLIENT", "UNPAUSE");
    await router.close();
  });

  it("30,000 writes while Redis is frozen: bounded, the excess dropped and counted, none applied after the thaw", async () => {
    const keyPrefix = `frozen-${randomUUID()}`;
    const store = storeOf(keyPrefix, 200);
    await store.ready();
    store.put("resp_before", "a");
    await eventually(() => store.stats().writes === 1);
    redis.freeze();
    try {
      for (let i = 0; i < 30; i++) {
        for (let j = 0; j < 1000; j++) store.put(`resp_${i}_${j}`, "a");
        await sleep(20);
      }
      await sleep(1500);
    } finally {
      redis.thaw();
    }
    await eventually(() => store.stats().healthy, 50);
    await sleep(500);
    const stats = store.stats();
    expect(stats.writesDropped).toBeGreaterThanOrEqual(20_000);
    expect(stats.writes).toBe(1);
    expect(stats.writeErrors).toBe(30_000);
    // Nothing older than timeoutMs was applied after the thaw: only the key written before.
    expect(await raw.keys(`{${keyPrefix}}:*`)).toEqual([responseKey(keyPrefix, "resp_before")]);
    // And the store works again.
    store.put("resp_after", "b");
    await eventually(() => store.stats().writes === 2);
    await store.close();
  }, 30_000);
});
