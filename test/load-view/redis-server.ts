/**
 * A real redis-server for the tests: `PREFIX_ROUTER_TEST_REDIS_URL` when set (CI's, started by
 * .ci/redis.sh), else one started here from the `redis-server` binary on PATH, on a free loopback
 * port; neither: the tests that need it are skipped with a message saying so. A server started
 * here can be killed and restarted on the same port (the outage tests need that one).
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createServer, connect } from "node:net";

export const REDIS_URL_ENV = "PREFIX_ROUTER_TEST_REDIS_URL";

/** Whether a redis-server binary is on PATH. */
export const HAS_REDIS_BINARY = spawnSync("redis-server", ["--version"], { stdio: "ignore" }).status === 0;

/** Why Redis tests are skipped, or `undefined` when they can run. */
export const REDIS_SKIP_REASON =
  process.env[REDIS_URL_ENV] === undefined && !HAS_REDIS_BINARY
    ? `no Redis: set ${REDIS_URL_ENV} or put redis-server on PATH (apt-get install -y redis-server; CI starts one with .ci/redis.sh)`
    : undefined;

// In CI the server is part of the job (.ci/run starts it): its absence fails the run, never skips.
if (REDIS_SKIP_REASON !== undefined && process.env["CI"] === "true") throw new Error(`CI=true but ${REDIS_SKIP_REASON}`);
if (REDIS_SKIP_REASON !== undefined) console.warn(`Skipping the Redis load-view tests: ${REDIS_SKIP_REASON}`);

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Resolves once something accepts connections on the port (bounded by `attempts`). */
async function waitForPort(port: number, attempts = 200): Promise<void> {
  for (let i = 0; i < attempts; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.end();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`redis-server did not listen on ${port}`);
}

/** A redis-server process this test file owns. */
export class OwnRedis {
  private proc: ChildProcess | undefined;
  private constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async start(): Promise<OwnRedis> {
    const r = new OwnRedis(await freePort());
    await r.restart();
    return r;
  }

  /** Starts the server (again) on the same port, empty. */
  async restart(): Promise<void> {
    this.proc = spawn("redis-server", ["--port", String(this.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdio: "ignore" });
    await waitForPort(this.port);
  }

  /** SIGKILL, and wait until it is gone. */
  async kill(): Promise<void> {
    const p = this.proc;
    this.proc = undefined;
    if (p === undefined || p.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      p.once("exit", () => resolve());
      p.kill("SIGKILL");
    });
  }
}

/** A Redis URL for tests that only need one: the CI's, else an own server's. */
export async function redisForTests(): Promise<{ url: string; stop(): Promise<void> }> {
  const url = process.env[REDIS_URL_ENV];
  if (url !== undefined) return { url, stop: async () => {} };
  const own = await OwnRedis.start();
  return { url: own.url, stop: () => own.kill() };
}

/** Polls `check` until it is true (no time assertion: the test's own timeout bounds it). */
export async function eventually(check: () => boolean | Promise<boolean>, pauseMs = 20): Promise<void> {
  while (!(await check())) await new Promise((r) => setTimeout(r, pauseMs));
}
