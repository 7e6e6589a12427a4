/**
 * Response affinity shared through Redis (`responseAffinity.store`).
 *
 * - Four application processes (affinity-worker.ts), each the real openai client routed across a
 *   live 7-instance emulated fleet, share one Redis: Responses conversations whose every turn goes
 *   through a process picked at random reach, every time, the instance holding the previous
 *   response — through the store whenever the process did not create it.
 * - Redis killed in the middle: the follow-ups a process could place from its own map still
 *   succeed, every failure is the engine's own 404 (what the local map alone would give), and
 *   after Redis is back (empty) new conversations are shared again.
 * - In one process, against small loopback servers that choose the response ids: hostile ids are
 *   escaped (never a key outside `{prefix}:resp:<safe>` / `x:<hex>`), too long ones are not
 *   written, every key has a TTL, values naming no target are ignored, a paused Redis costs one
 *   bounded wait, an unreachable one changes nothing, close() releases the connection, and bad
 *   options are named.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { type Server, createServer } from "node:http";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seeded } from "../support.js";
import { DEFAULT_MODEL, type LiveFleet, startFleet } from "prefix-router/fleet";
import { type OpenAITarget, type ResponseAffinityStats, createRoutedFetch } from "prefix-router/openai";
import { HAS_REDIS_BINARY, OwnRedis, eventually } from "../load-view/redis-server.js";
import { responseKey } from "../../src/openai/response-store.js";

const PROCESSES = 4;
/**
 * The store's read timeout in the worker processes: generous, because these tests share two
 * cores with whatever else runs (the default, 50 ms, is for a Redis next to the application; the
 * timeout itself is tested below with a paused Redis).
 */
const STORE_TIMEOUT_MS = 2000;
const worker = fileURLToPath(new URL("./affinity-worker.ts", import.meta.url));
const SKIP = HAS_REDIS_BINARY ? undefined : "no redis-server binary on PATH (the outage test kills and restarts its own server)";
if (SKIP !== undefined && process.env["CI"] === "true") throw new Error(`CI=true but ${SKIP}`);


interface Answer {
  tag: number;
  ok?: boolean;
  id?: string;
  instance?: string;
  status?: number;
  code?: unknown;
  stats?: ResponseAffinityStats;
}

/** An application process, driven over stdin/stdout. */
class Worker {
  private readonly proc: ChildProcess;
  private readonly waiting = new Map<number, (a: Answer) => void>();
  private next = 0;
  readonly started: Promise<void>;

  constructor(args: string[]) {
    this.proc = spawn(process.execPath, ["--import", "tsx", worker, ...args], { stdio: ["pipe", "pipe", "inherit"] });
    let ready: () => void = () => {};
    this.started = new Promise((resolve) => (ready = resolve));
    createInterface({ input: this.proc.stdout! }).on("line", (line) => {
      if (line === "ready") return ready();
      const answer = JSON.parse(line) as Answer;
      this.waiting.get(answer.tag)?.(answer);
      this.waiting.delete(answer.tag);
    });
  }

  call(command: Record<string, unknown>): Promise<Answer> {
    const tag = this.next++;
    return new Promise((resolve) => {
      this.waiting.set(tag, resolve);
      this.proc.stdin!.write(`${JSON.stringify({ ...command, tag })}\n`);
    });
  }

  async stats(): Promise<ResponseAffinityStats> {
    return (await this.call({ op: "stats" })).stats!;
  }

  async close(): Promise<void> {
    if (this.proc.exitCode !== null) return;
    const exited = new Promise((resolve) => this.proc.once("exit", resolve));
    await this.call({ op: "close" });
    await exited;
  }
}

/** One turn as the test saw it. */
interface Turn {
  conversation: number;
  turn: number;
  process: number;
  /** The previous response and where it came from; absent on a first turn. */
  previous?: { id: string; instance: string; process: number };
  answer: Answer;
}

