/**
 * The `redis` view's Lua script against a real redis-server, whatever another program wrote into
 * its keys (fast-check generates the damage: values that are not counts, foreign fields, keys of
 * another type, deleted keys, a heartbeat without expiry). Laws:
 *
 * - no call fails on what it reads;
 * - a `delta` is all or nothing: refused, it changed no key; applied, this process's hash moved
 *   by exactly the change, every valid total field it did not touch is as it was, and the total
 *   holds counts only (the answer is the total);
 * - after a `full`, total = Σ of the counts in the live processes' hashes (the invariant), and
 *   processes whose heartbeat is gone (or never expires) are reaped;
 * - after every process `leave`s, no key is left.
 */
import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LOAD_SCRIPT, loadKeys } from "../../src/load-view/redis-scripts.js";
import { REDIS_SKIP_REASON, redisForTests } from "./redis-server.js";

type Reply = [number, string[], number, number];
type Script = (procs: string, total: string, ...args: (string | number)[]) => Promise<Reply>;

const FIELDS = ["n:a", "n:b", "n:c", "w:a"] as const;
const COUNT = /^\d{1,15}$/;
const isCount = (v: string | undefined): v is string => v !== undefined && COUNT.test(v);

/** What another program may write where a count belongs. */
const badValue = fc.oneof(
  { arbitrary: fc.constantFrom("abc", "Infinity", "-Infinity", "inf", "nan", "1.5", "-7", "", "99999999999999999999", "0x10", " 5", "1e3", "5 ", "0", "007"), weight: 3 },
  fc.string({ maxLength: 6 }),
  fc.nat(20).map(String),
);

type Damage =
  | { op: "hset"; key: "total" | "me" | "p1" | "p2"; field: string; value: string }
  | { op: "retype"; key: "total" | "procs" | "me" | "p1" | "hb:p1"; to: "string" | "list" | "set" | "hash" }
  | { op: "del"; key: "total" | "procs" | "me" | "p1" | "hb:p1" }
  | { op: "persist"; key: "hb:p1" }
  | { op: "sadd"; member: string };

const damage: fc.Arbitrary<Damage> = fc.oneof(
  {
    arbitrary: fc.record({ op: fc.constant("hset" as const), key: fc.constantFrom("total" as const, "me" as const, "p1" as const, "p2" as const), field: fc.constantFrom(...FIELDS, "other", ""), value: badValue }),
    weight: 4,
  },
  fc.record({ op: fc.constant("retype" as const), key: fc.constantFrom("total" as const, "procs" as const, "me" as const, "p1" as const, "hb:p1" as const), to: fc.constantFrom("string" as const, "list" as const, "set" as const, "hash" as const) }),
  fc.record({ op: fc.constant("del" as const), key: fc.constantFrom("total" as const, "procs" as const, "me" as const, "p1" as const, "hb:p1" as const) }),
  fc.record({ op: fc.constant("persist" as const), key: fc.constant("hb:p1" as const) }),
  fc.record({ op: fc.constant("sadd" as const), member: fc.constantFrom("ghost", "p2", "") }),
);

/** A signed change per field, as the view sends it. */
const change = fc.dictionary(fc.constantFrom(...FIELDS), fc.integer({ min: -3, max: 3 }).filter((d) => d !== 0), { maxKeys: 4 });

