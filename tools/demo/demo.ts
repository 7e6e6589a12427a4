/**
 * The live demo: a 7-instance emulated fleet on loopback, one long-shared-prefix workload sent
 * through the real `openai` client wrapped by prefix-router, once per strategy, each on a fresh
 * (cold) fleet, and a side-by-side table.
 *
 * Workload (deterministic for a seed): `documents` policy documents of `documentTokens` tokens
 * each, every one asked `requests / documents` questions, in a seeded random order, arriving as a
 * Poisson process of `ratePerSecond`. With 70 documents × 5 questions over 7 instances, random
 * routing finds a warm cache for about a quarter of the prompt tokens — the ~25% AWS measured for
 * random routing on its long-context benchmark — while a router that keeps each document on one
 * instance can reach 4/5.
 *
 * TTFT is measured by the client (request sent → first streamed chunk) and reported in model
 * milliseconds (wall ms / `timeScale`). Cache hits come from the servers' own
 * `usage.prompt_tokens_details.cached_tokens`.
 */
import { type StrategyVariant, VARIANT_NAMES, strategyOptions } from "../bench/variants.js";
import { createRandom } from "../sim/random.js";
import { startFleet } from "../fleet/live.js";
import { STRATEGIES, createRouter, type RouterOptions } from "prefix-router";
import { getRouter, routeOpenAI, type OpenAITarget, type RoutedRequestInfo } from "prefix-router/openai";
import type { Strategy } from "../common/strategy.js";
import { newHistogram, summarize } from "../common/latency.js";
import { importOptional } from "../common/optional.js";

/**
 * A demo row's configuration: a strategy with default options, or `longest-prefix:exclusive`
 * (`longest-prefix` with `exclusive: true`: the demo's one router sees all of its fleet's traffic).
 */
export type DemoStrategy = Strategy | StrategyVariant;

/** Every demo configuration, in the order the demo runs them by default. */
// `precise-prefix` routes on the engines' KV events and a tokenizer: not part of the demo's fleet.
export const DEMO_STRATEGIES: readonly DemoStrategy[] = [...STRATEGIES.filter((s) => s !== "precise-prefix"), ...VARIANT_NAMES];

/** @internal The router options of a demo configuration. */
export const demoRouterOptions: (name: DemoStrategy) => Pick<RouterOptions, "strategy" | "longestPrefix"> = strategyOptions;

/** Options of {@link runDemo}. */
export interface DemoOptions {
  /** Configurations to compare, in order. */
  strategies: readonly DemoStrategy[];
  /** @default 7 */
  instances?: number;
  /** @default 70 */
  documents?: number;
  /** Requests per strategy. @default 350 */
  requests?: number;
  /** Tokens per shared document (≈ 4 characters each). @default 8000 */
  documentTokens?: number;
  /** Mean arrival rate, requests per model second. @default 20 */
  ratePerSecond?: number;
  /** Output tokens per request. @default 32 */
  maxTokens?: number;
  /** Wall-clock ms per model ms. @default 0.5 */
  timeScale?: number;
  /** @default 42 */
  seed?: number;
  /** Called after each finished request, for a progress bar. */
  onProgress?: (done: number, total: number, strategy: DemoStrategy) => void;
  /** Clock for TTFT measurement (wall ms). @default performance */
  clock?: { now(): number };
}

/** One row of the demo table. TTFTs in model ms; rates and shares as fractions of 1. */
export interface DemoRow {
  strategy: DemoStrategy;
  requests: number;
  ttftP50Ms: number;
  ttftP90Ms: number;
  ttftP99Ms: number;
  /** Cached prompt tokens / prompt tokens, as the servers reported them. */
  tokenHitRate: number;
  /** Completed requests per model second, from the first send to the last completion. */
  throughput: number;
  spilloverRate: number;
  minShare: number;
  maxShare: number;
  /** Median wall time of `route()` + `release()` on this run's bodies, µs. */
  routerOverheadUs: number;
  /** Sum of in-flight counts after the run (always 0 unless a lease leaked). */
  inflightAfter: number;
}

export const DEFAULT_DEMO = {
  instances: 7,
  documents: 70,
  requests: 350,
  documentTokens: 8000,
  ratePerSecond: 20,
  maxTokens: 32,
  timeScale: 0.5,
  seed: 42,
} as const;

const MODEL = "llama-3.1-70b-instruct";
const SYSTEM = "You are the support assistant of Example Corp. Answer only from the policy document below; quote the section you rely on.";

interface DemoRequest {
  arrivalMs: number;
  body: { model: string; messages: { role: "system" | "user"; content: string }[] };
}

