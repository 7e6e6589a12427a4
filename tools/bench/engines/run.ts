/**
 * The strategies side by side on real engines, in real time: every strategy gets a fleet of its
 * own (cold caches, the same engines' settings) and plays the same sessions through
 * `routeOpenAI` and the real `openai` client, streaming, with `concurrency` sessions in flight.
 * Strategies take turns by rounds of `4 × concurrency` sessions, so a noisy neighbour on the
 * machine slows every strategy alike rather than the one that happens to be running.
 *
 * Each request is recorded: the target, the client's TTFT (request sent → first content), the
 * engine's `prompt_tokens` and `cached_tokens`, the strategy's predicted cached tokens (from
 * `onDecision`), and the engine's own TTFT and queueing (its response headers). The pooled ideal
 * is the hit rate of one unbounded cache that saw every earlier prompt and answer: the longest
 * common prefix of each prompt with any earlier prompt + answer, in the engine's tokens
 * ({@link idealTokens}: the tiny llama model's BPE, or the emulated engine's 4-character tokens).
 */
import { performance } from "node:perf_hooks";
import { type Decision, type RouterOptions } from "prefix-router";
import { startFleet, type LiveFleet } from "../../fleet/live.js";
import { type EngineConfig, resolveEngineConfig } from "../../fleet/config.js";
import { kvEventBlockSize } from "../../fleet/kv-events/slot-blocks.js";
import { KV_BLOCK_SIZE } from "../../fleet/llama/kv-events.js";
import { startLlamaFleet, DEFAULT_LLAMA_MODEL, type LlamaFleet, type LlamaFleetOptions } from "../../fleet/llama/index.js";
import { tinyLlamaTokenizer } from "../../fleet/llama/bpe.js";
import { renderPrompt } from "../../fleet/template.js";
import { CHARS_PER_TOKEN } from "../../fleet/tokenizer.js";
import { Rng, mix32 } from "../../sim/random.js";
import type { StrategyVariant } from "../variants.js";
import type { Strategy } from "../../common/strategy.js";
import { importOptional } from "../../common/optional.js";
import { RoutedClient, type Message, type RequestOutcome, type RoutedClientOptions } from "./client.js";
import { RouterProcesses } from "./routers.js";
import type { EngineSession, EngineWorkload } from "./workloads.js";

/** The engines a run can use: llama.cpp processes, or the emulated fleet configured alike. */
export const ENGINE_KINDS = ["llama", "emulated"] as const;
export type EngineKind = (typeof ENGINE_KINDS)[number];

/** A strategy row of the bench: a built-in strategy, a named variant, or `precise-prefix` (its engines publish KV events). */
export type EngineStrategy = Strategy | StrategyVariant | "precise-prefix";

const PRECISE = "precise-prefix";

/** The emulated engine's timing, fitted to a llama.cpp engine (see {@link fitEmulated}). */
export interface EngineTiming {
  /** Fixed time before prefill: HTTP, template, tokenization, ms. */
  overheadMs: number;
  /** Prefill time per uncached prompt token (the tiny model's BPE token), ms. */
  prefillMsPerToken: number;
  /** Time per generated token, ms. */
  decodeMsPerToken: number;
}

/**
 * The tiny llama.cpp model's timing on this kind of machine (2 cores, one thread per engine, 4
 * engines), from `fitEmulated` over a `short-prompts` run: what `--engine emulated` uses when no
 * llama run precedes it in the same invocation.
 */
export const DEFAULT_LLAMA_TIMING: Readonly<EngineTiming> = Object.freeze({ overheadMs: 5, prefillMsPerToken: 0.35, decodeMsPerToken: 6 });

