/**
 * The `redis` load view against a real redis-server: leases counted across routers, released,
 * removed on close, reaped after a process stops heartbeating, and routing that goes on while
 * Redis is down and comes back onto the shared figures when it returns.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Lease, type Router, createRouter, isRouterError } from "prefix-router";
import { importPeer } from "../../src/internal/optional-peer.js";
import { ManualTimers, withTimers } from "./manual-timers.js";
import { HAS_REDIS_BINARY, OwnRedis, REDIS_SKIP_REASON, eventually, redisForTests } from "./redis-server.js";

const targets = [{ id: "a" }, { id: "b" }, { id: "c" }, { id: "d" }];
const body = { model: "m", messages: [{ role: "system", content: "You answer questions about one long policy document. ".repeat(40) }] };


async function routerOn(url: string, keyPrefix: string, view: Record<string, unknown> = {}, options: Record<string, unknown> = {}): Promise<Router> {
  return await createRouter({
    targets,
    concurrencyThreshold: 2,
    random: () => 0.5,
    loadView: { source: "redis", url, keyPrefix, refreshIntervalMs: 10, leaseTtlMs: 1000, ...view },
    ...options,
  });
}

/** Timers that never fire: a router whose background loop is frozen (a process that stopped). */
const frozen = { setTimeout: () => 0, clearTimeout: () => {} };

