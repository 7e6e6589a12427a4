/**
 * `prefix-router demo`: the README's "run it" command. Starts a 7-instance emulated fleet on
 * loopback and compares every routing strategy on one long-shared-prefix workload through the
 * real `openai` client.
 */
import { parseArgs } from "node:util";
import type { CliIo } from "../fleet/cli.js";
import { DEFAULT_DEMO, DEMO_STRATEGIES, type DemoRow, type DemoStrategy, loadOpenAI, runDemo } from "./demo.js";

export const DEMO_USAGE = `Usage: prefix-router demo [options]

Starts a 7-instance emulated vLLM fleet on loopback, sends one long-shared-prefix workload
through the openai client wrapped by prefix-router once per strategy (each on a cold fleet),
and prints P50/P90/P99 TTFT, cache hit rate, throughput, spillover and instance shares.

Options:
  --requests <n>      requests per strategy (default ${DEFAULT_DEMO.requests})
  --documents <n>     shared 8,000-token documents (default ${DEFAULT_DEMO.documents})
  --rate <r>          arrivals per model second (default ${DEFAULT_DEMO.ratePerSecond})
  --time-scale <x>    wall-clock ms per model ms (default ${DEFAULT_DEMO.timeScale})
  --strategies <list> comma-separated (default ${DEMO_STRATEGIES.join(",")};
                      longest-prefix:exclusive is longest-prefix with exclusive: true)
  --seed <n>          workload seed (default ${DEFAULT_DEMO.seed})
  --json              print the rows as JSON instead of a table
  -h, --help          show this help`;

/** Runs `prefix-router demo`; returns the exit code. */
export async function runDemoCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      requests: { type: "string" },
      documents: { type: "string" },
      rate: { type: "string" },
      "time-scale": { type: "string" },
      strategies: { type: "string" },
      seed: { type: "string" },
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    io.out(DEMO_USAGE);
    return 0;
  }
  const num = (name: string, v: string | undefined, min: number): number | undefined => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isFinite(n) || n < min) throw new RangeError(`--${name} expects a number >= ${min}, got ${v}`);
    return n;
  };
  const strategies = (values.strategies?.split(",").map((s) => s.trim()) ?? [...DEMO_STRATEGIES]) as DemoStrategy[];
  for (const s of strategies) {
    if (!DEMO_STRATEGIES.includes(s)) throw new RangeError(`--strategies: unknown strategy ${JSON.stringify(s)}; known: ${DEMO_STRATEGIES.join(", ")}`);
  }
  const requests = num("requests", values.requests, 1) ?? DEFAULT_DEMO.requests;
  const documents = num("documents", values.documents, 1) ?? DEFAULT_DEMO.documents;
  await loadOpenAI(); // a missing peer is one line, before anything else is printed
  const bar = await progressBar(requests * strategies.length);
  io.err(`Starting a 7-instance emulated fleet; ${requests} requests per strategy × ${strategies.length} strategies…`);
  let rows: DemoRow[];
  try {
    rows = await runDemo({
      strategies,
      requests,
      documents,
      ratePerSecond: num("rate", values.rate, 0.001),
      timeScale: num("time-scale", values["time-scale"], 0.001),
      seed: num("seed", values.seed, 0),
      onProgress: (done, _total, strategy) => bar?.update(done, { strategy }),
    });
  } finally {
    bar?.stop();
  }
  if (values.json) {
    io.out(JSON.stringify(rows, null, 2));
    return 0;
  }
  io.out(formatDemoTable(rows));
  io.out(summaryLine(rows, documents));
  io.out("");
  io.out(demoLegend(rows));
  return 0;
}

/** Where the demo's output is explained at length. */
export const DEMO_DOC = "docs/bench.md#the-live-demo-npm-run-demo";

/** What each column (and each variant named in the rows) means, one line each. */
export function demoLegend(rows: readonly DemoRow[]): string {
  const lines = [
    "TTFT p50/p90/p99  time to first token, measured by the client, in model milliseconds (the fleet's clock, not the wall's)",
    "cache hit         prompt tokens the replicas served from their prefix caches, of all prompt tokens",
    "throughput        requests completed per model second, first send to last completion",
    "spillover         picks that left the key's first choice because it was full",
    `min/max share     the least and the most loaded replica's share of the requests (even: ${(100 / DEFAULT_DEMO.instances).toFixed(1)}% each)`,
    "router/req        the router's own cost per request: median wall time of route() + release(), µs",
  ];
  if (rows.some((r) => r.strategy === "longest-prefix:exclusive")) {
    lines.push("longest-prefix:exclusive  longest-prefix with `longestPrefix: { exclusive: true }`, for a router that sees all of its fleet's traffic");
  }
  lines.push(`More: ${DEMO_DOC}`);
  return lines.join("\n");
}