/** Options of {@link runEngineBench}. */
export interface EngineBenchOptions {
  readonly engines: readonly EngineKind[];
  readonly workload: EngineWorkload;
  readonly strategies: readonly EngineStrategy[];
  /** Engines per fleet. */
  readonly instances: number;
  /** Slots per engine (requests it runs at once, each with its own cache). */
  readonly slots: number;
  /** Tokens per slot. */
  readonly contextSize: number;
  /** Sessions in flight at once (the closed loop's clients). */
  readonly concurrency: number;
  /** Output tokens per request. */
  readonly maxTokens: number;
  /** Seed of the router's random draws and of the model's weights. */
  readonly seed: number;
  /** Stop starting new rounds after this long, ms (every strategy gets the same rounds). */
  readonly timeLimitMs?: number;
  /** Router options over the strategy's (e.g. `prefixLength`). */
  readonly router?: Pick<RouterOptions, "prefixLength" | "concurrencyThreshold">;
  /** The emulated engine's timing; default: fitted to the llama run of the same invocation, else {@link DEFAULT_LLAMA_TIMING}. */
  readonly timing?: EngineTiming;
  /** The llama fleet's model shape (default: the tiny model's). */
  readonly model?: LlamaFleetOptions["model"];
  /**
   * Router processes to run each strategy with, each a run of its own: N application processes,
   * each with its own router, in front of the same engines; each turn of a session through one
   * drawn from the seed ({@link routerOf}). 1 plays every request from this process. @default [1]
   */
  readonly routers?: readonly number[];
  /** Called after each round. */
  readonly onProgress?: (p: { engine: EngineKind; routers: number; round: number; rounds: number }) => void;
}

/** One request of a run. */
export interface EngineRecord {
  readonly session: number;
  readonly turn: number;
  readonly group: number;
  /** The router process that sent it (0-based), with several; absent with one. */
  readonly router?: number;
  /** The target the router chose, `undefined` when the request failed before. */
  readonly target: string | undefined;
  /** ms from the run's start to this request's. */
  readonly startMs: number;
  /** Client-side TTFT: sent → first content, ms. */
  readonly ttftMs: number;
  /** Sent → last event, ms. */
  readonly durationMs: number;
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly completionTokens: number;
  /** What the strategy predicted cached; `undefined`: no prediction. */
  readonly predictedCachedTokens: number | undefined;
  /** The pooled ideal's cached tokens for this prompt, and the prompt's tokens, in the engine's tokens ({@link idealTokens}). */
  readonly idealCachedTokens: number;
  readonly idealPromptTokens: number;
  /** Whether an earlier request of this run used the same shared prefix. */
  readonly seenPrefix: boolean;
  /** The engine's own TTFT and queueing (its response headers), ms; `undefined` when absent. */
  readonly engineTtftMs: number | undefined;
  readonly engineQueueMs: number | undefined;
  /** Sent → the router's decision, ms (the router's share of the TTFT). */
  readonly decisionMs: number;
  /** Why the router picked its target (`Decision.reason`: the pick's kind and rank, what it passed over, the blocks matched); absent when it decided nothing. */
  readonly reason?: Decision["reason"] | undefined;
  /** The error's message when the request failed. */
  readonly error?: string;
}

/** One strategy on one kind of engine, with some number of router processes. */
export interface EngineRun {
  readonly engine: EngineKind;
  readonly strategy: EngineStrategy;
  /** Application processes, each with its own router, in front of the same engines. */
  readonly routers: number;
  readonly records: readonly EngineRecord[];
  readonly targets: readonly string[];
  /** Whether its engines published KV events (every row's do when `precise-prefix` is in the run). */
  readonly publishes: boolean;
}

/** The result: runs in engine, then strategy order, and the timing the emulated runs used. */
export interface EngineBenchResult {
  readonly workload: string;
  readonly runs: readonly EngineRun[];
  readonly timing: EngineTiming | undefined;
  /** Sessions each strategy completed (the same for all). */
  readonly sessions: number;
}

interface Fleet {
  readonly targets: readonly { readonly id: string; readonly baseURL: string; readonly kvEvents?: { readonly endpoint: string; readonly replayEndpoint: string | undefined } | undefined }[];
  /** The llama fleet's tokenizer files. */
  readonly tokenizerDir?: string;
  /** Tokens per block of its KV events (the llama fleet's: {@link KV_BLOCK_SIZE}). */
  readonly kvBlockSize?: number;
  close(): Promise<void>;
}

/** A base port with `2n` free ports from it (publishers, then replay sockets), for a fleet that publishes KV events. */
async function freePorts(n: number): Promise<number> {
  const { createServer } = await import("node:net");
  const free = (port: number) =>
    new Promise<boolean>((resolve) => {
      const s = createServer();
      s.once("error", () => resolve(false));
      s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)));
    });
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 30_000);
    let ok = true;
    for (let p = base; p < base + 2 * n && ok; p++) ok = await free(p);
    if (ok) return base;
  }
  throw new Error(`No ${2 * n} free consecutive ports found for the KV-event publishers`);
}