/** Builds the workload: the same request sequence for every strategy. */
export function demoWorkload(options: Required<Omit<DemoOptions, "strategies" | "onProgress" | "clock">>): DemoRequest[] {
  const rng = createRandom(options.seed);
  const words = ["refund", "warranty", "shipping", "invoice", "account", "region", "policy", "customer", "period", "claim", "device", "service", "within", "days", "except", "written", "notice", "section", "applies", "order"];
  const docs = Array.from({ length: options.documents }, (_, d) => {
    const parts: string[] = [`Policy document ${d}.`];
    let length = parts[0]!.length;
    const target = options.documentTokens * 4;
    for (let s = 1; length < target; s++) {
      const n = 6 + Math.floor(rng() * 10);
      let sentence = `§${d}.${s}`;
      for (let w = 0; w < n; w++) sentence += ` ${words[Math.floor(rng() * words.length)]}`;
      parts.push(`${sentence}.`);
      length += sentence.length + 2;
    }
    return parts.join(" ").slice(0, target);
  });
  const perDoc = Math.ceil(options.requests / options.documents);
  const order: number[] = [];
  for (let d = 0; d < options.documents; d++) for (let q = 0; q < perDoc; q++) order.push(d);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  let t = 0;
  return order.slice(0, options.requests).map((d, i) => {
    t += (-Math.log(1 - rng()) / options.ratePerSecond) * 1000;
    return {
      arrivalMs: t,
      body: {
        model: MODEL,
        messages: [
          { role: "system", content: `${SYSTEM}\n\n${docs[d]}` },
          { role: "user", content: `Question ${i}: what does section §${d}.${1 + (i % 40)} say about ${words[i % words.length]}?` },
        ],
      },
    };
  });
}

/**
 * Loads the optional peer `openai`, which the demo drives.
 * @throws RouterError `ERR_MISSING_PEER` when it is not installed
 */
export function loadOpenAI(): Promise<typeof import("openai")> {
  return importOptional("openai", () => import("openai"), "The demo");
}

/**
 * Runs the demo and returns one row per strategy. Needs the optional peer `openai`.
 * @throws RouterError `ERR_MISSING_PEER` when `openai` is not installed
 */
export async function runDemo(options: DemoOptions): Promise<DemoRow[]> {
  const o = { ...DEFAULT_DEMO, ...stripUndefined(options) };
  const clock = options.clock ?? performance;
  const { default: OpenAI } = await loadOpenAI();
  const workload = demoWorkload(o);
  const rows: DemoRow[] = [];
  const total = workload.length * options.strategies.length;
  let done = 0;
  for (const strategy of options.strategies) {
    const fleet = await startFleet({ instances: o.instances, timeScale: o.timeScale, models: [MODEL], seed: o.seed });
    try {
      const targets: OpenAITarget[] = fleet.instances.map((i) => ({ id: i.id, baseURL: `${i.url}/v1` }));
      const ended: RoutedRequestInfo[] = [];
      const routerOptions = { targets, ...demoRouterOptions(strategy), random: createRandom(o.seed + 1), seed: o.seed };
      const client = await routeOpenAI(new OpenAI({ apiKey: "demo", baseURL: "http://fleet.invalid/v1", maxRetries: 0 }), {
        ...routerOptions,
        onRequestEnd: (info) => ended.push(info),
      });
      const ttft = newHistogram();
      let promptTokens = 0;
      let cachedTokens = 0;
      const start = clock.now();
      let lastEnd = start;
      await Promise.all(
        workload.map(async (request) => {
          await sleep(request.arrivalMs * o.timeScale);
          const sent = clock.now();
          const stream = await client.chat.completions.create({
            ...request.body,
            max_tokens: o.maxTokens,
            stream: true,
            stream_options: { include_usage: true },
          });
          let first: number | undefined;
          for await (const chunk of stream) {
            first ??= clock.now();
            const usage = chunk.usage;
            if (usage) {
              promptTokens += usage.prompt_tokens;
              cachedTokens += usage.prompt_tokens_details?.cached_tokens ?? 0;
            }
          }
          const end = clock.now();
          lastEnd = Math.max(lastEnd, end);
          ttft.recordValue(Math.round((((first ?? end) - sent) / o.timeScale) * 1000));
          options.onProgress?.(++done, total, strategy);
        }),
      );
      const stats = getRouter(client)!.stats();
      const shares = stats.targets.map((t) => t.share);
      const ttftMs = summarize(ttft);
      rows.push({
        strategy,
        requests: workload.length,
        ttftP50Ms: ttftMs?.p50 ?? 0,
        ttftP90Ms: ttftMs?.p90 ?? 0,
        ttftP99Ms: ttftMs?.p99 ?? 0,
        tokenHitRate: promptTokens === 0 ? 0 : cachedTokens / promptTokens,
        throughput: workload.length / ((lastEnd - start) / o.timeScale / 1000),
        spilloverRate: stats.totals.spilloverRate,
        minShare: Math.min(...shares),
        maxShare: Math.max(...shares),
        routerOverheadUs: await measureOverhead(routerOptions, workload),
        inflightAfter: stats.totals.inflight,
      });
    } finally {
      await fleet.stop();
    }
  }
  return rows;
}

/** Median wall time of route() + release() over the workload's bodies, on a fresh router. */
async function measureOverhead(
  options: { targets: OpenAITarget[]; seed: number; random: () => number } & Pick<RouterOptions, "strategy" | "longestPrefix">,
  workload: readonly DemoRequest[],
): Promise<number> {
  const router = await createRouter({ ...options, random: createRandom(7) });
  const nanos = newHistogram();
  for (let round = 0; round < 3; round++) {
    for (const request of workload) {
      const t0 = process.hrtime.bigint();
      router.route({ body: request.body }).release();
      nanos.recordValue(Number(process.hrtime.bigint() - t0));
    }
  }
  return summarize(nanos)?.p50 ?? 0; // recorded in ns, summarized in units of 1000: µs
}

function sleep(ms: number): Promise<void> {
  return ms <= 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, ms));
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