/** The side-by-side table. */
export function formatDemoTable(rows: readonly DemoRow[]): string {
  const header = ["strategy", "TTFT p50", "p90", "p99", "cache hit", "throughput", "spillover", "min share", "max share", "router/req"];
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  const ms = (x: number) => `${x.toFixed(0)} ms`;
  const body = rows.map((r) => [
    r.strategy,
    ms(r.ttftP50Ms),
    ms(r.ttftP90Ms),
    ms(r.ttftP99Ms),
    pct(r.tokenHitRate),
    `${r.throughput.toFixed(1)} req/s`,
    pct(r.spilloverRate),
    pct(r.minShare),
    pct(r.maxShare),
    `${r.routerOverheadUs.toFixed(1)} µs`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)].join("\n");
}

/**
 * Least rise of the token hit rate over `random`, as a fraction of 1 (5 points), for the summary to
 * credit the best strategy with a cache gain. Below it the run measured none: on the demo's
 * workload, because its documents did not repeat in so few requests.
 */
export const MIN_HIT_GAIN = 0.05;

/** Questions per document that show the cache gain (the default run's 350 requests over 70 documents). */
const QUESTIONS_PER_DOCUMENT = 5;

/**
 * One line saying what the numbers mean: the best prefix-reading strategy against `random`, and
 * what that measured — a cache gain, or, when the hit rate rose by less than {@link MIN_HIT_GAIN},
 * that there was none and why. `documents` is the run's `--documents`.
 */
export function summaryLine(rows: readonly DemoRow[], documents: number = DEFAULT_DEMO.documents): string {
  const random = rows.find((r) => r.strategy === "random");
  const best = rows.filter((r) => r.strategy !== "random" && r.strategy !== "least-outstanding").sort((a, b) => a.ttftP50Ms - b.ttftP50Ms)[0];
  if (random === undefined || best === undefined) return "TTFT in model milliseconds; cache hit = prompt tokens served from the replicas' prefix caches.";
  const change = (a: number, b: number) => `${((b / a - 1) * 100).toFixed(0)}%`;
  const pct = (x: number) => `${(x * 100).toFixed(0)}%`;
  const measured =
    `${best.strategy} vs random: P50 TTFT ${change(random.ttftP50Ms, best.ttftP50Ms)}, P90 ${change(random.ttftP90Ms, best.ttftP90Ms)}, ` +
    `cache hit ${pct(random.tokenHitRate)} → ${pct(best.tokenHitRate)}`;
  if (best.tokenHitRate - random.tokenHitRate >= MIN_HIT_GAIN - 1e-9) {
    return (
      `${measured}: ${pct(best.tokenHitRate)} of prompt tokens came from a replica's prefix cache — requests that share a document ` +
      `reached the replica that already held it and skipped its prefill (TTFT in model ms, measured by the client).`
    );
  }
  const noGain = `${measured}: the hit rate moved by less than ${MIN_HIT_GAIN * 100} points, so this run measured no cache gain, and its TTFT difference does not come from one`;
  const requests = best.requests;
  if (requests >= 2 * documents) return `${noGain} (TTFT in model ms, measured by the client).`;
  const repeats =
    requests <= documents
      ? `${requests} requests over ${documents} documents ask no document twice`
      : `${requests} requests over ${documents} documents ask each only ${(requests / documents).toFixed(1)} times on average`;
  return (
    `${noGain} — ${repeats}, so there was almost no prefix to reuse. Run more requests to see it: ` +
    `--requests ${documents * QUESTIONS_PER_DOCUMENT} asks each document ${QUESTIONS_PER_DOCUMENT} times (TTFT in model ms, measured by the client).`
  );
}

async function progressBar(total: number): Promise<{ update(n: number, payload: object): void; stop(): void } | undefined> {
  if (!process.stderr.isTTY) return undefined;
  try {
    const { default: progress } = await import("cli-progress");
    const bar = new progress.SingleBar(
      { format: "{bar} {value}/{total} requests | {strategy}", stream: process.stderr, hideCursor: true },
      progress.Presets.shades_classic,
    );
    bar.start(total, 0, { strategy: "" });
    return bar;
  } catch {
    return undefined;
  }
}