describe.skipIf(REDIS_SKIP_REASON !== undefined)("redis load view", () => {
  let server: { url: string; stop(): Promise<void> };
  let inspect: Redis;
  beforeAll(async () => {
    server = await redisForTests();
    inspect = new Redis(server.url);
  });
  afterAll(async () => {
    inspect?.disconnect();
    await server?.stop();
  });

  const total = async (prefix: string) => inspect.hgetall(`{${prefix}}:total`);

  it("counts every router's leases: a second router spills off the target the first one filled", async () => {
    const prefix = randomUUID();
    const r1 = await routerOn(server.url, prefix);
    let r2: Router | undefined;
    try {
      // createRouter resolved after the first read of the total.
      expect(r1.stats().loadView?.healthy).toBe(true);
      // Alone, r1 may fill the whole headroom (with peers it would get its share of it).
      const first = r1.rank({ body }).targets[0]!.id;
      const held: Lease[] = [r1.route({ body }), r1.route({ body })];
      expect(held.map((l) => l.target.id)).toEqual([first, first]);
      await eventually(async () => (await total(prefix))[`n:${first}`] === "2");
      r2 = await routerOn(server.url, prefix);
      await eventually(() => r2!.stats().loadView?.others[first] === 2);
      expect(r2.stats().loadView).toMatchObject({ healthy: true, processes: 2 });
      const lease = r2.route({ body });
      expect(lease.kind).toBe("spillover");
      expect(lease.target.id).not.toBe(first);
      // A router on the local view would have sent it to the first choice.
      const local = await createRouter({ targets, concurrencyThreshold: 2 });
      expect(local.route({ body }).target.id).toBe(first);
      held.push(lease);
      // Closed, r2 is back on its local view at once: the first choice again.
      await r2.close();
      expect(r2.stats().loadView?.healthy).toBe(false);
      const after = r2.route({ body });
      expect(after.target.id).toBe(first);
      after.release();
      for (const l of held) l.release();
      await eventually(async () => Object.keys(await total(prefix)).length === 0);
    } finally {
      await r1.close();
      await r2?.close();
    }
  });

  it("carries longest-prefix's queued prefill until the first byte", async () => {
    const prefix = randomUUID();
    const r1 = await routerOn(server.url, prefix, {}, { strategy: "longest-prefix" });
    const r2 = await routerOn(server.url, prefix, {}, { strategy: "longest-prefix" });
    try {
      await eventually(() => r1.stats().loadView?.healthy === true && r2.stats().loadView?.healthy === true);
      const lease = r1.route({ body });
      const work = r1.stats().prefixIndex!.targets.find((t) => t.id === lease.target.id)!.queuedBlocks;
      expect(work).toBeGreaterThan(0);
      await eventually(async () => (await total(prefix))[`w:${lease.target.id}`] === String(work));
      await eventually(() => (r2.stats().loadView as { othersQueuedWork?: Record<string, number> }).othersQueuedWork?.[lease.target.id] === work);
      lease.firstByte();
      await eventually(async () => (await total(prefix))[`w:${lease.target.id}`] === undefined);
      expect(await total(prefix)).toEqual({ [`n:${lease.target.id}`]: "1" });
      lease.release();
      await eventually(async () => Object.keys(await total(prefix)).length === 0);
    } finally {
      await r1.close();
      await r2.close();
    }
  });

  it("close() ends the refresh loop's timer and the connection", async () => {
    const timers = new ManualTimers();
    const r = await routerOn(server.url, randomUUID(), withTimers({}, timers));
    await eventually(() => r.stats().loadView?.healthy === true);
    expect(timers.size).toBe(1);
    timers.fire();
    expect(timers.size).toBe(1);
    await r.close();
    expect(timers.size).toBe(0);
  });

  it("reads every refreshIntervalMs while leases are open, every idleRefreshIntervalMs without (defaults 5 and 100 ms)", async () => {
    const timers = new ManualTimers();
    const r = await routerOn(server.url, randomUUID(), withTimers({ refreshIntervalMs: undefined }, timers));
    await eventually(() => r.stats().loadView?.healthy === true);
    timers.fire();
    expect(timers.delays.at(-1)).toBe(100);
    const lease = r.route({ body });
    timers.fire();
    expect(timers.delays.at(-1)).toBe(5);
    lease.release();
    timers.fire();
    expect(timers.delays.at(-1)).toBe(100);
    await r.close();
    const bad = await createRouter({ targets, loadView: { source: "redis", refreshIntervalMs: 50, idleRefreshIntervalMs: 20 } }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(RangeError);
    expect((bad as Error).message).toContain("loadView.idleRefreshIntervalMs");
  });

  it("close() removes the process's counts at once", async () => {
    const prefix = randomUUID();
    const r = await routerOn(server.url, prefix);
    await eventually(() => r.stats().loadView?.healthy === true);
    r.route({ body });
    r.route({ body: { ...body, model: "other" } });
    await eventually(async () => Object.values(await total(prefix)).reduce((s, v) => s + Number(v), 0) === 2);
    await r.close();
    expect(await total(prefix)).toEqual({});
    expect(await inspect.keys(`{${prefix}}:*`)).toEqual([]);
  });

  it("reaps a process whose heartbeat expired: its leases leave the total, the live one's stay", async () => {
    const prefix = randomUUID();
    const dead = await routerOn(server.url, prefix, withTimers({ processId: "dead" }, frozen));
    const live = await routerOn(server.url, prefix, { processId: "live" });
    try {
      await eventually(() => dead.stats().loadView?.healthy === true && live.stats().loadView?.healthy === true);
      dead.route({ body });
      dead.route({ body });
      live.route({ body: { ...body, model: "other" } });
      await eventually(async () => Object.values(await total(prefix)).reduce((s, v) => s + Number(v), 0) === 3);
      // The frozen process sends no heartbeat; its heartbeat key expires (here: at once).
      await inspect.del(`{${prefix}}:hb:dead`);
      // The live process's next heartbeat (a full write, every leaseTtlMs / 3) reaps it.
      await eventually(async () => Object.values(await total(prefix)).reduce((s, v) => s + Number(v), 0) === 1);
      expect(await inspect.exists(`{${prefix}}:proc:dead`)).toBe(0);
      expect(await inspect.smembers(`{${prefix}}:procs`)).toEqual(["live"]);
    } finally {
      await live.close();
      await dead.close();
    }
  });

  it.skipIf(!HAS_REDIS_BINARY)("Redis killed mid-run: no request fails, the router goes local, then back on the shared view", async () => {
    const own = await OwnRedis.start();
    const warnings: string[] = [];
    const infos: string[] = [];
    const logger = {
      debug() {},
      info: (m: string) => infos.push(m),
      warn: (m: string) => warnings.push(m),
      error() {},
    };
    const r = await routerOn(own.url, "outage", { staleAfterMs: 50, commandTimeoutMs: 200 }, { logger });
    let failed = 0;
    let routed = 0;
    const step = () => {
      try {
        const l = r.route({ body: { ...body, model: `m${routed % 5}` } });
        routed++;
        l.release();
      } catch {
        failed++;
      }
    };
    try {
      await eventually(() => r.stats().loadView?.healthy === true);
      for (let i = 0; i < 50; i++) step();
      await own.kill();
      await eventually(() => {
        step();
        return r.stats().loadView?.healthy === false;
      });
      expect(warnings.some((w) => w.includes("unavailable"))).toBe(true);
      // The call out when Redis died, or the next reconnection attempt, fails and counts.
      await eventually(() => r.stats().loadView!.errors > 0);
      for (let i = 0; i < 50; i++) step();
      const refreshesBefore = r.stats().loadView!.refreshes;
      await own.restart();
      await eventually(() => {
        step();
        return r.stats().loadView?.healthy === true && r.stats().loadView!.refreshes > refreshesBefore;
      });
      expect(infos.some((m) => m.includes("back"))).toBe(true);
      expect(failed).toBe(0);
      expect(r.stats().totals.routed).toBe(routed);
    } finally {
      await r.close();
      await own.kill();
    }
  });

  it("Redis unreachable at start: createRouter still resolves, on the local view", async () => {
    const r = await createRouter({ targets, loadView: { source: "redis", url: "redis://127.0.0.1:1", commandTimeoutMs: 200 } });
    try {
      expect(r.stats().loadView).toMatchObject({ healthy: false });
      expect(r.stats().loadView!.errors).toBeGreaterThan(0);
      r.route({ body }).release();
      expect(r.stats().totals.routed).toBe(1);
    } finally {
      await r.close();
    }
  });

  it("names the missing package and its install command (ERR_MISSING_PEER)", async () => {
    const err = await importPeer("prefix-router-no-such-package", 'loadView "redis"', () => import("prefix-router-no-such-package" as string)).catch((e: unknown) => e);
    expect(isRouterError(err)).toBe(true);
    expect((err as { code: string }).code).toBe("ERR_MISSING_PEER");
    expect((err as Error).message).toContain("npm install prefix-router-no-such-package");
  });
});