/** A conversation's state between turns: its last successful response. */
interface Conversation {
  n: number;
  turns: number;
  last?: { id: string; instance: string; process: number };
}

const opening = (n: number) => `Conversation ${n}. Here is my contract: ${`clause ${n} `.repeat(40)}. Summarise it.`;

/** Runs `turns` turns of each conversation, `parallel` conversations at a time, each turn through a random process. */
async function converse(workers: Worker[], conversations: Conversation[], turns: number, random: () => number, parallel = 16): Promise<Turn[]> {
  const log: Turn[] = [];
  let nextIndex = 0;
  const lane = async (): Promise<void> => {
    while (nextIndex < conversations.length) {
      const c = conversations[nextIndex++]!;
      for (let k = 0; k < turns; k++, c.turns++) {
        const p = Math.floor(random() * workers.length);
        const previous = c.last;
        // The follow-up goes the moment the answer arrives, through any process: a JSON answer is
        // handed over only once its id's write is acknowledged, a stream's id is written first.
        const answer = await workers[p]!.call({
          op: "turn",
          input: previous === undefined ? opening(c.n) : `Question ${c.turns} about clause ${c.n}?`,
          previous: previous?.id,
          stream: c.n % 2 === 0,
        });
        log.push({ conversation: c.n, turn: c.turns, process: p, previous, answer });
        if (answer.ok === true) c.last = { id: answer.id!, instance: answer.instance!, process: p };
      }
    }
  };
  await Promise.all(Array.from({ length: parallel }, lane));
  return log;
}

const newConversations = (from: number, count: number): Conversation[] => Array.from({ length: count }, (_, i) => ({ n: from + i, turns: 0 }));
const sum = (list: ResponseAffinityStats[], pick: (s: ResponseAffinityStats) => number) => list.reduce((a, s) => a + pick(s), 0);