async function startEngines(kind: EngineKind, o: EngineBenchOptions, timing: EngineTiming, kvEvents = false): Promise<Fleet> {
  const kv = kvEvents ? await freePorts(o.instances) : undefined;
  if (kind === "llama") {
    const fleet: LlamaFleet = await startLlamaFleet({
      ...(kv !== undefined && { kvEvents: { port: kv, replayPort: kv + o.instances } }),
      instances: o.instances,
      slots: o.slots,
      contextSize: o.contextSize,
      seed: o.seed,
      defaultMaxTokens: o.maxTokens,
      ...(o.model !== undefined && { model: o.model }),
    });
    return fleet;
  }
  const engine = emulatedConfig(o, timing);
  const fleet: LiveFleet = await startFleet({
    instances: o.instances,
    engine,
    models: [DEFAULT_LLAMA_MODEL],
    defaultMaxTokens: o.maxTokens,
    ...(kv !== undefined && { kvEvents: { port: kv, replayPort: kv + o.instances } }),
  });
  return {
    targets: fleet.instances.map((i) => ({ id: i.id, baseURL: `${i.url}/v1`, kvEvents: i.kvEvents })),
    kvBlockSize: kvEventBlockSize(resolveEngineConfig(engine)),
    close: () => fleet.stop(),
  };
}

/**
 * The emulated engine configured like the llama fleet: `slots` slots (llama.cpp's slot cache, as
 * the emulated engine models it), their context, the fitted timing. The emulated tokenizer counts
 * 4 characters a token, the tiny llama model's BPE about {@link LLAMA_CHARS_PER_TOKEN} on the
 * bench's text: sizes in tokens are scaled by their ratio, per-token costs by its inverse.
 */
export function emulatedConfig(o: Pick<EngineBenchOptions, "slots" | "contextSize">, t: EngineTiming): Partial<EngineConfig> {
  const CHARS = CHARS_PER_TOKEN / LLAMA_CHARS_PER_TOKEN;
  return {
    slots: o.slots,
    maxNumSeqs: o.slots,
    maxModelLen: Math.ceil(o.contextSize / CHARS),
    numGpuBlocks: Math.max(1, Math.floor((o.slots * o.contextSize) / CHARS / 16)),
    maxNumBatchedTokens: Math.ceil((o.slots * o.contextSize) / CHARS),
    frontendOverheadMs: t.overheadMs,
    stepBaseMs: t.decodeMsPerToken,
    prefillMsPerToken: t.prefillMsPerToken * CHARS,
    prefillMsPerTokenPair: 0,
    decodeMsPerSeq: 0,
    decodeMsPerContextToken: 0,
  };
}

/**
 * Characters per token of the tiny llama model's BPE on the bench's prompts (rendered chat
 * prompts of the two workloads: 5.4–5.5 at seed 1); a constant, so that the emulated fleet's configuration
 * does not depend on the text.
 */
export const LLAMA_CHARS_PER_TOKEN = 5.4;

/** Where a strategy run sends its requests: its own router, or one of N router processes. */
interface Senders {
  readonly size: number;
  send(k: number, messages: readonly Message[], maxTokens: number): Promise<RequestOutcome>;
  close(): Promise<void>;
}

/** The seed of router process `k`'s random draws (one process: the run's seed, as before there were several). */
export function routerSeed(seed: number, k: number, routers: number): number {
  return routers === 1 ? seed : mix32(seed, 404, k);
}

/**
 * The router process that plays turn `turn` of session `session` out of `routers`: drawn from
 * the seed, so that every strategy sends each turn through the same process.
 */
export function routerOf(seed: number, session: number, turn: number, routers: number): number {
  return routers === 1 ? 0 : new Rng(mix32(seed, 303, session, turn)).int(routers);
}

/** One strategy's fleet, routers and records, advanced a round at a time. */
class StrategyRun {
  readonly records: EngineRecord[] = [];
  /** Earlier prompts + answers in the engine's tokens, by shared prefix: the pooled ideal's cache. */
  private readonly seen = new Map<number, (readonly Unit[])[]>();
  private senders!: Senders;
  private t0 = 0;

  constructor(
    readonly strategy: EngineStrategy,
    readonly fleet: Fleet,
    private readonly o: EngineBenchOptions,
    private readonly kind: EngineKind,
    readonly routers: number,
  ) {}

