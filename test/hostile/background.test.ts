/**
 * Hostile replicas against the background work — the `engine` load view's `/metrics` scrapes and
 * the active health checks — on loopback servers: a replica that never answers delays only its
 * own figures and checks; a body past `maxBodyBytes` is not read, fails with its reason and
 * closes its connection; a URL with credentials is refused before anything is sent and no
 * password reaches a log line or a stat; `router.close()` ends every request in flight.
 */
import type { IncomingMessage } from "node:http";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Router, type RouterOptions, createRouter, DEFAULTS } from "prefix-router";
import { ManualTimers, withTimers } from "../load-view/manual-timers.js";
import { type Behaviour, type LoopbackServer, startServer, stall } from "./servers.js";

interface Target {
  id: string;
  baseURL: string;
  metricsURL?: string;
  healthURL?: string;
}

async function eventually(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 10));
}

/** vLLM's two load gauges. */
function metricsText(running: number, waiting = 0): string {
  return [
    "# TYPE vllm:num_requests_running gauge",
    `vllm:num_requests_running{model_name="m",engine="0"} ${running}.0`,
    "# TYPE vllm:num_requests_waiting gauge",
    `vllm:num_requests_waiting{model_name="m",engine="0"} ${waiting}.0`,
    "",
  ].join("\n");
}

/** Answers every GET with `text()` (status 200). */
function serve(text: () => string): Behaviour {
  return (_req, res) => {
    res.writeHead(200, { "content-type": "text/plain; version=0.0.4" });
    res.end(text());
  };
}

/** What a test sees of the connections a behaviour answered on. */
interface Sockets {
  opened: number;
  closed: number;
}

function watch(req: IncomingMessage, sockets: Sockets): void {
  sockets.opened++;
  req.socket.once("close", () => sockets.closed++);
}

/** Metrics, then 64 KiB of comment lines at a time until `total` bytes, chunked (no content-length), minding backpressure. */
function hugeBody(total: number, sockets: Sockets): Behaviour {
  return (req, res) => {
    watch(req, sockets);
    res.on("error", () => {});
    res.writeHead(200, { "content-type": "text/plain; version=0.0.4" });
    const head = metricsText(3);
    const filler = `# ${"x".repeat(1021)}\n`.repeat(64);
    let written = head.length;
    res.write(head);
    const pump = (): void => {
      while (written < total) {
        written += filler.length;
        if (!res.write(filler)) {
          res.once("drain", pump);
          return;
        }
      }
      res.end();
    };
    pump();
  };
}

const servers: LoopbackServer[] = [];
const routers: Router<Target>[] = [];

async function fleet(n: number): Promise<{ servers: LoopbackServer[]; targets: Target[] }> {
  const started = await Promise.all(Array.from({ length: n }, () => startServer(serve(() => metricsText(0)))));
  servers.push(...started);
  return { servers: started, targets: started.map((s, i) => ({ id: "abcdefgh"[i]!, baseURL: `${s.origin}/v1` })) };
}

async function router(options: RouterOptions<Target>): Promise<Router<Target>> {
  const r = await createRouter<Target>(options);
  routers.push(r);
  return r;
}

afterEach(async () => {
  for (const r of routers.splice(0)) await r.close();
  for (const s of servers.splice(0)) await s.close();
});

