/**
 * One application's side of the real-engine bench: a router (`routeOpenAI` over the real
 * `openai` client) in front of the engines, and a request played through it — streamed, timed
 * (client TTFT: sent → first content), with the router's decision (`onDecision`) and the
 * engine's own figures (usage, response headers). The bench runs it in its own process (one
 * router), or in each of N router processes (router-process.ts) to model N application
 * processes in front of the same engines.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { performance } from "node:perf_hooks";
import type OpenAI from "openai";
import { type Decision, type RouterOptions } from "prefix-router";
import { routeOpenAI } from "prefix-router/openai";
import { DEFAULT_LLAMA_MODEL } from "../../fleet/llama/index.js";
import { createRandom } from "../../sim/random.js";
import { strategyOptions, type StrategyVariant } from "../variants.js";
import { join } from "node:path";
import { emulatedTokens } from "../../fleet/index.js";
import { renderPrompt } from "../../fleet/template.js";
import { KvEventFeeds, type KvEventSink } from "prefix-router/kv-events";
import type { Strategy } from "../../common/strategy.js";

/** A chat message of the bench's sessions. */
export type Message = { role: "system" | "user" | "assistant"; content: string };

/** What one router needs: serializable, so that a router process can be given it. */
export interface RoutedClientOptions {
  readonly targets: readonly { readonly id: string; readonly baseURL: string }[];
  readonly strategy: Strategy | StrategyVariant | "precise-prefix";
  /** Seed of the router's random draws. */
  readonly seed: number;
  /** Router options over the strategy's. */
  readonly router?: Pick<RouterOptions, "prefixLength" | "concurrencyThreshold">;
  /** `precise-prefix`: the engines' KV-event sockets and where tokens come from. */
  readonly precise?: PreciseClientOptions;
}

/** What a `precise-prefix` router needs of the engines (serializable). */
export interface PreciseClientOptions {
  /** Each engine's publisher and replay sockets, by target id. */
  readonly feeds: readonly { readonly engine: string; readonly endpoint: string; readonly replayEndpoint?: string | undefined }[];
  /** The llama fleet's `tokenizer.json` + `tokenizer_config.json` directory; absent: the emulated engine's tokens (its template, 4 characters a token). */
  readonly tokenizerDir?: string;
  /** The engines' tokens per block. */
  readonly blockSize: number;
}

/** What one request did, as the application saw it. Times in ms. */
export interface RequestOutcome {
  /** The target the router chose, `undefined` when the request failed before. */
  readonly target: string | undefined;
  /** What the strategy predicted cached; `undefined`: no prediction. */
  readonly predicted: number | undefined;
  /** Sent → first content; `NaN` when it failed. */
  readonly ttftMs: number;
  /** Sent → last event. */
  readonly durationMs: number;
  /** Sent → the router's decision (`onDecision`): the router's share of the TTFT; `NaN` when it decided nothing. */
  readonly decisionMs: number;
  /** Why the router picked its target (`Decision.reason`); `undefined` when it decided nothing. */
  readonly reason?: Decision["reason"] | undefined;
  /** The answer's text. */
  readonly text: string;
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly completionTokens: number;
  /** The engine's own TTFT and queueing (its response headers); `undefined` when absent. */
  readonly engineTtftMs: number | undefined;
  readonly engineQueueMs: number | undefined;
  /** The error's message when the request failed. */
  readonly error?: string;
}

/** Per-request context the router's `onDecision` writes into. */
interface Pending {
  target?: string;
  decidedAt?: number;
  predicted?: number | undefined;
  reason?: Decision["reason"];
}

/** A routed client; see the file header. */
export class RoutedClient {
  private readonly als = new AsyncLocalStorage<Pending>();
  private client!: OpenAI;
  private feeds: KvEventFeeds | undefined;

  private constructor() {}

  /** The router over `OpenAI` (the `openai` package's class) in front of `o.targets`. */
  static async open(OpenAIClass: typeof import("openai").default, o: RoutedClientOptions): Promise<RoutedClient> {
    const c = new RoutedClient();
    const precise = o.precise === undefined ? undefined : await preciseOptions(o.precise);
    c.feeds = precise?.feeds;
    c.client = await routeOpenAI(new OpenAIClass({ apiKey: "unused", baseURL: "http://fleet.invalid/v1", maxRetries: 0, timeout: 600_000 }), {
      targets: o.targets.map(({ id, baseURL }) => ({ id, baseURL })),
      random: createRandom(o.seed),
      ...o.router,
      ...strategyOptions(o.strategy),
      ...(precise && { precisePrefix: precise.options }),
      onDecision: (d) => {
        const p = c.als.getStore();
        if (p !== undefined) {
          p.target = d.target.id;
          p.decidedAt = performance.now();
          p.predicted = d.predictedCachedTokens;
          p.reason = d.reason;
        }
      },
    });
    return c;
  }

