/**
 * Micro-benchmark of the routing hot path: `route()` + `release()` per request, beside
 * `JSON.stringify` of the same body (the cost every client already pays to send it).
 *
 *   npm run bench:micro                       # every strategy in STRATEGIES
 *   npx tsx bench/micro.ts --strategies=prefix-aware --time=2000
 *
 * Workloads (each with 7 and with 64 targets):
 *   (a) chat body whose system message carries an 8,000-token (≈32 KB) shared document, a
 *       different user question every call, text mode (the OpenAI-compatible path).
 *       Goal: prefix-aware median ≤ 20 µs.
 *   (b) 128 KB JSON body (long chat history) as UTF-8 bytes, bytes mode (SageMaker Invoke path),
 *       and the same body as a parsed object (what the SageMaker adapter hands the router).
 *   (c) 200-byte chat body, text mode and bytes mode.
 * Each call takes the next body of a pool of distinct bodies, so no cache of the last body can
 * flatter the numbers. Leases are released at once: every pick is the key's first choice.
 *
 * A new strategy appears as new rows by itself once it is in STRATEGIES; give it options in
 * STRATEGY_OPTIONS if it needs any.
 */
import { Bench } from "tinybench";
import { STRATEGIES, createRouter, type RouterOptions, type RoutingMode, type Strategy, type TargetSpec } from "prefix-router";
import { Rng } from "../src/sim/random.js";

// ---------------------------------------------------------------------------------------------
// configuration

const args = new Map(
  process.argv.slice(2).map((a) => {
    const [k, v = ""] = a.replace(/^--/, "").split("=");
    return [k as string, v];
  }),
);
const TIME_MS = Number(args.get("time") ?? 500);
const strategies: readonly string[] = args.get("strategies")?.split(",") ?? STRATEGIES;
const TARGET_COUNTS = [7, 64];
const POOL = 512;
const GOAL_US = 20;

/** Extra router options per strategy (e.g. a future longest-prefix strategy's index size). */
const STRATEGY_OPTIONS: Record<string, Partial<RouterOptions>> = {};

// ---------------------------------------------------------------------------------------------
// bodies

/** A seeded PRNG (the package's sfc32), so generated data is reproducible from its seed. */
function prng(seed: number): () => number {
  return new Rng(seed).asFunction();
}

const WORDS = (
  "the customer account refund policy order shipping within days of delivery must include receipt " +
  "item returned condition original packaging exceptions apply to digital goods gift cards and " +
  "final sale items support agent should verify identity before discussing billing details, " +
  "escalate disputes over 500 euros to a supervisor; never promise delivery dates. préférence über"
).split(" ");

/** ≈`chars` characters of English-like prose (≈4 characters per token). */
function prose(chars: number, seed: number): string {
  const random = prng(seed);
  const out: string[] = [];
  let n = 0;
  while (n < chars) {
    const w = WORDS[Math.floor(random() * WORDS.length)] as string;
    out.push(w);
    n += w.length + 1;
    if (random() < 0.06) {
      out.push("\n\n");
      n += 2;
    }
  }
  return out.join(" ").slice(0, chars);
}

const question = (i: number) =>
  `Ticket #${10_000 + i}: I ordered item ${(i * 7919) % 100_000} on day ${i % 28}; ${prose(60 + (i % 90), i)}. What are my options?`;

const DOCUMENT = `You are the support assistant of ACME. Answer from this policy only.\n\n${prose(32_000, 1)}`;

interface Workload {
  name: string;
  mode: RoutingMode;
  /** The body passed to route(). */
  bodies: unknown[];
  /** The same bodies as objects, for the JSON.stringify baseline. */
  objects: unknown[];
}

function chatWorkload(): Workload {
  const objects = Array.from({ length: POOL }, (_, i) => ({
    model: "llama-3.1-70b-instruct",
    messages: [
      { role: "system", content: DOCUMENT },
      { role: "user", content: question(i) },
    ],
    max_tokens: 512,
    temperature: 0.2,
    stream: true,
  }));
  return { name: "(a) chat, 32 KB shared prefix", mode: "text", bodies: objects, objects };
}

function largeJsonWorkload(form: "bytes" | "object"): Workload {
  const history: { role: string; content: string }[] = [{ role: "system", content: DOCUMENT }];
  for (let t = 0; JSON.stringify(history).length < 128 * 1024 - 4096; t++) {
    history.push({ role: t % 2 === 0 ? "user" : "assistant", content: prose(2_500, 100 + t) });
  }
  const objects = Array.from({ length: POOL }, (_, i) => ({
    model: "llama-3.1-70b-instruct",
    messages: [...history, { role: "user", content: question(i) }],
    parameters: { max_new_tokens: 512, temperature: 0.2, top_p: 0.9 },
  }));
  if (form === "object") return { name: "(b) 128 KB JSON object", mode: "bytes", bodies: objects, objects };
  const enc = new TextEncoder();
  return { name: "(b) 128 KB JSON bytes", mode: "bytes", bodies: objects.map((o) => enc.encode(JSON.stringify(o))), objects };
}

