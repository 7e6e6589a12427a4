/**
 * Micro-benchmark of the routing hot path: `route()` + `release()` per request, beside
 * `JSON.stringify` of the same body (the cost every client already pays to send it) and, for
 * bodies given as bytes, `JSON.parse` of them (`JSON.parse(new TextDecoder().decode(bytes))`, what
 * reading them as JSON costs).
 *
 *   npm run bench:micro                                  # every strategy in STRATEGIES
 *   npx tsx microbench/micro.ts --strategies=prefix-aware --time=2000
 *   npm run bench:micro -- --markdown docs/bench-micro.md   # also write the tables as markdown
 *
 * Workloads (each with 7 and with 64 targets):
 *   (a) chat body whose system message carries an 8,000-token (≈32 KB) shared document, a
 *       different user question every call, text mode (the OpenAI-compatible path).
 *   (b) 128 KB JSON body (long chat history) as UTF-8 bytes, bytes mode (SageMaker Invoke path),
 *       and the same body as a parsed object (what the SageMaker adapter hands the router).
 *   (c) 200-byte chat body, text mode and bytes mode.
 * Each call takes the next body of a pool of distinct bodies, so no cache of the last body can
 * flatter the numbers. Leases are released at once: every pick is the key's first choice.
 * The cost goals are checked below the table, on the 7-target rows.
 *
 * A new strategy appears as new rows by itself once it is in STRATEGIES; give it options in
 * STRATEGY_OPTIONS if it needs any.
 */
import { writeFileSync } from "node:fs";
import { Bench } from "tinybench";
import { STRATEGIES, createRouter, type RouterOptions, type RoutingMode, type TargetSpec } from "prefix-router";
import xxhash from "xxhash-wasm";
import { writeCanonicalPrefix } from "../src/routing/canonical-json.js";
import { parseJsonTextChecked } from "../src/internal/json-parse.js";
import { scanJson } from "../src/routing/json-scan.js";
import { PrefixWriter } from "../src/routing/prefix-writer.js";
import { xxh32 } from "../src/internal/xxh32.js";
import { Rng } from "../tools/sim/random.js";

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
const TIME_MS = Number(args.get("time") ?? 500);
const strategies: readonly string[] = args.get("strategies")?.split(",") ?? STRATEGIES;
const TARGET_COUNTS = [7, 64];
const POOL = 512;
const MARKDOWN = args.get("markdown");

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
  /** Whether `bodies` are UTF-8 bytes (then JSON.parse of them is measured too). */
  bytes?: boolean;
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
  return { name: "(b) 128 KB JSON bytes", mode: "bytes", bodies: objects.map((o) => enc.encode(JSON.stringify(o))), objects, bytes: true };
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
  /** JSON.parse of the body's bytes, for byte bodies. */
  parseMedianUs: number | undefined;
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
    const decoder = new TextDecoder();
    let k = 0;
    const parse = w.bytes
      ? await measure(() => {
          JSON.parse(decoder.decode(w.bodies[k++ % POOL] as Uint8Array));
        })
      : undefined;
    const bodyBytes = Buffer.byteLength(JSON.stringify(w.objects[0]));
    for (const n of TARGET_COUNTS) {
      const targets: TargetSpec[] = Array.from({ length: n }, (_, i) => ({ id: `replica-${i}` }));
      for (const strategy of strategies) {
        const router = await createRouter({
          targets,
          strategy: strategy as (typeof STRATEGIES)[number],
          mode: w.mode,
          ...STRATEGY_OPTIONS[strategy],
        });
        let i = 0;
        const m = await measure(() => {
          router.route({ body: w.bodies[i++ % POOL] }).release();
        });
        rows.push({ workload: w.name, bodyBytes, mode: w.mode, targets: n, strategy, ...m, stringifyMedianUs: baseline.medianUs, parseMedianUs: parse?.medianUs });
        process.stderr.write(".");
      }
    }
  }
  process.stderr.write("\n");
  return rows;
}

const us = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(2));
const times = (x: number) => `${x.toFixed(2)}×`;