  async start(OpenAI: typeof import("openai").default): Promise<void> {
    const config = (k: number): RoutedClientOptions => ({
      targets: this.fleet.targets.map(({ id, baseURL }) => ({ id, baseURL })),
      strategy: this.strategy,
      seed: routerSeed(this.o.seed, k, this.routers),
      ...(this.o.router !== undefined && { router: this.o.router }),
      ...(this.strategy === PRECISE && {
        precise: {
          feeds: this.fleet.targets.flatMap((t) => (t.kvEvents === undefined ? [] : [{ engine: t.id, endpoint: t.kvEvents.endpoint, replayEndpoint: t.kvEvents.replayEndpoint }])),
          blockSize: this.fleet.kvBlockSize ?? KV_BLOCK_SIZE,
          ...(this.fleet.tokenizerDir !== undefined && { tokenizerDir: this.fleet.tokenizerDir }),
        },
      }),
    });
    if (this.routers === 1) {
      const client = await RoutedClient.open(OpenAI, config(0));
      this.senders = { size: 1, send: (_k, messages, maxTokens) => client.send(messages, maxTokens), close: () => client.close() };
    } else {
      this.senders = await RouterProcesses.start(Array.from({ length: this.routers }, (_, k) => config(k)));
    }
    this.t0 = performance.now();
  }

  /** Stops its router processes, if any. */
  async close(): Promise<void> {
    await this.senders?.close();
  }

  /** Plays `sessions`, `concurrency` at a time. */
  async play(sessions: readonly EngineSession[]): Promise<void> {
    let next = 0;
    const worker = async () => {
      while (next < sessions.length) await this.session(sessions[next++]!);
    };
    await Promise.all(Array.from({ length: Math.min(this.o.concurrency, sessions.length) }, worker));
  }

  private async session(s: EngineSession): Promise<void> {
    const messages: Message[] = [{ role: "system", content: s.system }];
    for (const [turn, question] of s.turns.entries()) {
      messages.push({ role: "user", content: question });
      const answer = await this.request(s, turn, messages);
      if (answer === undefined) return;
      messages.push({ role: "assistant", content: answer });
    }
  }

  private async request(s: EngineSession, turn: number, messages: readonly Message[]): Promise<string | undefined> {
    const prompt = renderPrompt({ messages });
    const tokens = idealTokens(this.kind, prompt);
    const earlier = this.seen.get(s.group) ?? [];
    const seenPrefix = earlier.length > 0;
    let ideal = 0;
    for (const e of earlier) ideal = Math.max(ideal, commonPrefix(tokens, e));
    ideal = Math.min(ideal, tokens.length - 1);
    const router = routerOf(this.o.seed, s.index, turn, this.routers);
    const startMs = performance.now() - this.t0;
    const out = await this.senders.send(router, messages, this.o.maxTokens);
    this.records.push({
      session: s.index,
      turn,
      group: s.group,
      ...(this.routers > 1 && { router }),
      target: out.target,
      startMs,
      ttftMs: out.ttftMs,
      durationMs: out.durationMs,
      promptTokens: out.promptTokens,
      cachedTokens: out.cachedTokens,
      completionTokens: out.completionTokens,
      predictedCachedTokens: out.predicted,
      idealCachedTokens: ideal,
      idealPromptTokens: tokens.length,
      seenPrefix,
      engineTtftMs: out.engineTtftMs,
      engineQueueMs: out.engineQueueMs,
      decisionMs: out.decisionMs,
      ...(out.reason !== undefined && { reason: out.reason }),
      ...(out.error !== undefined && { error: out.error }),
    });
    if (out.error !== undefined) return undefined;
    if (!this.seen.has(s.group)) this.seen.set(s.group, earlier);
    earlier.push(this.kind === "llama" ? [...tokens, ...idealTokens(this.kind, out.text, false)] : idealTokens(this.kind, prompt + out.text));
    return out.text;
  }
}

/** A token as {@link idealTokens} gives it: an id, or the emulated engine's 4-character text. */
export type Unit = number | string;

/**
 * `text` in the tokens of engine `kind`, as the pooled ideal counts them: the tiny llama model's
 * BPE (bpe.ts: llama.cpp's ids; `specialTokens` parses the chat template's control tokens, as
 * the engine does for a prompt), or the emulated engine's tokens of {@link CHARS_PER_TOKEN}
 * UTF-16 code units.
 */
export function idealTokens(kind: EngineKind, text: string, specialTokens = true): readonly Unit[] {
  if (kind === "llama") return tinyLlamaTokenizer().encode(text, specialTokens);
  const out: string[] = [];
  for (let i = 0; i < text.length; i += CHARS_PER_TOKEN) out.push(text.slice(i, i + CHARS_PER_TOKEN));
  return out;
}