describe("a replica that never answers delays only itself", () => {
  it("engine view: the others refresh on their cadence, decisions see their figures, the hanging one alone goes stale", async () => {
    const { servers: [a, b, h], targets } = await fleet(3);
    let aRunning = 0;
    a!.behaviour = serve(() => metricsText(aRunning));
    const timers = new ManualTimers();
    const clock = { t: 0, now: () => clock.t };
    const r = await router({ targets, clock, concurrencyThreshold: 4, loadView: withTimers({ source: "engine", intervalMs: 100, timeoutMs: 600_000 }, timers) });
    expect(r.stats().loadView).toMatchObject({ healthy: true, others: { a: 0, b: 0, c: 0 } });
    h!.behaviour = stall();
    for (let step = 1; step <= 5; step++) {
      clock.t += 400;
      aRunning = step;
      timers.fire(100); // the loop's tick (not the hanging scrape's timeout)
      // The loop is due again at once: a scrape still in flight does not hold it.
      expect(timers.count(100)).toBe(1);
      await eventually(() => r.stats().loadView!.others["a"] === step);
    }
    // At t = 2000 the hanging target's figure (t = 0) is past staleAfterMs (1000); a and b are fresh.
    expect(r.stats().loadView!.others).toEqual({ a: 5, b: 0, c: null });
    expect(r.stats().loadView!.healthy).toBe(false);
    // One scrape of the hanging target in flight, no pile-up: its first answer and the one it holds.
    expect(h!.heads).toBe(2);
    // Decisions read the fresh figures: a holds 5 ≥ threshold 4, so a key whose first choice is a spills.
    const body = [...Array(50).keys()].map((k) => ({ messages: [{ role: "system", content: `prompt ${k} `.repeat(200) }] })).find((x) => r.rank({ body: x }).targets[0]!.id === "a")!;
    const lease = r.route({ body });
    expect(lease.kind).not.toBe("preferred");
    expect(lease.target.id).not.toBe("a");
    lease.release();
  });

  it("health checks: the others are checked on their cadence while one check hangs", async () => {
    const { servers: [a, , h], targets } = await fleet(3);
    const timers = new ManualTimers();
    const r = await router({ targets, healthCheck: withTimers({ intervalMs: 5000, timeoutMs: 600_000, failuresBeforeDown: 1 }, timers) });
    const failing = (id: string): boolean => r.stats().targets.find((t) => t.id === id)!.failingHealthCheck;
    await eventually(() => timers.size === 1 && h!.heads === 1); // the first checks ended; the loop is due
    h!.behaviour = stall();
    a!.behaviour = (_req, res) => res.writeHead(503).end();
    timers.fire(5000);
    expect(timers.count(5000)).toBe(1);
    await eventually(() => failing("a"));
    a!.behaviour = serve(() => "ok");
    timers.fire(5000);
    await eventually(() => !failing("a"));
    expect(h!.heads).toBe(2);
    expect(failing("c")).toBe(false); // its check has not ended: no verdict yet
  });
});