describe.skipIf(SKIP !== undefined)(`${PROCESSES} application processes share response affinity through one Redis`, () => {
  let redis: OwnRedis;
  let raw: Redis;
  let fleet: LiveFleet;
  let workers: Worker[] = [];
  const keyPrefix = `affinity-${randomUUID()}`;

  beforeAll(async () => {
    redis = await OwnRedis.start();
    raw = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    raw.on("error", () => {});
    fleet = await startFleet({ instances: 7, timeScale: 0.002, defaultMaxTokens: 4 });
    const targets: OpenAITarget[] = fleet.instances.map((i) => ({ id: i.id, baseURL: `${i.url}/v1` }));
    workers = Array.from({ length: PROCESSES }, () => new Worker([redis.url, keyPrefix, JSON.stringify(targets), DEFAULT_MODEL, String(STORE_TIMEOUT_MS)]));
    await Promise.all(workers.map((w) => w.started));
  }, 30_000);
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.close()));
    raw?.disconnect();
    await fleet?.stop();
    await redis?.kill();
  });

  it("100 conversations of 5 turns, each turn through a random process: every follow-up reaches the instance holding its response", async () => {
    const log = await converse(workers, newConversations(0, 100), 5, seeded(1));
    expect(log).toHaveLength(500);
    const failed = log.filter((t) => t.answer.ok !== true);
    // On failure, the processes' own account (a timed-out read, a failed write) says why.
    expect(failed, failed.length === 0 ? "" : JSON.stringify(await Promise.all(workers.map((w) => w.stats())))).toEqual([]);
    const followUps = log.filter((t) => t.previous !== undefined);
    expect(followUps).toHaveLength(400);
    for (const t of followUps) expect(t.answer.instance).toBe(t.previous!.instance);
    // Most follow-ups went through a process that never saw the previous response: the store placed them.
    const elsewhere = followUps.filter((t) => t.process !== t.previous!.process).length;
    expect(elsewhere).toBeGreaterThan(250);
    const stats = await Promise.all(workers.map((w) => w.stats()));
    expect(sum(stats, (s) => s.store!.hits)).toBe(elsewhere);
    expect(sum(stats, (s) => s.localHits)).toBe(400 - elsewhere);
    expect(sum(stats, (s) => s.store!.writes)).toBe(500);
    expect(sum(stats, (s) => s.store!.errors + s.store!.writeErrors + s.store!.skipped)).toBe(0);
    // Every key expires within ttlMs (default 1 h).
    const ttl = await raw.pttl(responseKey(keyPrefix, log[0]!.answer.id!));
    expect(ttl).toBeGreaterThan(3_500_000);
    expect(ttl).toBeLessThanOrEqual(3_600_000);
  });

  it("Redis killed mid-run: nothing fails that the local map would not fail; back and empty, new conversations are shared again", async () => {
    const random = seeded(2);
    const running = newConversations(1000, 30);
    const before = await converse(workers, running, 2, random);
    const failed = before.filter((t) => t.answer.ok !== true);
    expect(failed, failed.length === 0 ? "" : JSON.stringify(await Promise.all(workers.map((w) => w.stats())))).toEqual([]);

    await redis.kill();
    const during = [...(await converse(workers, running, 3, random)), ...(await converse(workers, newConversations(2000, 10), 1, random))];
    for (const t of during) {
      // A first turn, or a follow-up through the process that created its previous response: as with the local map, it succeeds there.
      if (t.previous === undefined || t.previous.process === t.process) {
        expect(t.answer).toMatchObject({ ok: true });
        if (t.previous !== undefined) expect(t.answer.instance).toBe(t.previous.instance);
      } else if (t.answer.ok !== true) {
        // Elsewhere, as with the local map: routed by its prompt, a 404 from the engine when it lands on another instance.
        expect(t.answer.status).toBe(404);
        expect(String(t.answer.code)).not.toMatch(/^ERR_/);
      }
    }
    expect(during.some((t) => t.answer.ok !== true)).toBe(true); // the outage was felt: cross-process follow-ups failed
    const down = await Promise.all(workers.map((w) => w.stats()));
    expect(sum(down, (s) => s.store!.skipped + s.store!.errors)).toBeGreaterThan(0);
    expect(sum(down, (s) => s.store!.writeErrors)).toBeGreaterThan(0);

    await redis.restart();
    await eventually(async () => (await Promise.all(workers.map((w) => w.stats()))).every((s) => s.store!.healthy), 50);
    const after = await converse(workers, newConversations(3000, 20), 3, random);
    expect(after.filter((t) => t.answer.ok !== true)).toEqual([]);
    for (const t of after) if (t.previous !== undefined) expect(t.answer.instance).toBe(t.previous.instance);
    expect(after.some((t) => t.previous !== undefined && t.previous.process !== t.process)).toBe(true);
  }, 20_000);
});

/**
 * A loopback OpenAI-style server whose streamed `POST /v1/responses` sends a `response.created`
 * with the id it is given; anything else is answered `{}` (no id).
 */
