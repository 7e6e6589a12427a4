/**
 * Soak benchmark of the `redis` load view: does its memory stay flat while traffic is steady?
 *
 *   npx tsx bench/redis-soak.ts                      # 5 minutes, 1,400 requests/s, +2 ms round trip
 *   npx tsx bench/redis-soak.ts --minutes 1 --rate 1000 --delay-ms 2 --hold-ms 20
 *   npx tsx bench/redis-soak.ts --redis redis://127.0.0.1:6379   # an existing server (else one from PATH)
 *   npx tsx bench/redis-soak.ts --minutes 0.5 --sample-seconds 10  # a short run, a line every 10 s
 *
 * One router with `loadView: { source: "redis" }` routes `--rate` requests per second over 8
 * targets (no HTTP: `route()`, then `release()` `--hold-ms` later), spread over every
 * millisecond as real traffic arrives, so changes keep arriving while a round trip is out. Between the view and redis-server sits a TCP proxy on loopback,
 * in a child process (its buffers are not in this heap), that holds every chunk Redis sends back
 * `--delay-ms` before passing it on: each round trip is that much longer, so new changes always
 * arrive before Redis answers.
 *
 * Every minute it prints the heap after a full GC (the script exposes `gc` itself; running node
 * with `--expose-gc` does the same), the achieved request rate and the view's round trips; at the
 * end, the heap after the last minute against the heap after the first. Goal: within 10%.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { type Lease, createRouter } from "prefix-router";

// ---------------------------------------------------------------------------------------------
// configuration

/** `--key=value`, `--key value` or a bare `--flag`. */
const args = new Map<string, string>();
for (let k = 2; k < process.argv.length; k++) {
  const a = process.argv[k] as string;
  if (!a.startsWith("--")) continue;
  const eq = a.indexOf("=");
  if (eq !== -1) args.set(a.slice(2, eq), a.slice(eq + 1));
  else if (k + 1 < process.argv.length && !(process.argv[k + 1] as string).startsWith("--")) args.set(a.slice(2), process.argv[++k] as string);
  else args.set(a.slice(2), "");
}

function numberArg(name: string, fallback: number, min: number): number {
  const raw = args.get(name);
  const n = raw === undefined ? fallback : Number(raw);
  if (!Number.isFinite(n) || n < min) throw new RangeError(`Expected \`--${name}\` to be a number ≥ ${min}, got ${raw}`);
  return n;
}

const MINUTES = numberArg("minutes", 5, 0.05);
const RATE = numberArg("rate", 1400, 1);
const DELAY_MS = numberArg("delay-ms", 2, 0);
const HOLD_MS = numberArg("hold-ms", 20, 0);
const SAMPLE_MS = numberArg("sample-seconds", 60, 1) * 1000;
const TARGETS = Array.from({ length: 8 }, (_, i) => ({ id: `t${i}` }));
const BODIES = Array.from({ length: 64 }, (_, i) => ({
  model: "m",
  messages: [
    { role: "system", content: `You answer questions about policy document ${i}. `.repeat(30) },
    { role: "user", content: "What does it say about refunds?" },
  ],
}));

// ---------------------------------------------------------------------------------------------
// gc

const gc: () => void =
  (globalThis as { gc?: () => void }).gc ??
  (() => {
    setFlagsFromString("--expose-gc");
    return runInNewContext("gc") as () => void;
  })();

function heapAfterGc(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

const mib = (bytes: number): string => (bytes / 1024 / 1024).toFixed(2);

// ---------------------------------------------------------------------------------------------
// redis-server and the delaying proxy

async function freePort(): Promise<number> {
  const s = createServer();
  s.listen(0, "127.0.0.1");
  await once(s, "listening");
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** A redis-server from PATH on a free loopback port, without persistence. */
async function startRedis(): Promise<{ url: string; proc: ChildProcess }> {
  if (spawnSync("redis-server", ["--version"], { stdio: "ignore" }).status !== 0) {
    throw new Error("no redis-server on PATH: pass --redis redis://127.0.0.1:PORT, or `eval \"$(bash .ci/redis.sh start)\"` and pass $PREFIX_ROUTER_TEST_REDIS_URL");
  }
  const port = await freePort();
  const proc = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdio: "ignore" });
  await waitForPort(port);
  return { url: `redis://127.0.0.1:${port}`, proc };
}

async function waitForPort(port: number): Promise<void> {
  const { connect } = await import("node:net");
  for (let i = 0; i < 200; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, "127.0.0.1");
      s.once("connect", () => (s.end(), resolve(true)));
      s.once("error", () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`nothing listens on 127.0.0.1:${port}`);
}