/** Length of the common prefix of `a` and `b` (strings, or arrays of tokens). */
export function commonPrefix(a: string | readonly Unit[], b: string | readonly Unit[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/**
 * The emulated engine's timing from a llama run's records: a least-squares line through the
 * engine's prefill time (its TTFT minus its queueing) against the uncached tokens, and the
 * median decode time per generated token. `undefined` with too few records.
 */
export function fitEmulated(records: readonly EngineRecord[]): EngineTiming | undefined {
  const points: [number, number][] = [];
  const decode: number[] = [];
  for (const r of records) {
    if (r.error !== undefined || r.engineTtftMs === undefined) continue;
    points.push([r.promptTokens - r.cachedTokens, r.engineTtftMs - (r.engineQueueMs ?? 0)]);
    if (r.completionTokens > 1) decode.push((r.durationMs - r.ttftMs) / (r.completionTokens - 1));
  }
  if (points.length < 8) return undefined;
  const n = points.length;
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (const [x, y] of points) {
    sxy += (x - mx) * (y - my);
    sxx += (x - mx) ** 2;
  }
  const slope = sxx === 0 ? 0 : Math.max(0, sxy / sxx);
  decode.sort((a, b) => a - b);
  return {
    overheadMs: Math.max(0, my - slope * mx),
    prefillMsPerToken: slope,
    decodeMsPerToken: decode.length === 0 ? DEFAULT_LLAMA_TIMING.decodeMsPerToken : decode[Math.floor(decode.length / 2)]!,
  };
}

/**
 * Runs every strategy on every kind of engine named, the same sessions for each. Engines are
 * started per strategy and stopped before the next kind starts.
 */
export async function runEngineBench(o: EngineBenchOptions): Promise<EngineBenchResult> {
  // Before any engine starts: the one optional package the run needs.
  const { default: OpenAI } = await importOptional("openai", () => import("openai"), "The real-engine bench");
  const all = o.workload.sessions;
  const batch = 4 * o.concurrency;
  const rounds = Math.ceil(all.length / batch);
  const runs: EngineRun[] = [];
  let timing = o.timing;
  let sessions = all.length;
  const routerCounts = o.routers ?? [1];
  for (const n of routerCounts) {
    if (!Number.isSafeInteger(n) || n < 1 || n > 64) throw new RangeError(`Expected \`routers\` to hold integers from 1 to 64, got ${String(n)}`);
  }
  for (const engine of o.engines) {
    for (const routers of routerCounts) {
      const useTiming = timing ?? DEFAULT_LLAMA_TIMING;
      const strategyRuns: StrategyRun[] = [];
      try {
        // Every row's engines are configured alike: with precise-prefix in the run, all publish
        // their KV events (as a fleet with events enabled does), whoever routes in front of them.
        const publish = o.strategies.includes(PRECISE);
        for (const s of o.strategies) {
          const fleet = await startEngines(engine, o, useTiming, publish);
          const run = new StrategyRun(s, fleet, o, engine, routers);
          strategyRuns.push(run);
          await run.start(OpenAI);
        }
        const started = performance.now();
        let played = 0;
        for (let r = 0; r < rounds; r++) {
          if (o.timeLimitMs !== undefined && r > 0 && performance.now() - started > o.timeLimitMs) break;
          const slice = all.slice(r * batch, (r + 1) * batch);
          // Rotate who goes first, so no strategy always follows the same one.
          for (let k = 0; k < strategyRuns.length; k++) await strategyRuns[(r + k) % strategyRuns.length]!.play(slice);
          played += slice.length;
          o.onProgress?.({ engine, routers, round: r + 1, rounds });
        }
        sessions = Math.min(sessions, played);
      } finally {
        await Promise.all(strategyRuns.map((r) => r.close()));
        await Promise.all(strategyRuns.map((r) => r.fleet.close()));
      }
      for (const r of strategyRuns) runs.push({ engine, strategy: r.strategy, routers, records: r.records, targets: r.fleet.targets.map((t) => t.id), publishes: r.fleet.targets.some((t) => t.kvEvents !== undefined) });
    }
    if (engine === "llama" && timing === undefined) timing = fitEmulated(runs.flatMap((r) => (r.engine === "llama" ? r.records : [])));
  }
  return { workload: o.workload.name, runs, timing: o.engines.includes("emulated") ? (timing ?? DEFAULT_LLAMA_TIMING) : timing, sessions };
}