function smallWorkload(mode: RoutingMode): Workload {
  const objects = Array.from({ length: POOL }, (_, i) => ({
    model: "llama-3.1-8b-instruct",
    messages: [{ role: "user", content: `Translate to French (#${i}): the parcel arrives on ${["Monday", "Friday"][i % 2]} ${i % 28}.`.padEnd(105, ".") }],
    max_tokens: 64,
  }));
  return { name: `(c) 200-byte body, ${mode}`, mode, bodies: objects, objects };
}

// ---------------------------------------------------------------------------------------------
// measurement

interface Row {
  workload: string;
  bodyBytes: number;
  mode: RoutingMode;
  targets: number;
  strategy: string;
  medianUs: number;
  p99Us: number;
  stringifyMedianUs: number;
  samples: number;
}

async function measure(fn: () => void): Promise<{ medianUs: number; p99Us: number; samples: number }> {
  const bench = new Bench({ time: TIME_MS, warmupTime: 100, warmupIterations: 64, timestampProvider: "hrtimeNow", throws: true });
  bench.add("task", fn);
  await bench.run();
  const result = bench.tasks[0]?.result;
  if (result === undefined || !("latency" in result)) throw new Error(`benchmark did not complete: ${result?.state}`);
  return { medianUs: result.latency.p50 * 1000, p99Us: result.latency.p99 * 1000, samples: result.latency.samples?.length ?? bench.tasks[0]?.runs ?? 0 };
}

async function run(): Promise<Row[]> {
  const workloads = [chatWorkload(), largeJsonWorkload("bytes"), largeJsonWorkload("object"), smallWorkload("text"), smallWorkload("bytes")];
  const rows: Row[] = [];
  for (const w of workloads) {
    let j = 0;
    const baseline = await measure(() => {
      JSON.stringify(w.objects[j++ % POOL]);
    });
    const bodyBytes = Buffer.byteLength(JSON.stringify(w.objects[0]));
    for (const n of TARGET_COUNTS) {
      const targets: TargetSpec[] = Array.from({ length: n }, (_, i) => ({ id: `replica-${i}` }));
      for (const strategy of strategies) {
        const router = await createRouter({
          targets,
          strategy: strategy as Strategy,
          mode: w.mode,
          ...STRATEGY_OPTIONS[strategy],
        });
        let i = 0;
        const m = await measure(() => {
          router.route({ body: w.bodies[i++ % POOL] }).release();
        });
        rows.push({ workload: w.name, bodyBytes, mode: w.mode, targets: n, strategy, ...m, stringifyMedianUs: baseline.medianUs });
        process.stderr.write(".");
      }
    }
  }
  process.stderr.write("\n");
  return rows;
}

function format(rows: Row[]): string {
  const header = ["workload", "body", "mode", "targets", "strategy", "median µs", "p99 µs", "JSON.stringify median µs", "ratio", "goal"];
  const kb = (b: number) => (b >= 1024 ? `${(b / 1024).toFixed(1)} KB` : `${b} B`);
  const us = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(2));
  const lines = rows.map((r) => [
    r.workload,
    kb(r.bodyBytes),
    r.mode,
    String(r.targets),
    r.strategy,
    us(r.medianUs),
    us(r.p99Us),
    us(r.stringifyMedianUs),
    `${(r.medianUs / r.stringifyMedianUs).toFixed(2)}×`,
    r.workload.startsWith("(a)") && r.strategy === "prefix-aware" ? (r.medianUs <= GOAL_US ? `≤${GOAL_US} µs ✓` : `>${GOAL_US} µs ✗`) : "",
  ]);
  const widths = header.map((h, c) => Math.max(h.length, ...lines.map((l) => (l[c] as string).length)));
  const numeric = new Set([1, 3, 5, 6, 7, 8]);
  const cell = (s: string, c: number) => (numeric.has(c) ? s.padStart(widths[c] as number) : s.padEnd(widths[c] as number));
  return [
    `| ${header.map(cell).join(" | ")} |`,
    `|${widths.map((w, c) => (numeric.has(c) ? `${"-".repeat(w + 1)}:` : "-".repeat(w + 2))).join("|")}|`,
    ...lines.map((l) => `| ${l.map(cell).join(" | ")} |`),
  ].join("\n");
}

const rows = await run();
console.log(
  `route() + release() per request; ${TIME_MS} ms per row; Node ${process.version}; ratio = median / JSON.stringify median of the same body\n`,
);
console.log(format(rows));
