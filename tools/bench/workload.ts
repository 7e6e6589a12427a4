/**
 * What a benchmark workload is: a deterministic, seeded request sequence of OpenAI chat bodies,
 * in arrival order. Each workload is a pure function of (seed, duration, rate multiplier): every strategy of
 * a run replays exactly the same sequence.
 *
 * Arrivals are open-loop: when a request arrives never depends on how fast earlier ones were
 * served, otherwise a faster strategy would see a different sequence. Multi-turn sessions
 * (sharegpt, agent) schedule the next turn after an estimate of the previous answer's decode time
 * ({@link DECODE_MS_PER_TOKEN_ESTIMATE} per output token) plus a think or tool time.
 *
 * The built-in workloads are in workloads-single-turn.ts and workloads-sessions.ts, listed by
 * name in workloads.ts. Why each default is what it is: see `docs/bench.md` and the TSDoc of
 * each parameter.
 */
import type { EngineConfig } from "../fleet/config.js";

/** One chat message of an OpenAI chat-completions body. */
export interface ChatMessage {
  readonly role: "system" | "user" | "assistant" | "tool";
  readonly content: string;
  /** Assistant tool calls (agent workload). */
  readonly tool_calls?: readonly ChatToolCall[];
  /** Id of the call a `tool` message answers. */
  readonly tool_call_id?: string;
}

/** An assistant tool call. */
export interface ChatToolCall {
  readonly id: string;
  readonly type: "function";
  readonly function: { readonly name: string; readonly arguments: string };
}

/** A tool (function) definition. */
export interface ChatTool {
  readonly type: "function";
  readonly function: { readonly name: string; readonly description: string; readonly parameters: Record<string, unknown> };
}

/** An OpenAI chat-completions request body, as the workloads produce it. */
export interface ChatBody {
  readonly model: string;
  readonly messages: readonly ChatMessage[];
  readonly tools?: readonly ChatTool[];
  readonly max_tokens: number;
}

/** One benchmark request. */
export interface BenchRequest {
  /** Unique within the sequence: `<workload>-<index>`. */
  readonly id: string;
  /** Arrival time in simulated milliseconds from the start of the run. */
  readonly arrivalMs: number;
  /** The OpenAI chat body sent to the router and rendered into the engine's prompt. */
  readonly body: ChatBody;
  /** Completion length the engine will generate, in tokens. */
  readonly outputTokens: number;
  /** The request's tenant, routed with it (the router's `tenant`). @default undefined — none */
  readonly tenant?: string;
  /** vLLM's `cache_salt` the request carries: the engine caches its blocks apart. @default undefined — none */
  readonly cacheSalt?: string;
}

/** What a workload needs to produce its sequence. */
export interface WorkloadSettings {
  /** Seed of every random draw and of the synthetic text. */
  readonly seed: number;
  /** Requests arrive in [0, durationMs). */
  readonly durationMs: number;
  /** Multiplies the arrival rate (of requests, or of session starts). 1 = the workload's default. */
  readonly rateMultiplier: number;
}

/** A named, documented request generator. */
export interface Workload {
  /** Name used on the command line and in result rows. */
  readonly name: string;
  /** One sentence on what the workload models. */
  readonly description: string;
  /** Simulated duration used when the run does not set one. */
  readonly defaultDurationMs: number;
  /**
   * Prefix lengths (text mode, characters) to sweep when the run does not set any. Present when
   * the workload's shared part is longer than the router's default prefix length, so the
   * default run shows both the default and a prefix length that reaches past the shared part.
   */
  readonly defaultPrefixLengths?: readonly number[];
  /**
   * The fleet the workload is meant for, used when the run does not set its own: instances, and
   * engine parameters under the run's (`short-prompts`: llama.cpp-like slot engines).
   */
  readonly fleet?: { readonly instances?: number; readonly engine?: Readonly<Partial<EngineConfig>> };
  /** The generator's parameters, for reports and docs. */
  readonly parameters: Readonly<Record<string, number | string>>;
  /** The request sequence, in non-decreasing `arrivalMs`. Lazily generated. */
  requests(settings: WorkloadSettings): Iterable<BenchRequest>;
}

/** Model name carried in every body. */
export const BENCH_MODEL = "llama-3.1-70b-instruct";

/**
 * Estimated decode time per output token used only to space the turns of a session (the next
 * turn comes after the previous answer would have streamed). ~30 ms/token is a 70B model's
 * single-stream decode speed on one 8-GPU node.
 */
export const DECODE_MS_PER_TOKEN_ESTIMATE = 30;

/** One simulated minute, ms. */
export const MINUTE = 60_000;

/** Namespaces of synthetic text (`TextSource` ids): the same id in two namespaces gives unrelated text. */
export const TEXT_NS = {
  document: 1,
  question: 2,
  answer: 3,
  system: 4,
  tool: 5,
  task: 6,
  toolResult: 7,
  user: 8,
  thought: 9,
  args: 10,
  hotPrefix: 11,
  tenant: 12,
  shortPrompt: 13,
} as const;