describe.skipIf(REDIS_SKIP_REASON !== undefined)("the redis view's script, with other programs writing into its keys", () => {
  let server: { url: string; stop(): Promise<void> };
  let redis: Redis;
  let script: Script;
  beforeAll(async () => {
    server = await redisForTests();
    redis = new Redis(server.url);
    redis.defineCommand("prefixRouterLoadTest", { numberOfKeys: 2, lua: LOAD_SCRIPT });
    script = (redis as unknown as { prefixRouterLoadTest: Script }).prefixRouterLoadTest.bind(redis);
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });

  it("a delta is all or nothing and never fails; a full write restores total = Σ live hashes; nothing is left after every process leaves", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(damage, { maxLength: 5 }), change, async (damages, delta) => {
        const { base, procs, total } = loadKeys(randomUUID());
        const key = (k: string) => (k === "total" ? total : k === "procs" ? procs : k.startsWith("hb:") ? `${base}:${k}` : `${base}:proc:${k}`);
        const call = (id: string, mode: string, pairs: Record<string, number>) =>
          script(procs, total, base, id, mode, 60_000, 180_000, ...Object.entries(pairs).flat());

        // Three processes as routers leave them; p2's heartbeat then expires.
        await call("p1", "full", { "n:a": 2, "n:b": 1 });
        await call("p2", "full", { "n:a": 1, "w:a": 5 });
        await call("me", "full", { "n:a": 1, "n:c": 3, "w:a": 2 });
        await redis.del(`${base}:hb:p2`);

        for (const d of damages) {
          if (d.op === "hset") {
            await redis.hset(key(d.key), d.field, d.value).catch(() => undefined);
          } else if (d.op === "retype") {
            await redis.del(key(d.key));
            if (d.to === "string") await redis.set(key(d.key), "x");
            else if (d.to === "list") await redis.rpush(key(d.key), "x");
            else if (d.to === "set") await redis.sadd(key(d.key), "x");
            else await redis.hset(key(d.key), "x", "1");
          } else if (d.op === "del") await redis.del(key(d.key));
          else if (d.op === "persist") await redis.persist(key(d.key));
          else await redis.sadd(procs, d.member).catch(() => undefined);
        }

        const before = await snapshot(redis, base);
        const ownBefore = await hashOrUndefined(redis, key("me"));
        const totalBefore = await hashOrUndefined(redis, total);
        const reply = await call("me", "delta", delta);
        const after = await snapshot(redis, base);
        if (reply[0] === 0) {
          expect(after).toEqual(before);
        } else {
          // Applied: the own hash moved by exactly the change.
          const ownAfter = (await hashOrUndefined(redis, key("me"))) ?? {};
          for (const field of new Set([...Object.keys(ownBefore ?? {}), ...Object.keys(delta)])) {
            if (delta[field] === undefined) expect(ownAfter[field]).toBe(ownBefore?.[field]);
            else {
              const n = Number(ownBefore?.[field] ?? 0) + delta[field]!;
              expect(ownAfter[field]).toBe(n === 0 ? undefined : String(n));
            }
          }
          // The total holds counts only, and is what the script answered.
          const totalAfter = (await hashOrUndefined(redis, total)) ?? {};
          for (const [field, v] of Object.entries(totalAfter)) {
            expect(FIELDS.some((f) => f.slice(0, 2) === field.slice(0, 2))).toBe(true);
            expect(isCount(v)).toBe(true);
          }
          expect(pairsToObject(reply[1])).toEqual(totalAfter);
          // A valid total field the change did not touch is as it was.
          if (totalBefore !== undefined) {
            for (const [field, v] of Object.entries(totalBefore)) {
              if (delta[field] === undefined && isCount(v) && /^[nw]:/.test(field) && Number(v) > 0) expect(Number(totalAfter[field])).toBe(Number(v));
            }
          }
        }

        // Full writes (this process's, then p1's, a router that comes back): the invariant,
        // exactly; the dead reaped.
        const invariant = async (id: string) => {
          const members = (await redis.smembers(procs)).sort();
          expect(members).toContain(id);
          for (const m of members) expect(await redis.pttl(`${base}:hb:${m}`)).toBeGreaterThanOrEqual(0);
          const sums: Record<string, number> = {};
          for (const m of members) {
            for (const [field, v] of Object.entries((await hashOrUndefined(redis, key(m))) ?? {})) {
              if (isCount(v) && /^[nw]:/.test(field) && Number(v) > 0) sums[field] = (sums[field] ?? 0) + Number(v);
            }
          }
          expect((await hashOrUndefined(redis, total)) ?? {}).toEqual(Object.fromEntries(Object.entries(sums).map(([f, n]) => [f, String(n)])));
          return members;
        };
        const mine = (await hashOrUndefined(redis, key("me"))) ?? {};
        const counts = Object.fromEntries(Object.entries(mine).filter(([f, v]) => isCount(v) && /^[nw]:/.test(f)).map(([f, v]) => [f, Number(v)]));
        expect((await call("me", "full", counts))[0]).toBe(1);
        await invariant("me");
        expect((await call("p1", "full", { "n:b": 4 }))[0]).toBe(1);
        const members = await invariant("p1");

        // Everyone leaves: nothing left but, when the set itself was lost, the hash of a process
        // that had left it (not the routers' to find; it expires after keyTtl).
        for (const m of members) expect((await call(m, "leave", {}))[0]).toBe(1);
        const left = await redis.keys(`${base}:*`);
        const setLost = damages.some((d) => (d.op === "del" || d.op === "retype") && d.key === "procs");
        expect(left).toEqual(setLost ? left.filter((k) => k === `${base}:proc:p2`) : []);
        if (left.length > 0) await redis.del(...left);
      }),
      { numRuns: 300 },
    );
  });

  it("refuses bad arguments without writing anything", async () => {
    const { base, procs, total } = loadKeys(randomUUID());
    await script(procs, total, base, "me", "full", 60_000, 180_000, "n:a", 2);
    const before = await snapshot(redis, base);
    for (const bad of ["1.5", "Infinity", "abc", "-1"]) {
      await expect(script(procs, total, base, "me", "full", 60_000, 180_000, "n:b", 1, "n:a", bad)).rejects.toThrow(/bad argument/);
    }
    await expect(script(procs, total, base, "me", "delta", 60_000, 180_000, "n:b", 1, "n:a", "2.5")).rejects.toThrow(/bad argument/);
    await expect(script(procs, total, base, "me", "delta", 60_000, 180_000, "other", 1)).rejects.toThrow(/bad argument/);
    expect(await snapshot(redis, base)).toEqual(before);
    await script(procs, total, base, "me", "leave", 60_000, 180_000);
    expect(await redis.keys(`${base}:*`)).toEqual([]);
  });
});

/** Every key under `base`, its type and content (not its TTL). */
async function snapshot(redis: Redis, base: string): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const key of (await redis.keys(`${base}:*`)).sort()) {
    const type = await redis.type(key);
    if (type === "hash") out[key] = { type, value: await redis.hgetall(key) };
    else if (type === "set") out[key] = { type, value: (await redis.smembers(key)).sort() };
    else if (type === "list") out[key] = { type, value: await redis.lrange(key, 0, -1) };
    else out[key] = { type, value: await redis.get(key) };
  }
  return out;
}

async function hashOrUndefined(redis: Redis, key: string): Promise<Record<string, string> | undefined> {
  return (await redis.type(key)) === "hash" ? await redis.hgetall(key) : undefined;
}

function pairsToObject(list: string[]): Record<string, string> {
  const o: Record<string, string> = {};
  for (let i = 0; i + 1 < list.length; i += 2) o[list[i]!] = list[i + 1]!;
  return o;
}
