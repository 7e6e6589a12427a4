/**
 * Another program writes into the `redis` view's keys — a buggy process, an operator's typo, an
 * attacker with access to Redis: values that are not counts (`abc`, `Infinity`, `1.5`, `-7`, 20
 * digits), fields that are not the view's, keys of another type, thousands of unknown processes
 * in the set. Against a real redis-server, with two routers holding leases and traffic going on:
 * the script never applies half a change and never fails on a value, every other target's count
 * stays exact, the target whose value was bad is repaired, the unknown processes are reaped, and
 * nothing is left after both routers `close()`. A Redis whose script calls fail gets them at a
 * backoff, not one per change.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Lease, type Router, createRouter } from "prefix-router";
import { ManualTimers, withTimers } from "../load-view/manual-timers.js";
import { HAS_REDIS_BINARY, OwnRedis, REDIS_SKIP_REASON, redisForTests } from "../load-view/redis-server.js";

const targets = [{ id: "a" }, { id: "b" }, { id: "c" }, { id: "d" }];
const bodyFor = (n: number) => ({ model: "m", messages: [{ role: "system", content: `Policy document number ${n}. `.repeat(60) }] });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type ViewStats = { healthy: boolean; errors: number; processes: number; others: Record<string, number | null> };
const viewStats = (r: Router) => r.stats().loadView as unknown as ViewStats;

/** Polls `check` until it answers `true`; after `ms`, fails with what it answered last. */
async function until(check: () => Promise<true | string> | true | string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const result = await check();
    if (result === true) return;
    if (Date.now() > deadline) throw new Error(`still not so after ${ms} ms: ${result}`);
    await sleep(20);
  }
}

/** Routers on one key prefix, the leases they hold, and what Redis should say about them. */
class Fleet {
  readonly routers: Router[] = [];
  readonly leases: { router: Router; lease: Lease }[] = [];
  private next = 0;

  constructor(
    readonly url: string,
    readonly prefix: string,
    readonly inspect: Redis,
  ) {}

  async start(count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      this.routers.push(
        await createRouter({
          targets,
          strategy: "prefix-aware",
          concurrencyThreshold: 1000,
          loadView: { source: "redis", url: this.url, keyPrefix: this.prefix, refreshIntervalMs: 10, leaseTtlMs: 1000, processId: `router-${i}` },
        }),
      );
    }
  }

  open(n: number): void {
    for (let i = 0; i < n; i++) {
      const router = this.routers[this.next % this.routers.length]!;
      this.leases.push({ router, lease: router.route({ body: bodyFor(this.next % 16) }) });
      this.next++;
    }
  }

  /** Releases the oldest leases and opens as many: changes on every target. */
  async churn(rounds: number): Promise<void> {
    for (let i = 0; i < rounds; i++) {
      for (const { lease } of this.leases.splice(0, 3)) lease.release();
      this.open(3);
      await sleep(15);
    }
  }

  releaseAll(): void {
    for (const { lease } of this.leases.splice(0)) lease.release();
  }

  /** Open leases per target (plus `extra`), as `n:<target>` fields. */
  expected(extra: Record<string, number> = {}): Record<string, string> {
    const counts: Record<string, number> = { ...extra };
    for (const { lease } of this.leases) counts[lease.target.id] = (counts[lease.target.id] ?? 0) + 1;
    return Object.fromEntries(
      Object.entries(counts)
        .filter(([, n]) => n > 0)
        .map(([id, n]) => [`n:${id}`, String(n)]),
    );
  }

  async total(): Promise<Record<string, string>> {
    const all = await this.inspect.hgetall(`{${this.prefix}}:total`).catch((e: Error) => ({ error: e.message }));
    return Object.fromEntries(Object.entries(all).filter(([f]) => !f.startsWith("w:")));
  }

  /** Redis's total is exactly the open leases (plus `extra`). */
  async exact(extra: Record<string, number> = {}, except?: string): Promise<true | string> {
    const want = this.expected(extra);
    const got = await this.total();
    if (except !== undefined) {
      delete want[`n:${except}`];
      delete got[`n:${except}`];
    }
    const [g, w] = [JSON.stringify(sorted(got)), JSON.stringify(sorted(want))];
    return g === w ? true : `total ${g}, open leases ${w}`;
  }

  /** Each router reads the other routers' leases exactly. */
  viewsExact(): true | string {
    for (const r of this.routers) {
      const s = viewStats(r);
      if (!s.healthy) return `a router's view is not healthy (errors ${s.errors})`;
      for (const { id } of targets) {
        const others = this.leases.filter((l) => l.router !== r && l.lease.target.id === id).length;
        if ((s.others[id] ?? 0) !== others) return `a router sees ${s.others[id]} others' leases on ${id}, they hold ${others}`;
      }
    }
    return true;
  }

  async keys(): Promise<string[]> {
    return (await this.inspect.keys(`{${this.prefix}}:*`)).sort();
  }

  async close(): Promise<void> {
    this.releaseAll();
    for (const r of this.routers) await r.close();
  }
}