  /** Waits until the router's feeds are in sync with every engine (or `timeoutMs` passed); true when they are. */
  async synced(engines: readonly string[], timeoutMs = 10_000): Promise<boolean> {
    const feeds = this.feeds;
    if (feeds === undefined) return true;
    const until = performance.now() + timeoutMs;
    while (!engines.every((e) => feeds.inSync(e))) {
      if (performance.now() > until) return false;
      await new Promise((r) => setTimeout(r, 20));
    }
    return true;
  }

  /** Closes the KV-event feeds, if any. */
  async close(): Promise<void> {
    await this.feeds?.close();
  }

  /** Plays one chat request, streaming; never throws (a failure is the outcome's `error`). */
  async send(messages: readonly Message[], maxTokens: number): Promise<RequestOutcome> {
    const pending: Pending = {};
    const start = performance.now();
    let first = Number.NaN;
    let text = "";
    let usage: OpenAI.CompletionUsage | undefined;
    let headers: Headers | undefined;
    try {
      await this.als.run(pending, async () => {
        const { data, response } = await this.client.chat.completions
          .create({ model: DEFAULT_LLAMA_MODEL, messages: [...messages], max_tokens: maxTokens, stream: true, stream_options: { include_usage: true } })
          .withResponse();
        headers = response.headers;
        for await (const chunk of data) {
          const delta = chunk.choices[0]?.delta?.content;
          if (delta) {
            if (Number.isNaN(first)) first = performance.now() - start;
            text += delta;
          }
          if (chunk.usage) usage = chunk.usage;
        }
      });
    } catch (err) {
      return {
        target: pending.target,
        predicted: pending.predicted,
        ttftMs: Number.NaN,
        durationMs: performance.now() - start,
        decisionMs: (pending.decidedAt ?? Number.NaN) - start,
        text: "",
        promptTokens: 0,
        cachedTokens: 0,
        completionTokens: 0,
        engineTtftMs: undefined,
        engineQueueMs: undefined,
        error: err instanceof Error ? err.message : String(err),
      };
    }
    const durationMs = performance.now() - start;
    const header = (name: string) => {
      const v = Number(headers?.get(name) ?? Number.NaN);
      return Number.isFinite(v) ? v : undefined;
    };
    return {
      target: pending.target,
      predicted: pending.predicted,
      ttftMs: Number.isNaN(first) ? durationMs : first,
      durationMs,
      decisionMs: (pending.decidedAt ?? Number.NaN) - start,
      reason: pending.reason,
      text,
      promptTokens: usage?.prompt_tokens ?? 0,
      cachedTokens: usage?.prompt_tokens_details?.cached_tokens ?? 0,
      completionTokens: usage?.completion_tokens ?? 0,
      engineTtftMs: header("x-prefix-router-ttft-ms"),
      engineQueueMs: header("x-prefix-router-queue-ms"),
    };
  }
}

/**
 * `precisePrefix` options for the bench's engines: a feed per engine into the strategy's index
 * (opened in the background; an engine is routed approximately until its feed is in sync), and
 * the engines' tokenizer — the llama fleet's files, or the emulated engine's own functions.
 */
async function preciseOptions(p: PreciseClientOptions): Promise<{ options: NonNullable<RouterOptions["precisePrefix"]>; feeds: KvEventFeeds }> {
  const feeds = new KvEventFeeds();
  const render = (body: unknown): string | undefined => {
    try {
      return renderPrompt(body);
    } catch {
      return undefined;
    }
  };
  const tokenizer =
    p.tokenizerDir === undefined
      ? { render, encode: emulatedTokens }
      : { tokenizerJson: join(p.tokenizerDir, "tokenizer.json"), tokenizerConfig: join(p.tokenizerDir, "tokenizer_config.json") };
  const options: NonNullable<RouterOptions["precisePrefix"]> = {
    tokenizer,
    blockSize: p.blockSize,
    feed: (sink: KvEventSink) => {
      // Opened in the background: an engine routes approximately until its feed is in sync.
      for (const f of p.feeds) {
        feeds.add({ engine: f.engine, endpoint: f.endpoint, ...(f.replayEndpoint !== undefined && { replayEndpoint: f.replayEndpoint }), sink }).catch((e: unknown) => {
          process.stderr.write(`bench: the KV-event feed of ${f.engine} did not open: ${e instanceof Error ? e.message : String(e)}\n`);
        });
      }
      return feeds;
    },
  };
  return { options, feeds };
}
