/**
 * One application process of the live load-view test (live.test.ts): a router with the `redis`
 * load view in front of the live emulated fleet, `concurrency` streams at a time, all with the
 * same prompt prefix. Prints `ready` once the shared view is up, then `{"completed","failed"}`
 * when told `stop` on stdin (after closing its router). Run with `node --import tsx`.
 */
import { createInterface } from "node:readline";
import { createRouter } from "../../src/index.js";

const [redisUrl, keyPrefix, processId, urlsJson, concurrencyText, thresholdText] = process.argv.slice(2);
const urls = JSON.parse(urlsJson!) as string[];
const targets = urls.map((url, i) => ({ id: `i${i}`, baseURL: `${url}/v1` }));
const router = await createRouter({
  targets,
  concurrencyThreshold: Number(thresholdText),
  loadView: { source: "redis", url: redisUrl, keyPrefix, processId, leaseTtlMs: 2000, refreshIntervalMs: 20 },
});
const system = "You are the support assistant of one product; its whole manual follows. ".repeat(60);
let completed = 0;
let failed = 0;
let stopping = false;

async function one(n: number): Promise<void> {
  const body = { model: "meta-llama/Llama-3.1-70B-Instruct", stream: true, max_tokens: 80, messages: [{ role: "system", content: system }, { role: "user", content: `question ${processId} ${n}` }] };
  const lease = router.route({ body });
  try {
    const res = await fetch(`${lease.target.baseURL}/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    if (res.status !== 200 || res.body === null) throw new Error(`HTTP ${res.status}`);
    const reader = res.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (value.length > 0) lease.firstByte();
    }
    lease.release("success");
    completed++;
  } catch {
    lease.release("connect-error");
    failed++;
  }
}

async function loop(k: number): Promise<void> {
  for (let n = 0; !stopping; n++) await one(k * 1_000_000 + n);
}

const shared = (): boolean => router.stats().loadView?.healthy === true;
while (!shared()) await new Promise((r) => setTimeout(r, 10));
process.stdout.write("ready\n");
const loops = Array.from({ length: Number(concurrencyText) }, (_, k) => loop(k));
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() !== "stop") continue;
  stopping = true;
  await Promise.all(loops);
  await router.close();
  process.stdout.write(`${JSON.stringify({ completed, failed })}\n`);
  process.exit(0);
}