/**
 * The proxy, run by `node -e` in its own process: listens on 127.0.0.1 (port 0), connects each
 * client to the upstream, passes requests on at once and holds each chunk of the answers
 * DELAY ms (timers fire in order, so the byte stream keeps its order). Prints its port.
 */
const PROXY_SOURCE = `
const net = require("node:net");
const [upHost, upPort, delay] = [process.argv[1], Number(process.argv[2]), Number(process.argv[3])];
const server = net.createServer((client) => {
  const up = net.connect(upPort, upHost);
  client.on("data", (chunk) => up.write(chunk));
  up.on("data", (chunk) => setTimeout(() => client.destroyed || client.write(chunk), delay));
  const end = () => { client.destroy(); up.destroy(); };
  client.on("close", end); up.on("close", end); client.on("error", end); up.on("error", end);
});
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
process.on("disconnect", () => process.exit(0));
`;

async function startProxy(upstream: string, delayMs: number): Promise<{ url: string; proc: ChildProcess }> {
  const u = new URL(upstream);
  const proc = spawn(process.execPath, ["-e", PROXY_SOURCE, u.hostname, u.port || "6379", String(delayMs)], { stdio: ["ignore", "pipe", "inherit", "ipc"] });
  const [line] = (await once(proc.stdout!, "data")) as [Buffer];
  const port = Number(line.toString().trim());
  const url = new URL(upstream);
  url.hostname = "127.0.0.1";
  url.port = String(port);
  return { url: url.href, proc };
}

async function stop(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = once(proc, "exit");
  proc.kill("SIGTERM");
  await exited;
}

// ---------------------------------------------------------------------------------------------
// the run

const given = args.get("redis") ?? process.env["PREFIX_ROUTER_TEST_REDIS_URL"];
const own = given === undefined ? await startRedis() : undefined;
const upstream = given ?? own!.url;
const proxy = await startProxy(upstream, DELAY_MS);
const keyPrefix = `soak-${process.pid}`;

const router = await createRouter({
  targets: TARGETS,
  concurrencyThreshold: 1024,
  loadView: { source: "redis", url: proxy.url, keyPrefix },
});

console.log(
  `redis soak: ${RATE} requests/s for ${MINUTES} min, leases held ${HOLD_MS} ms, +${DELAY_MS} ms on each answer from Redis (${upstream} via ${proxy.url}); Node ${process.version}`,
);
console.log("| minute | requests/s | round trips/s | script errors | healthy | heap after GC (MiB) | rss (MiB) |");
console.log("|---|---|---|---|---|---|---|");

const start = performance.now();
const end = start + MINUTES * 60_000;
let sent = 0;
let open = 0;
const release = (lease: Lease) => {
  lease.release();
  open--;
};
const drive = setInterval(() => {
  const due = Math.floor(((Math.min(performance.now(), end) - start) / 1000) * RATE);
  for (; sent < due; sent++) {
    const lease = router.route({ body: BODIES[sent % BODIES.length]! });
    open++;
    setTimeout(release, HOLD_MS, lease);
  }
}, 1);

const samples: { minute: number; heap: number }[] = [];
let lastSent = 0;
let lastTrips = 0;
let lastAt = start;
for (let at = start + SAMPLE_MS; ; at += SAMPLE_MS) {
  const until = Math.min(at, end);
  await new Promise((r) => setTimeout(r, Math.max(0, until - performance.now())));
  const now = performance.now();
  const view = router.stats().loadView as { refreshes: number; errors: number; healthy: boolean };
  const heap = heapAfterGc();
  const minute = (now - start) / 60_000;
  samples.push({ minute, heap });
  const seconds = (now - lastAt) / 1000;
  console.log(
    `| ${minute.toFixed(2)} | ${((sent - lastSent) / seconds).toFixed(0)} | ${((view.refreshes - lastTrips) / seconds).toFixed(0)} | ${view.errors} | ${view.healthy} | ${mib(heap)} | ${mib(process.memoryUsage().rss)} |`,
  );
  lastSent = sent;
  lastTrips = view.refreshes;
  lastAt = now;
  if (until >= end) break;
}

clearInterval(drive);
while (open > 0) await new Promise((r) => setTimeout(r, HOLD_MS + 5));
await router.close();
await stop(proxy.proc);
if (own !== undefined) await stop(own.proc);

const first = samples[0]!;
const last = samples.at(-1)!;
const growth = last.heap / first.heap - 1;
console.log(
  `\nheap after GC: ${mib(first.heap)} MiB at ${first.minute.toFixed(2)} min, ${mib(last.heap)} MiB at ${last.minute.toFixed(2)} min: ${growth >= 0 ? "+" : ""}${(100 * growth).toFixed(1)}% ` +
    `(goal: within 10%: ${Math.abs(growth) <= 0.1 ? "met" : "MISSED"})`,
);