function sorted(o: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : 1)));
}

describe.skipIf(REDIS_SKIP_REASON !== undefined)("hostile values in the redis load view's keys", () => {
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

  it.each(["abc", "Infinity", "1.5", "-7", "", "99999999999999999999", "0x10", " 5"])(
    "a bad value (%j) in the shared total: every other target stays exact, that target is repaired, nothing left after close()",
    async (bad) => {
      const fleet = new Fleet(server.url, randomUUID(), inspect);
      try {
        await fleet.start(2);
        fleet.open(12);
        await until(() => fleet.exact());
        const victim = fleet.leases[0]!.lease.target.id;
        await inspect.hset(`{${fleet.prefix}}:total`, `n:${victim}`, bad);
        await fleet.churn(12);
        await until(() => fleet.exact({}, victim));
        // Repaired, not only ignored: the bad value is gone from Redis and from both views.
        await until(() => fleet.exact());
        await until(() => fleet.viewsExact());
        // The value written again and then removed by the other program: the count is back too.
        await inspect.hset(`{${fleet.prefix}}:total`, `n:${victim}`, bad);
        await inspect.hdel(`{${fleet.prefix}}:total`, `n:${victim}`);
        await fleet.churn(4);
        await until(() => fleet.exact());
        for (const r of fleet.routers) expect(viewStats(r)).toMatchObject({ healthy: true, errors: 0 });
        fleet.releaseAll();
        await until(async () => (JSON.stringify(await fleet.total()) === "{}" ? true : JSON.stringify(await fleet.total())));
      } finally {
        await fleet.close();
      }
      expect(await fleet.keys()).toEqual([]);
    },
  );

  it("bad values in other processes' hashes and 5,000 unknown processes: ignored field by field, reaped, the view stays healthy", async () => {
    const fleet = new Fleet(server.url, randomUUID(), inspect);
    const base = `{${fleet.prefix}}`;
    // Unknown processes without a heartbeat, each with a value no script can add.
    const batch = inspect.pipeline();
    for (let i = 0; i < 5000; i++) {
      batch.sadd(`${base}:procs`, `ghost-${i}`);
      batch.hset(`${base}:proc:ghost-${i}`, "n:a", "Infinity", "n:b", "7");
    }
    // A live process (its heartbeat is there) whose hash mixes one count with values that are not.
    batch.set(`${base}:hb:liar`, "1", "PX", 60_000);
    batch.sadd(`${base}:procs`, "liar");
    batch.hset(`${base}:proc:liar`, "n:a", "2", "n:b", "Infinity", "n:c", "abc", "n:d", "-3", "w:a", "2.5", "other", "1");
    batch.hset(`${base}:total`, "n:a", "-Infinity", "other", "x");
    await batch.exec();
    try {
      await fleet.start(2);
      fleet.open(12);
      await fleet.churn(6);
      // The unknown processes are reaped by the routers' heartbeats (every leaseTtlMs / 3).
      await until(async () => {
        const n = await inspect.scard(`${base}:procs`);
        return n === 3 ? true : `${n} processes in the set`;
      });
      expect(await inspect.exists(`${base}:proc:ghost-0`, `${base}:proc:ghost-4999`)).toBe(0);
      // The live process's one count counts; its other fields do not.
      await until(() => fleet.exact({ a: 2 }));
      for (const r of fleet.routers) expect(viewStats(r)).toMatchObject({ healthy: true, errors: 0, processes: 3 });
      // The other program goes away: its count leaves the total at the next heartbeat.
      await inspect.del(`${base}:hb:liar`);
      await fleet.churn(2);
      await until(() => fleet.exact());
      await until(() => fleet.viewsExact());
    } finally {
      await fleet.close();
    }
    expect(await fleet.keys()).toEqual([]);
  });

  it("keys of another type (total, the process set, a router's own hash): repaired, counts exact, nothing left after close()", async () => {
    const fleet = new Fleet(server.url, randomUUID(), inspect);
    const base = `{${fleet.prefix}}`;
    try {
      await fleet.start(2);
      fleet.open(12);
      await until(() => fleet.exact());
      await inspect.multi().del(`${base}:total`).set(`${base}:total`, "not a hash").del(`${base}:procs`).hset(`${base}:procs`, "x", "1").del(`${base}:proc:router-0`).rpush(`${base}:proc:router-0`, "1").exec();
      await fleet.churn(8);
      await until(() => fleet.exact());
      await until(() => fleet.viewsExact());
      for (const r of fleet.routers) expect(viewStats(r)).toMatchObject({ healthy: true, errors: 0, processes: 2 });
    } finally {
      await fleet.close();
    }
    expect(await fleet.keys()).toEqual([]);
  });

  it("a custom strategy's fractional or infinite queued work is counted as an integer; the script keeps working", async () => {
    const prefix = randomUUID();
    const works = [2.5, 0.4, Number.POSITIVE_INFINITY];
    let next = 0;
    const strategy = { name: "fractional-work", pick: () => ({ index: 0, kind: "preferred" as const, rank: 0, work: works[next++ % works.length] }) };
    const router = await createRouter({ targets, strategy, loadView: { source: "redis", url: server.url, keyPrefix: prefix, refreshIntervalMs: 10 } });
    try {
      await until(() => viewStats(router).healthy || "not healthy");
      const leases = works.map(() => router.route({ body: bodyFor(0) }));
      // 2.5 counts 3, 0.4 counts nothing, Infinity counts 10⁹.
      await until(async () => {
        const total = await inspect.hgetall(`{${prefix}}:total`);
        return JSON.stringify(total) === JSON.stringify({ "n:a": "3", "w:a": String(3 + 1_000_000_000) }) || JSON.stringify(total);
      });
      for (const l of leases) l.release();
      await until(async () => (await inspect.exists(`{${prefix}}:total`)) === 0 || "total left");
      expect(viewStats(router)).toMatchObject({ healthy: true, errors: 0 });
    } finally {
      await router.close();
    }
    expect(await inspect.keys(`{${prefix}}:*`)).toEqual([]);
  });

  it.skipIf(!HAS_REDIS_BINARY)("script calls that fail (the Redis user may no longer run scripts) are retried at a backoff, not once per change; the counts heal after", async () => {
    const own = await OwnRedis.start();
    const admin = new Redis(own.url);
    let now = 0;
    const timers = new ManualTimers();
    const prefix = randomUUID();
    const router = await createRouter({
      targets,
      strategy: "prefix-aware",
      concurrencyThreshold: 1000,
      clock: { now: () => now },
      loadView: withTimers({ source: "redis", url: own.url, keyPrefix: prefix, leaseTtlMs: 60_000 }, timers),
    });
    const leases: Lease[] = [];
    const errors = () => viewStats(router).errors;
    /** Changes, and the view's loop running, while the test clock stands still. */
    const traffic = async () => {
      for (let i = 0; i < 50; i++) {
        leases.push(router.route({ body: bodyFor(i) }));
        leases.shift()!.release();
        leases.push(router.route({ body: bodyFor(i + 1) }));
        timers.fire();
        await sleep(1);
      }
      await sleep(100);
    };
    try {
      await until(() => viewStats(router).healthy || "not healthy");
      await admin.call("ACL", "SETUSER", "default", "-eval", "-evalsha");
      leases.push(router.route({ body: bodyFor(0) }));
      await until(() => errors() === 1 || `${errors()} errors`);
      await traffic();
      // The clock has not moved: no call since the failure.
      expect(errors()).toBe(1);
      // 50 ms after the failure, one call (and it fails), then 100 ms, 200 ms…
      now += 49;
      await traffic();
      expect(errors()).toBe(1);
      now += 1;
      await traffic();
      expect(errors()).toBe(2);
      now += 99;
      await traffic();
      expect(errors()).toBe(2);
      now += 1;
      await traffic();
      expect(errors()).toBe(3);
      await admin.call("ACL", "SETUSER", "default", "+eval", "+evalsha");
      now += 200;
      timers.fire();
      await until(async () => {
        const total = await admin.hgetall(`{${prefix}}:total`);
        const want: Record<string, string> = {};
        for (const l of leases) want[`n:${l.target.id}`] = String(Number(want[`n:${l.target.id}`] ?? 0) + 1);
        return JSON.stringify(sorted(total)) === JSON.stringify(sorted(want)) ? true : `total ${JSON.stringify(total)}, open ${JSON.stringify(want)}`;
      });
      expect(errors()).toBe(3);
      for (const l of leases.splice(0)) l.release();
    } finally {
      await router.close();
      admin.disconnect();
      await own.kill();
    }
  });
});
