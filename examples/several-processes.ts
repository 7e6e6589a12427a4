/**
 * Several application processes in front of one fleet, sharing one load view.
 *
 *   REDIS_URL=redis://127.0.0.1:6379 npx tsx examples/several-processes.ts redis
 *   npx tsx examples/several-processes.ts engine      # the replicas' own /metrics, no Redis
 *   npx tsx examples/several-processes.ts local       # each process counts only its own requests
 *
 * Starts a 4-instance emulated vLLM fleet on loopback, then four worker processes (this file,
 * with `worker`), each wrapping an OpenAI client with `routeOpenAI` and the chosen `loadView`.
 * Each keeps 10 streams going, all with the same system prompt, for 5 seconds, against a
 * `concurrencyThreshold` of 20: alone, a process never fills the prompt's first-choice replica;
 * together, on their local views, they send it all 40. Prints the most requests any replica held
 * at once, sampled from the fleet, and each replica's share of the requests. One run each:
 *
 *   local:  most in flight on one replica 40 (threshold 20); shares i0 100%, i1 0%, i2 0%, i3 0%
 *   redis:  20; i0 50%, i1 17%, i2 16%, i3 17%
 *   engine: 28 (a poll every 100 ms lets it overshoot); i0 53%, i1 16%, i2 15%, i3 17%
 */
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import type { LoadViewOption } from "prefix-router";
import { DEFAULT_MODEL, startFleet } from "prefix-router/fleet";
import { getRouter, routeOpenAI } from "prefix-router/openai";

const PROCESSES = 4;
const STREAMS = 10;
const THRESHOLD = 20;
const SECONDS = 5;

function loadView(name: string | undefined): LoadViewOption {
  if (name === "redis") return { source: "redis", url: process.env["REDIS_URL"] ?? "redis://127.0.0.1:6379" };
  if (name === "engine") return { source: "engine", peers: PROCESSES }; // the engines cannot tell how many routers share them
  return "local";
}

async function worker(urls: string[], view: string): Promise<void> {
  const client = await routeOpenAI(new OpenAI({ apiKey: "unused", baseURL: "http://vllm-fleet/v1" }), {
    targets: urls.map((url, i) => ({ id: `i${i}`, baseURL: `${url}/v1` })),
    concurrencyThreshold: THRESHOLD,
    loadView: loadView(view),
    // Says so if Redis or /metrics is unreachable (routing goes on locally), and when spills pile up.
    logger: { debug() {}, info: (m: string) => console.log(m), warn: (m: string) => console.warn(m), error: (m: string) => console.error(m) },
  });
  const system = "You answer questions about one product; its whole manual follows. ".repeat(80); // longer than prefixLength (4,096): one routing key
  const until = Date.now() + SECONDS * 1000;
  let completed = 0;
  const stream = async (k: number): Promise<void> => {
    for (let n = 0; Date.now() < until; n++) {
      const chunks = await client.chat.completions.create({
        model: DEFAULT_MODEL,
        stream: true,
        max_tokens: 60,
        messages: [
          { role: "system", content: system },
          { role: "user", content: `question ${process.pid}-${k}-${n}` },
        ],
      });
      for await (const _chunk of chunks);
      completed++;
    }
  };
  await Promise.all(Array.from({ length: STREAMS }, (_, k) => stream(k)));
  await getRouter(client)!.close(); // stops the view's loops; a redis view removes this process's counts
  process.send!({ completed });
}

async function main(view: string): Promise<void> {
  const fleet = await startFleet({ instances: 4, timeScale: 0.1 });
  let max = 0;
  const sampler = setInterval(() => {
    for (const s of Object.values(fleet.stats())) max = Math.max(max, s.running + s.waiting);
  }, 20);
  const done = Array.from({ length: PROCESSES }, () => {
    const child = fork(fileURLToPath(import.meta.url), ["worker", JSON.stringify(fleet.urls), view]);
    return new Promise<number>((resolve, reject) => {
      child.once("message", (m) => resolve((m as { completed: number }).completed));
      child.once("exit", (code) => (code === 0 ? undefined : reject(new Error(`a worker exited with ${code}`))));
    });
  });
  const completed = (await Promise.all(done)).reduce((a, b) => a + b, 0);
  clearInterval(sampler);
  const stats = fleet.stats();
  const total = Object.values(stats).reduce((a, s) => a + s.requests, 0);
  const shares = Object.entries(stats).map(([id, s]) => `${id} ${Math.round((100 * s.requests) / total)}%`);
  console.log(`loadView ${view}: ${PROCESSES} processes, ${completed} requests; most in flight on one replica: ${max} (threshold ${THRESHOLD}); shares: ${shares.join(", ")}`);
  await fleet.stop();
}

if (process.argv[2] === "worker") await worker(JSON.parse(process.argv[3]!) as string[], process.argv[4]!);
else await main(process.argv[2] ?? "redis");