function format(rows: Row[]): string {
  const header = ["workload", "body", "mode", "targets", "strategy", "median µs", "p99 µs", "JSON.stringify µs", "÷ stringify", "JSON.parse µs", "÷ parse"];
  const kb = (b: number) => (b >= 1024 ? `${(b / 1024).toFixed(1)} KB` : `${b} B`);
  const lines = rows.map((r) => [
    r.workload,
    kb(r.bodyBytes),
    r.mode,
    String(r.targets),
    r.strategy,
    us(r.medianUs),
    us(r.p99Us),
    us(r.stringifyMedianUs),
    times(r.medianUs / r.stringifyMedianUs),
    r.parseMedianUs === undefined ? "" : us(r.parseMedianUs),
    r.parseMedianUs === undefined ? "" : times(r.medianUs / r.parseMedianUs),
  ]);
  const widths = header.map((h, c) => Math.max(h.length, ...lines.map((l) => (l[c] as string).length)));
  const numeric = new Set([1, 3, 5, 6, 7, 8, 9, 10]);
  const cell = (s: string, c: number) => (numeric.has(c) ? s.padStart(widths[c] as number) : s.padEnd(widths[c] as number));
  return [
    `| ${header.map(cell).join(" | ")} |`,
    `|${widths.map((w, c) => (numeric.has(c) ? `${"-".repeat(w + 1)}:` : "-".repeat(w + 2))).join("|")}|`,
    ...lines.map((l) => `| ${l.map(cell).join(" | ")} |`),
  ].join("\n");
}

/** The cost goals, each against the 7-target rows of one run. */
function goals(rows: Row[]): string {
  const row = (workload: string, strategy: string) => rows.find((r) => r.workload.startsWith(workload) && r.strategy === strategy && r.targets === 7);
  const lines: string[] = [];
  const check = (goal: string, measured: string, ok: boolean) => lines.push(`| ${goal} | ${measured} | ${ok ? "✓" : "✗"} |`);
  const a = row("(a)", "longest-prefix");
  const paA = row("(a)", "prefix-aware");
  if (paA) check("(a) 32 KB text: `prefix-aware` ≤ 20 µs", `${us(paA.medianUs)} µs`, paA.medianUs <= 20);
  if (a) {
    check("(a) 32 KB text: `longest-prefix` ≤ 10 µs", `${us(a.medianUs)} µs`, a.medianUs <= 10);
    check("(a) 32 KB text: `longest-prefix` ≤ 0.3× JSON.stringify", times(a.medianUs / a.stringifyMedianUs), a.medianUs <= 0.3 * a.stringifyMedianUs);
  }
  const obj = row("(b) 128 KB JSON object", "longest-prefix");
  if (obj) check("(b) 128 KB object: `longest-prefix` ≤ 60 µs", `${us(obj.medianUs)} µs`, obj.medianUs <= 60);
  for (const strategy of ["prefix-aware", "longest-prefix"]) {
    const b = row("(b) 128 KB JSON bytes", strategy);
    if (b?.parseMedianUs !== undefined) check(`(b) 128 KB bytes: \`${strategy}\` ≤ 0.3× JSON.parse`, times(b.medianUs / b.parseMedianUs), b.medianUs <= 0.3 * b.parseMedianUs);
  }
  const c = row("(c) 200-byte body, text", "longest-prefix");
  const paC = row("(c) 200-byte body, text", "prefix-aware");
  if (c && paC) check("(c) 200 B text: `longest-prefix` ≤ 2× `prefix-aware`", times(c.medianUs / paC.medianUs), c.medianUs <= 2 * paC.medianUs);
  return lines.length === 0 ? "" : ["| goal (7 targets) | measured | |", "|---|---:|---|", ...lines].join("\n");
}

/**
 * The floors under the goals: the parts of a decision no implementation of today's routing input
 * and chain format can skip, each measured alone on the same bodies. (a) hashes 64 KB of UTF-16 in
 * 128 XXH32 blocks; bytes mode must validate the whole body (its validity decides between canonical
 * and raw bytes) — the scanner alone is that pass.
 */