describe("bodies past maxBodyBytes are not read", () => {
  it(`engine view: a /metrics body over the default ${DEFAULTS.loadView.engineMaxBodyBytes} bytes fails the scrape, says why, and closes the connection`, async () => {
    const { servers: [a, big], targets } = await fleet(2);
    const sockets: Sockets = { opened: 0, closed: 0 };
    big!.behaviour = hugeBody(DEFAULTS.loadView.engineMaxBodyBytes + 64 * 1024, sockets);
    const warnings: unknown[] = [];
    const logger = { debug() {}, info() {}, warn: (_m: string, f: unknown) => warnings.push(f), error() {} };
    const r = await router({ targets, logger, clock: { now: () => 0 }, loadView: withTimers({ source: "engine", timeoutMs: 600_000 }, new ManualTimers()) });
    const stats = r.stats().loadView!;
    expect(stats.others).toEqual({ a: 0, b: null });
    expect(stats.errors).toBe(1);
    expect(stats.lastError).toBe(`b: body larger than ${DEFAULTS.loadView.engineMaxBodyBytes} bytes (\`loadView.maxBodyBytes\`); connection closed`);
    expect(warnings).toEqual([expect.objectContaining({ target: "b", error: expect.stringContaining("body larger than") })]);
    await eventually(() => sockets.closed === 1);
    expect(a!.heads).toBe(1);
  });

  it("engine view: a declared content-length over maxBodyBytes fails at once, before the body comes", async () => {
    const { servers: [, big], targets } = await fleet(2);
    const sockets: Sockets = { opened: 0, closed: 0 };
    big!.behaviour = (req, res) => {
      watch(req, sockets);
      res.writeHead(200, { "content-length": String(10 * 2 ** 30) });
      res.write(metricsText(1)); // and nothing more: only the limit can end this scrape
    };
    const r = await router({ targets, loadView: withTimers({ source: "engine", maxBodyBytes: 1024, timeoutMs: 600_000 }, new ManualTimers()) });
    expect(r.stats().loadView!.lastError).toBe("b: body larger than 1024 bytes (`loadView.maxBodyBytes`); connection closed");
    await eventually(() => sockets.closed === 1);
  }, 20_000);

  it(`health checks: a /health body over the default ${DEFAULTS.healthCheck.maxBodyBytes} bytes fails the check, with its reason`, async () => {
    const { servers: [, big], targets } = await fleet(2);
    const sockets: Sockets = { opened: 0, closed: 0 };
    big!.behaviour = (req, res) => {
      watch(req, sockets);
      res.on("error", () => {});
      res.writeHead(200);
      for (let k = 0; k < 64; k++) res.write("x".repeat(16 * 1024));
      res.end();
    };
    const warnings: unknown[] = [];
    const logger = { debug() {}, info() {}, warn: (_m: string, f: unknown) => warnings.push(f), error() {} };
    const timers = new ManualTimers();
    const r = await router({ targets, logger, healthCheck: withTimers({ failuresBeforeDown: 1, timeoutMs: 600_000 }, timers) });
    await eventually(() => timers.size === 1 && big!.heads === 1);
    expect(r.stats().targets.map((t) => [t.id, t.failingHealthCheck])).toEqual([["a", false], ["b", true]]);
    expect(warnings).toEqual([
      expect.objectContaining({ target: "b", reason: `body larger than ${DEFAULTS.healthCheck.maxBodyBytes} bytes (\`healthCheck.maxBodyBytes\`); connection closed` }),
    ]);
    await eventually(() => sockets.closed === 1);
  });
});