async function idServer(name: string, nextId: () => string): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      const headers = { "x-prefix-router-instance": name };
      if (req.method === "POST" && req.url === "/v1/responses" && (JSON.parse(body) as { stream?: boolean }).stream === true) {
        const id = nextId();
        res.writeHead(200, { ...headers, "content-type": "text/event-stream" });
        res.write(`event: response.created\ndata: ${JSON.stringify({ type: "response.created", response: { id } })}\n\n`);
        res.end(`event: response.completed\ndata: ${JSON.stringify({ type: "response.completed", response: { id, usage: { input_tokens: 1, output_tokens: 1 } } })}\n\n`);
      } else {
        res.writeHead(200, { ...headers, "content-type": "application/json" });
        res.end("{}");
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}/v1` };
}

describe.skipIf(SKIP !== undefined)("the store in one process: ids, keys, TTL, failures, options", () => {
  let redis: OwnRedis;
  let raw: Redis;
  const servers: Server[] = [];
  let targets: OpenAITarget[];
  let ids: string[] = [];
  const keyPrefix = `hostile-${randomUUID()}`;
  // A write that reaches Redis more than timeoutMs after it was sent is refused: generous here, as above.
  const store = { source: "redis" as const, url: "", keyPrefix, ttlMs: 60_000, timeoutMs: STORE_TIMEOUT_MS };

  beforeAll(async () => {
    redis = await OwnRedis.start();
    store.url = redis.url;
    raw = new Redis(redis.url);
    const next = () => ids.shift() ?? "resp_default";
    const a = await idServer("h0", next);
    const b = await idServer("h1", next);
    servers.push(a.server, b.server);
    targets = [
      { id: "h0", baseURL: a.url },
      { id: "h1", baseURL: b.url },
    ];
  });
  afterAll(async () => {
    raw?.disconnect();
    for (const s of servers) s.close();
    await redis?.kill();
  });

  const create = async (fetch: typeof globalThis.fetch, input: string): Promise<string | null> => {
    const res = await fetch("http://fleet/v1/responses", { method: "POST", body: JSON.stringify({ model: "m", input, stream: true }) });
    await res.text();
    return res.headers.get("x-prefix-router-instance");
  };
  const followUp = async (fetch: typeof globalThis.fetch, previous: string): Promise<string | null> => {
    const res = await fetch("http://fleet/v1/responses", { method: "POST", body: JSON.stringify({ model: "m", input: "next", previous_response_id: previous }) });
    await res.text();
    return res.headers.get("x-prefix-router-instance");
  };

  it("escapes hostile ids (safe ids as they are, others as hex), skips ids over 512 characters, sets a TTL on every key", async () => {
    const hostile = ["resp_ok-1.2", "x:6162", "a b", `{${keyPrefix}}:resp:*`, "\r\n*1\r\n$8\r\nFLUSHALL\r\n", "é✓\u0000", "a".repeat(512)];
    const tooLong = "b".repeat(513);
    const writer = await createRoutedFetch({ targets, responseAffinity: { store } });
    const reader = await createRoutedFetch({ targets, responseAffinity: { store } });
    const where = new Map<string, string | null>();
    for (const [i, id] of [...hostile, tooLong].entries()) {
      ids = [id];
      where.set(id, await create(writer.fetch as typeof fetch, `document ${i} `.repeat(50)));
    }
    await eventually(() => writer.router.stats().responseAffinity!.store!.writes === hostile.length);
    const keys = await raw.keys(`{${keyPrefix}}:*`);
    expect(keys).toHaveLength(hostile.length);
    const escaped = new RegExp(`^\\{${keyPrefix}\\}:resp:(?:[A-Za-z0-9_.-]+|x:[0-9a-f]+)$`);
    for (const key of keys) expect(key).toMatch(escaped);
    expect(keys).toContain(`{${keyPrefix}}:resp:resp_ok-1.2`);
    expect(keys).toContain(`{${keyPrefix}}:resp:x:${Buffer.from("x:6162").toString("hex")}`);
    for (const id of hostile) {
      expect(await raw.get(responseKey(keyPrefix, id))).toBe(where.get(id));
      const ttl = await raw.pttl(responseKey(keyPrefix, id));
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
    }
    // Another process finds each id's instance through the store; the id it could not store is routed like any.
    for (const id of hostile) expect(await followUp(reader.fetch as typeof fetch, id)).toBe(where.get(id));
    await followUp(reader.fetch as typeof fetch, tooLong);
    expect(reader.router.stats().responseAffinity).toMatchObject({ localHits: 0, localMisses: hostile.length + 1, store: { hits: hostile.length, misses: 0, skipped: 0 } });
    await Promise.all([writer.router.close(), reader.router.close()]);
  });

  it("ignores values that name no target (foreign, huge), and waits at most timeoutMs on a paused Redis", async () => {
    await raw.set(responseKey(keyPrefix, "resp_foreign"), "not-a-target");
    await raw.set(responseKey(keyPrefix, "resp_huge"), "h0".repeat(5000));
    const patient = await createRoutedFetch({ targets, responseAffinity: { store: { ...store, timeoutMs: 5000 } } });
    expect(await followUp(patient.fetch as typeof globalThis.fetch, "resp_foreign")).toMatch(/^h[01]$/);
    expect(await followUp(patient.fetch as typeof globalThis.fetch, "resp_huge")).toMatch(/^h[01]$/);
    expect(patient.router.stats().responseAffinity!.store).toMatchObject({ hits: 0, misses: 2, errors: 0 });
    await patient.router.close();

    // A clock that stands still: the backoff after the timed-out read lasts for the rest of the test.
    const { fetch, router } = await createRoutedFetch({ targets, clock: { now: () => 0 }, responseAffinity: { store: { ...store, timeoutMs: 100 } } });
    await raw.call("CLIENT", "PAUSE", "1000", "ALL");
    expect(await followUp(fetch as typeof globalThis.fetch, "resp_paused")).toMatch(/^h[01]$/);
    // Backing off: the next read does not wait at all.
    expect(await followUp(fetch as typeof globalThis.fetch, "resp_paused_2")).toMatch(/^h[01]$/);
    expect(router.stats().responseAffinity!.store).toMatchObject({ errors: 1, timeouts: 1, skipped: 1, healthy: false });
    await router.close();
  });

  it("with Redis unreachable from the start, requests go as without the store; close() releases the connection", async () => {
    const down = await createRoutedFetch({ targets, responseAffinity: { store: { ...store, url: "redis://127.0.0.1:1" } } });
    ids = ["resp_unreachable"];
    const at = await create(down.fetch as typeof fetch, "hello ".repeat(40));
    expect(await followUp(down.fetch as typeof fetch, "resp_unreachable")).toBe(at);
    expect(await followUp(down.fetch as typeof fetch, "resp_never_seen")).toMatch(/^h[01]$/);
    await eventually(() => down.router.stats().responseAffinity!.store!.writeErrors === 1);
    expect(down.router.stats().responseAffinity).toMatchObject({ localHits: 1, localMisses: 1, store: { healthy: false, skipped: 1, hits: 0 } });
    await down.router.close();

    const clients = async () => (await raw.client("LIST") as string).trim().split("\n").length;
    const before = await clients();
    const up = await createRoutedFetch({ targets, responseAffinity: { store } });
    expect(await clients()).toBe(before + 1);
    await up.router.close();
    await eventually(async () => (await clients()) === before);
    expect(up.router.stats().responseAffinity!.store!.healthy).toBe(false);
  });

  it("names bad store options", async () => {
    const bad: [unknown, RegExp][] = [
      [null, /`responseAffinity.store` to be an object, got null/],
      [{ source: "memcached" }, /`responseAffinity.store.source` to be "redis", got "memcached"/],
      [{ source: "redis", url: "http://127.0.0.1:6379" }, /`responseAffinity.store.url` to be a redis:\/\/ or rediss:\/\/ URL/],
      [{ source: "redis", keyPrefix: "" }, /`responseAffinity.store.keyPrefix` to be a non-empty string/],
      [{ source: "redis", ttlMs: 999 }, /`responseAffinity.store.ttlMs` to be an integer from 1000 to 604800000, got 999/],
      [{ source: "redis", timeoutMs: 0 }, /`responseAffinity.store.timeoutMs` to be an integer from 1 to 60000, got 0/],
    ];
    for (const [value, message] of bad) {
      await expect(createRoutedFetch({ targets, responseAffinity: { store: value as "redis" } })).rejects.toThrow(message);
    }
    await expect(createRoutedFetch({ targets, responseAffinity: { store: { source: "redis", url: "http://user:secret@h:1" } } })).rejects.not.toThrow(/secret/);
  });
});