async function floors(): Promise<string> {
  const chat = chatWorkload().objects[0] as { messages: { content: string }[] };
  const text = chat.messages.map((m) => m.content).join("");
  const writer = new PrefixWriter();
  writer.begin(4 * text.length);
  writer.utf16(text, text.length);
  const utf16Bytes = writer.length;
  const api = await xxhash();
  const block = 512;
  const blocks = Array.from({ length: Math.floor(utf16Bytes / block) }, (_, k) => writer.bytes.subarray(k * block, (k + 1) * block));
  const bytesBody = largeJsonWorkload("bytes").bodies[0] as Uint8Array;
  const objectBody = largeJsonWorkload("object").objects[0];
  const decoder = new TextDecoder();
  const out = new PrefixWriter();
  const lines: string[] = ["| floor | median µs |", "|---|---:|"];
  const row = async (name: string, fn: () => void) => lines.push(`| ${name} | ${us((await measure(fn)).medianUs)} |`);
  await row(`(a) write the ${text.length}-character prompt as UTF-16LE`, () => {
    writer.begin(4 * text.length);
    writer.utf16(text, text.length);
  });
  await row(`(a) XXH32 chain over its ${blocks.length} blocks of ${block} bytes (this package's JS XXH32)`, () => {
    let k = 0;
    for (let i = 0; i < blocks.length; i++) k = xxh32(writer.bytes, writer.words, i * block, (i + 1) * block, k);
  });
  await row("(a) the same chain with xxhash-wasm's h32Raw", () => {
    let k = 0;
    for (const b of blocks) k = api.h32Raw(b, k >>> 0);
  });
  await row(`(b) bytes: validate the ${(bytesBody.length / 1024).toFixed(0)} KB body (scanJson: UTF-8, grammar, controls)`, () => scanJson(bytesBody));
  await row("(b) bytes: JSON.parse(TextDecoder.decode(body))", () => JSON.parse(decoder.decode(bytesBody)));
  await row("(b) object: write the first 64 KB of canonical JSON as UTF-8 (no hashing)", () => {
    out.begin(65_536);
    writeCanonicalPrefix(objectBody, 65_536, out);
  });
  return lines.join("\n");
}

/**
 * The JSON reader the adapters and text mode use, with the check for keys spelled with escapes it
 * runs on V8 12.8+ (Node.js 24 and later, whose JSON.parse can misread them), beside JSON.parse
 * alone on the same texts. On Node.js 20 and 22 the reader is JSON.parse itself.
 */
async function parsing(): Promise<string> {
  const chat = JSON.stringify(chatWorkload().objects[0]);
  const weather = (i: number) => JSON.stringify({ city: "Paris", day: i, forecast: Array.from({ length: 8 }, (_, h) => ({ hour: h, temp: 12 + h, sky: "clear" })) });
  const tools = JSON.stringify({
    model: "llama-3.1-70b-instruct",
    messages: Array.from({ length: 40 }, (_, i) =>
      i % 2 === 0
        ? { role: "assistant", tool_calls: [{ id: `call_${i}`, type: "function", function: { name: "weather", arguments: JSON.stringify({ city: "Paris", day: i }) } }] }
        : { role: "tool", tool_call_id: `call_${i - 1}`, content: weather(i) },
    ),
  });
  const quoted = JSON.stringify({ messages: [{ role: "user", content: 'say "yes", then "no"; '.repeat(1500) }] });
  const large = new TextDecoder().decode(largeJsonWorkload("bytes").bodies[0] as Uint8Array);
  const lines: string[] = ["| text | JSON.parse µs | with the key check µs | ratio |", "|---|---:|---:|---:|"];
  for (const [name, text] of [
    ["(a) chat body", chat],
    ["(b) 128 KB JSON", large],
    ["tool calls and results (JSON inside strings)", tools],
    ["an escaped quote every 7 characters", quoted],
  ] as const) {
    const plain = await measure(() => JSON.parse(text));
    const checked = await measure(() => parseJsonTextChecked(text));
    lines.push(`| ${name}, ${(text.length / 1024).toFixed(0)} K characters | ${us(plain.medianUs)} | ${us(checked.medianUs)} | ${times(checked.medianUs / plain.medianUs)} |`);
  }
  return lines.join("\n");
}

const rows = await run();
const title = `route() + release() per request; ${TIME_MS} ms per row; Node ${process.version}; ÷ stringify, ÷ parse = median / the baseline's median on the same bodies`;
const report = `${title}\n\n${format(rows)}\n\n${goals(rows)}\n\nFloors (each part alone, same bodies):\n\n${await floors()}\n\nReading JSON text (the key check runs on Node.js 24 and later):\n\n${await parsing()}\n`;
console.log(report);
if (MARKDOWN !== undefined && MARKDOWN !== "") {
  writeFileSync(
    MARKDOWN,
    `# Micro-benchmark of the routing hot path\n\nWritten by \`npm run bench:micro -- --markdown ${MARKDOWN}\` (microbench/micro.ts): one run on one machine; medians move by 10–30% between runs on a shared machine, ratios less.\n\n${report}`,
  );
  console.error(`Wrote ${MARKDOWN}`);
}