describe("credentials in metrics and health URLs", () => {
  const SECRET = "s3cret-pw";
  let target: LoopbackServer;
  beforeAll(async () => {
    target = await startServer(serve(() => metricsText(0)));
  });
  afterAll(() => target.close());
  const withCredentials = (path: string): string => `http://alice:${SECRET}@127.0.0.1:${target.port}${path}`;

  /** The error of `createRouter(options)` (a router it made is closed). */
  async function errorOf(options: Record<string, unknown>): Promise<Error | undefined> {
    return createRouter(options as unknown as RouterOptions).then(
      async (r) => {
        await r.close();
        return undefined;
      },
      (e: unknown) => e as Error,
    );
  }

  it.each<[string, () => Record<string, unknown>, string]>([
    ["a target's metricsURL", () => ({ targets: [{ id: "a", metricsURL: withCredentials("/metrics") }], loadView: "engine" }), "metricsURL` of target \"a\""],
    ["loadView.metricsURL(target)", () => ({ targets: [{ id: "a" }], loadView: { source: "engine", metricsURL: () => new URL(withCredentials("/metrics")) } }), "loadView.metricsURL(target)` for target \"a\""],
    ["a target's baseURL, for its default metrics URL", () => ({ targets: [{ id: "a", baseURL: withCredentials("/v1") }], loadView: "engine" }), "metricsURL` of target \"a\""],
    ["a target's healthURL", () => ({ targets: [{ id: "a", healthURL: withCredentials("/health") }], healthCheck: true }), "healthURL` of target \"a\""],
    ["healthCheck.url(target)", () => ({ targets: [{ id: "a" }], healthCheck: { url: () => withCredentials("/health") } }), "healthCheck.url(target)` for target \"a\""],
  ])("%s with a user name and password: a TypeError naming it, the secret not echoed, nothing sent", async (_name, options, name) => {
    const heads = target.heads;
    const error = await errorOf(options());
    expect(error).toBeInstanceOf(TypeError);
    expect(error!.message).toContain(`Expected \`${name}`);
    expect(error!.message).toContain("without user name or password");
    expect(error!.message).not.toMatch(/alice|s3cret/);
    expect(target.heads).toBe(heads);
  });

  it.each([
    ["ftp: with credentials", `ftp://alice:${SECRET}@127.0.0.1/metrics`],
    ["no scheme, credentials first", `alice:${SECRET}@127.0.0.1/metrics`],
    ["no //", `http:alice:${SECRET}@127.0.0.1/metrics`],
  ])("an invalid URL (%s) is refused without echoing its password", async (_name, url) => {
    const error = await errorOf({ targets: [{ id: "a", metricsURL: url }], loadView: "engine" });
    expect(error).toBeInstanceOf(TypeError);
    expect(error!.message).toContain("Expected `metricsURL` of target");
    expect(error!.message).not.toContain(SECRET);
  });

  it("setTargets and membership: refused, the set kept, and no password in a log line or a stat", async () => {
    const calls: string[] = [];
    const record = (level: string) => (...args: unknown[]) => void calls.push(JSON.stringify([level, ...args]));
    const logger = { debug: record("debug"), info: record("info"), warn: record("warn"), error: record("error") };
    const good: Target = { id: "a", baseURL: `${target.origin}/v1` };
    const bad: Target = { id: "b", baseURL: `${target.origin}/v1`, metricsURL: withCredentials("/metrics"), healthURL: withCredentials("/health") };
    let offered: Target[] = [good];
    const membershipTimers = new ManualTimers();
    const viewTimers = new ManualTimers();
    const r = await router({
      targets: [],
      logger,
      membership: withTimers({ targets: () => offered }, membershipTimers),
      loadView: withTimers({ source: "engine" }, viewTimers),
      healthCheck: withTimers({}, new ManualTimers()),
    });
    let thrown: unknown;
    try {
      r.setTargets([good, bad]);
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(TypeError);
    expect((thrown as Error).message).not.toMatch(/alice|s3cret/);
    offered = [good, bad];
    membershipTimers.fire();
    await eventually(() => r.stats().membership!.errors === 1);
    viewTimers.fire();
    await eventually(() => viewTimers.size === 1);
    expect(r.targets().map((t) => t.id)).toEqual(["a"]);
    expect(r.stats().membership!.lastError).toContain("without user name or password");
    expect(calls.some((c) => c.includes("membership refresh failed"))).toBe(true);
    expect(JSON.stringify(r.stats())).not.toMatch(/alice|s3cret/);
    expect(calls.join("\n")).not.toMatch(/alice|s3cret/);
  });
});

describe("router.close() ends the background requests in flight", () => {
  it("a health check the replica never answers: its connection is closed, no timer left", async () => {
    const { servers: [h], targets } = await fleet(1);
    const sockets: Sockets = { opened: 0, closed: 0 };
    h!.behaviour = (req) => watch(req, sockets);
    const timers = new ManualTimers();
    const r = await createRouter<Target>({ targets, healthCheck: withTimers({ timeoutMs: 600_000 }, timers) });
    await eventually(() => sockets.opened === 1);
    await r.close();
    expect(timers.size).toBe(0);
    await eventually(() => sockets.closed === 1);
  }, 20_000);

  it("a /metrics scrape the replica never answers: its connection is closed, no timer left", async () => {
    const { servers: [h], targets } = await fleet(1);
    const timers = new ManualTimers();
    const r = await createRouter<Target>({ targets, loadView: withTimers({ source: "engine", timeoutMs: 600_000 }, timers) });
    const sockets: Sockets = { opened: 0, closed: 0 };
    h!.behaviour = (req) => watch(req, sockets);
    timers.fire(DEFAULTS.loadView.engineIntervalMs);
    await eventually(() => sockets.opened === 1);
    await r.close();
    expect(timers.size).toBe(0);
    await eventually(() => sockets.closed === 1);
    expect(r.stats().loadView).toMatchObject({ healthy: false, errors: 0 });
  }, 20_000);
});
