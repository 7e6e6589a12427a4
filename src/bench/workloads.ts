/**
 * Benchmark workloads: deterministic, seeded request sequences of OpenAI chat bodies, in arrival
 * order. Each workload is a pure function of (seed, duration, rate multiplier): every strategy of
 * a run replays exactly the same sequence.
 *
 * Arrivals are open-loop: when a request arrives never depends on how fast earlier ones were
 * served, otherwise a faster strategy would see a different sequence. Multi-turn sessions
 * (sharegpt, agent) schedule the next turn after an estimate of the previous answer's decode time
 * ({@link DECODE_MS_PER_TOKEN_ESTIMATE} per output token) plus a think or tool time.
 *
 * Why each default is what it is: see `docs/bench.md` and the TSDoc of each parameter.
 */
import { EventHeap } from "../sim/event-heap.js";
import { Rng, Zipf, mix32 } from "../sim/random.js";
import { TextSource } from "./text.js";

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

const MINUTE = 60_000;

// Namespaces of synthetic text: the same id in two namespaces gives unrelated text.
const NS = {
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
} as const;

/* ----------------------------------------------------------------------------------------- */
/* long-context                                                                                */
/* ----------------------------------------------------------------------------------------- */

/** Parameters of {@link longContextWorkload}. */
export interface LongContextParams {
  /** Distinct documents. @default 1600 */
  documents: number;
  /** Tokens per document: the shared prefix. @default 8000 (the AWS benchmark) */
  documentTokens: number;
  /** Zipf exponent of document popularity. @default 0.9 */
  zipfExponent: number;
  /** Poisson arrival rate, requests per second, before the rate multiplier. @default 7 */
  ratePerSecond: number;
  /** Median question length in tokens (log-normal, σ 0.5, 8–400). @default 40 */
  questionMedianTokens: number;
  /** Median answer length in tokens (log-normal, σ 0.6, 8–800). @default 120 */
  outputMedianTokens: number;
}

/** Defaults of {@link longContextWorkload}; calibration in `docs/bench.md`. */
export const LONG_CONTEXT_DEFAULTS: Readonly<LongContextParams> = {
  documents: 580,
  documentTokens: 8000,
  zipfExponent: 0,
  ratePerSecond: 7,
  questionMedianTokens: 40,
  outputMedianTokens: 120,
};

/**
 * `long-context`: the seed's benchmark. Many 8,000-token documents, each request one document
 * (Zipf-popular) followed by a short question, Poisson arrivals, one simulated hour.
 */
export function longContextWorkload(params: Partial<LongContextParams> = {}): Workload {
  const p: LongContextParams = { ...LONG_CONTEXT_DEFAULTS, ...params };
  return {
    name: "long-context",
    description: `${p.documents} documents of ${p.documentTokens} tokens (Zipf s=${p.zipfExponent}), each followed by a short question`,
    defaultDurationMs: 60 * MINUTE,
    parameters: { ...p },
    *requests(s) {
      const rng = new Rng(mix32(s.seed, 0x10c));
      const zipf = new Zipf(p.documents, p.zipfExponent);
      const text = new TextSource(s.seed);
      // Popularity rank → document id, so the most popular document is not always id 0.
      const docOfRank = permutation(p.documents, new Rng(mix32(s.seed, 0x10d)));
      const meanGap = 1000 / (p.ratePerSecond * s.rateMultiplier);
      let t = rng.exponential(meanGap);
      for (let i = 0; t < s.durationMs; i++) {
        const doc = docOfRank[zipf.sample(rng)]!;
        const q = rng.logNormalInt(p.questionMedianTokens, 0.5, 8, 400);
        const out = rng.logNormalInt(p.outputMedianTokens, 0.6, 8, 800);
        const content = `${text.cached(NS.document, doc, p.documentTokens)}\n\nQuestion: ${text.once(NS.question, i, q)}`;
        yield {
          id: `long-context-${i}`,
          arrivalMs: t,
          outputTokens: out,
          body: { model: BENCH_MODEL, messages: [{ role: "user", content }], max_tokens: out },
        };
        t += rng.exponential(meanGap);
      }
    },
  };
}

/* ----------------------------------------------------------------------------------------- */
/* sharegpt                                                                                    */
/* ----------------------------------------------------------------------------------------- */

/** Parameters of {@link sharegptWorkload}. */
export interface SharegptParams {
  /** Poisson rate of new conversations per second, before the rate multiplier. @default 3 */
  conversationsPerSecond: number;
  /** Mean user turns per conversation (geometric, capped at 24). @default 3.5 */
  meanTurns: number;
  /** Median user message length in tokens (log-normal, σ 1.0, 4–3000). @default 70 */
  userMedianTokens: number;
  /** Median assistant answer length in tokens (log-normal, σ 0.8, 8–1500). @default 230 */
  outputMedianTokens: number;
  /** Mean user think time between an answer and the next turn, ms (exponential). @default 20000 */
  thinkMeanMs: number;
}

/** Defaults of {@link sharegptWorkload}. */
export const SHAREGPT_DEFAULTS: Readonly<SharegptParams> = {
  conversationsPerSecond: 3,
  meanTurns: 3.5,
  userMedianTokens: 70,
  outputMedianTokens: 230,
  thinkMeanMs: 20_000,
};

/**
 * `sharegpt`: the seed's second benchmark. Short, variable-length multi-turn conversations with
 * no shared system prompt; each turn resends the whole history, so sharing is only within a
 * conversation.
 */
export function sharegptWorkload(params: Partial<SharegptParams> = {}): Workload {
  const p: SharegptParams = { ...SHAREGPT_DEFAULTS, ...params };
  return {
    name: "sharegpt",
    description: `multi-turn conversations (mean ${p.meanTurns} turns), user ~${p.userMedianTokens} / answer ~${p.outputMedianTokens} tokens`,
    defaultDurationMs: 30 * MINUTE,
    parameters: { ...p },
    requests(s) {
      const text = new TextSource(s.seed);
      return sessions("sharegpt", s, p.conversationsPerSecond, function* (c, rng, startMs) {
        const turns = rng.geometric(p.meanTurns, 24);
        const messages: ChatMessage[] = [];
        let t = startMs;
        for (let k = 0; k < turns; k++) {
          const u = rng.logNormalInt(p.userMedianTokens, 1.0, 4, 3000);
          const out = rng.logNormalInt(p.outputMedianTokens, 0.8, 8, 1500);
          messages.push({ role: "user", content: text.once(NS.user, mix32(c, k), u) });
          yield { atMs: t, body: { model: BENCH_MODEL, messages: [...messages], max_tokens: out }, outputTokens: out };
          messages.push({ role: "assistant", content: text.once(NS.answer, mix32(c, k), out) });
          t += out * DECODE_MS_PER_TOKEN_ESTIMATE + rng.exponential(p.thinkMeanMs);
        }
      });
    },
  };
}

/* ----------------------------------------------------------------------------------------- */
/* rag                                                                                         */
/* ----------------------------------------------------------------------------------------- */

/** Parameters of {@link ragWorkload}. */
export interface RagParams {
  /** Tokens of the common system prompt (instructions shared by every request). @default 600 */
  systemTokens: number;
  /** Distinct retrievable documents (chunks). @default 4000 */
  documents: number;
  /** Median document length in tokens (log-normal per document, σ 0.4, 300–6000). @default 1500 */
  documentMedianTokens: number;
  /** Zipf exponent of document retrieval popularity. @default 1.0 */
  zipfExponent: number;
  /** Poisson arrival rate, requests per second, before the rate multiplier. @default 12 */
  ratePerSecond: number;
  /** Median question length in tokens (log-normal, σ 0.5, 8–400). @default 30 */
  questionMedianTokens: number;
  /** Median answer length in tokens (log-normal, σ 0.6, 8–800). @default 150 */
  outputMedianTokens: number;
}

/** Defaults of {@link ragWorkload}. */
export const RAG_DEFAULTS: Readonly<RagParams> = {
  systemTokens: 600,
  documents: 4000,
  documentMedianTokens: 1500,
  zipfExponent: 1.0,
  ratePerSecond: 12,
  questionMedianTokens: 30,
  outputMedianTokens: 150,
};

/**
 * `rag`: a common system prompt, then one of many retrieved documents (Zipf-popular), then a
 * question. The shared system prompt (600 tokens ≈ 2,400 characters) is longer than a
 * 1,024-character routing prefix, so at that prefix length every request has the same key.
 */
export function ragWorkload(params: Partial<RagParams> = {}): Workload {
  const p: RagParams = { ...RAG_DEFAULTS, ...params };
  return {
    name: "rag",
    description: `${p.systemTokens}-token system prompt + 1 of ${p.documents} documents (~${p.documentMedianTokens} tokens, Zipf s=${p.zipfExponent}) + question`,
    defaultDurationMs: 20 * MINUTE,
    defaultPrefixLengths: [1024, 4096],
    parameters: { ...p },
    *requests(s) {
      const rng = new Rng(mix32(s.seed, 0x4a6));
      const zipf = new Zipf(p.documents, p.zipfExponent);
      const text = new TextSource(s.seed);
      const docOfRank = permutation(p.documents, new Rng(mix32(s.seed, 0x4a7)));
      const docTokens = (d: number) =>
        new Rng(mix32(s.seed, 0x4a8, d)).logNormalInt(p.documentMedianTokens, 0.4, 300, 6000);
      const system = text.cached(NS.system, 0, p.systemTokens);
      const meanGap = 1000 / (p.ratePerSecond * s.rateMultiplier);
      let t = rng.exponential(meanGap);
      for (let i = 0; t < s.durationMs; i++) {
        const doc = docOfRank[zipf.sample(rng)]!;
        const q = rng.logNormalInt(p.questionMedianTokens, 0.5, 8, 400);
        const out = rng.logNormalInt(p.outputMedianTokens, 0.6, 8, 800);
        const content = `Context:\n${text.cached(NS.document, doc, docTokens(doc))}\n\nQuestion: ${text.once(NS.question, i, q)}`;
        yield {
          id: `rag-${i}`,
          arrivalMs: t,
          outputTokens: out,
          body: {
            model: BENCH_MODEL,
            messages: [
              { role: "system", content: system },
              { role: "user", content },
            ],
            max_tokens: out,
          },
        };
        t += rng.exponential(meanGap);
      }
    },
  };
}

/* ----------------------------------------------------------------------------------------- */
/* agent                                                                                       */
/* ----------------------------------------------------------------------------------------- */

/** Parameters of {@link agentWorkload}. */
export interface AgentParams {
  /** Distinct agent configurations (tool set + instructions), chosen with weights 1/(k+1). @default 3 */
  agentTypes: number;
  /** Tool definitions per agent configuration. @default 12 */
  toolsPerAgent: number;
  /** Tokens of each tool's description. @default 150 */
  toolDescriptionTokens: number;
  /** Tokens of each configuration's instructions (system message). @default 1200 */
  instructionTokens: number;
  /** Poisson rate of new sessions per second, before the rate multiplier. @default 0.5 */
  sessionsPerSecond: number;
  /** Mean steps (model calls) per session (geometric, capped at 40). @default 10 */
  meanSteps: number;
  /** Median task (first user message) length in tokens (log-normal, σ 0.7, 20–2000). @default 200 */
  taskMedianTokens: number;
  /** Median tool-result length in tokens (log-normal, σ 1.0, 10–6000). @default 400 */
  toolResultMedianTokens: number;
  /** Median model output per step (thought + tool call) in tokens (log-normal, σ 0.6, 8–1000). @default 90 */
  outputMedianTokens: number;
  /** Mean tool execution time between steps, ms (exponential). @default 2000 */
  toolMeanMs: number;
}

/** Defaults of {@link agentWorkload}. */
export const AGENT_DEFAULTS: Readonly<AgentParams> = {
  agentTypes: 3,
  toolsPerAgent: 12,
  toolDescriptionTokens: 150,
  instructionTokens: 1200,
  sessionsPerSecond: 0.5,
  meanSteps: 10,
  taskMedianTokens: 200,
  toolResultMedianTokens: 400,
  outputMedianTokens: 90,
  toolMeanMs: 2000,
};

/**
 * `agent`: multi-turn agent sessions. Tools and instructions first (shared by every session of
 * the same agent configuration), then the task, then one (assistant tool call, tool result) pair
 * per step; the history grows every step and is resent whole.
 */
export function agentWorkload(params: Partial<AgentParams> = {}): Workload {
  const p: AgentParams = { ...AGENT_DEFAULTS, ...params };
  const sharedTokens = p.toolsPerAgent * p.toolDescriptionTokens + p.instructionTokens;
  return {
    name: "agent",
    description: `agent sessions (mean ${p.meanSteps} steps) over ${p.agentTypes} configurations of ~${sharedTokens} shared tokens (tools + instructions)`,
    defaultDurationMs: 20 * MINUTE,
    defaultPrefixLengths: [4096, 16384],
    parameters: { ...p },
    requests(s) {
      const text = new TextSource(s.seed);
      const configs = Array.from({ length: p.agentTypes }, (_, a) => ({
        tools: Array.from({ length: p.toolsPerAgent }, (_, k): ChatTool => ({
          type: "function",
          function: {
            name: `tool_${a}_${k}`,
            description: text.cached(NS.tool, mix32(a, k), p.toolDescriptionTokens),
            parameters: { type: "object", properties: { input: { type: "string" } }, required: ["input"] },
          },
        })),
        instructions: text.cached(NS.system, 100 + a, p.instructionTokens),
      }));
      const pickConfig = new Zipf(p.agentTypes, 1);
      return sessions("agent", s, p.sessionsPerSecond, function* (c, rng, startMs) {
        const cfg = configs[pickConfig.sample(rng)]!;
        const steps = rng.geometric(p.meanSteps, 40);
        const task = rng.logNormalInt(p.taskMedianTokens, 0.7, 20, 2000);
        const messages: ChatMessage[] = [
          { role: "system", content: cfg.instructions },
          { role: "user", content: text.once(NS.task, c, task) },
        ];
        let t = startMs;
        for (let k = 0; k < steps; k++) {
          const out = rng.logNormalInt(p.outputMedianTokens, 0.6, 8, 1000);
          yield {
            atMs: t,
            body: { model: BENCH_MODEL, tools: cfg.tools, messages: [...messages], max_tokens: out },
            outputTokens: out,
          };
          // The model's output becomes history: half thought, half call arguments.
          const callId = `call_${c}_${k}`;
          const tool = cfg.tools[rng.int(cfg.tools.length)]!;
          const thought = Math.ceil(out / 2);
          messages.push({
            role: "assistant",
            content: text.once(NS.thought, mix32(c, k), thought),
            tool_calls: [
              {
                id: callId,
                type: "function",
                function: { name: tool.function.name, arguments: JSON.stringify({ input: text.once(NS.args, mix32(c, k), out - thought) }) },
              },
            ],
          });
          const result = rng.logNormalInt(p.toolResultMedianTokens, 1.0, 10, 6000);
          messages.push({ role: "tool", tool_call_id: callId, content: text.once(NS.toolResult, mix32(c, k), result) });
          t += out * DECODE_MS_PER_TOKEN_ESTIMATE + rng.exponential(p.toolMeanMs);
        }
      });
    },
  };
}

/* ----------------------------------------------------------------------------------------- */
/* hot-prefix                                                                                  */
/* ----------------------------------------------------------------------------------------- */

/** Parameters of {@link hotPrefixWorkload}. */
export interface HotPrefixParams {
  /** Distinct shared prefixes (e.g. one system prompt per product feature). @default 100 */
  prefixes: number;
  /** Tokens per shared prefix. @default 3000 */
  prefixTokens: number;
  /** Zipf exponent of prefix popularity; 1.2 over 100 prefixes gives the top one ~26% of requests. @default 1.2 */
  zipfExponent: number;
  /**
   * Poisson arrival rate, requests per second, before the rate multiplier. One instance serves
   * at most ~27.7 req/s of this mix (measured: 1 instance, rising rate); 110 req/s is ~57% of 7
   * instances' capacity, while the top prefix alone brings ~29 req/s: more than one instance.
   * @default 110
   */
  ratePerSecond: number;
  /** Median unique user suffix in tokens (log-normal, σ 0.8, 8–4000). @default 300 */
  userMedianTokens: number;
  /** Median answer length in tokens (log-normal, σ 0.6, 8–800). @default 150 */
  outputMedianTokens: number;
}

/** Defaults of {@link hotPrefixWorkload}. */
export const HOT_PREFIX_DEFAULTS: Readonly<HotPrefixParams> = {
  prefixes: 100,
  prefixTokens: 3000,
  zipfExponent: 1.2,
  ratePerSecond: 110,
  userMedianTokens: 300,
  outputMedianTokens: 150,
};

/**
 * `hot-prefix`: Zipf-popular shared prefixes where the most popular one alone carries more
 * traffic than one instance can serve (~26% of requests against a fair share of 1/7 ≈ 14%), so
 * pinning it to one instance without a load guard saturates that instance.
 */
export function hotPrefixWorkload(params: Partial<HotPrefixParams> = {}): Workload {
  const p: HotPrefixParams = { ...HOT_PREFIX_DEFAULTS, ...params };
  return {
    name: "hot-prefix",
    description: `${p.prefixes} prefixes of ${p.prefixTokens} tokens, Zipf s=${p.zipfExponent} (top prefix ${(100 * new Zipf(p.prefixes, p.zipfExponent).probability(0)).toFixed(0)}% of requests)`,
    defaultDurationMs: 5 * MINUTE,
    parameters: { ...p },
    *requests(s) {
      const rng = new Rng(mix32(s.seed, 0x407));
      const zipf = new Zipf(p.prefixes, p.zipfExponent);
      const text = new TextSource(s.seed);
      const meanGap = 1000 / (p.ratePerSecond * s.rateMultiplier);
      let t = rng.exponential(meanGap);
      for (let i = 0; t < s.durationMs; i++) {
        const prefix = zipf.sample(rng);
        const u = rng.logNormalInt(p.userMedianTokens, 0.8, 8, 4000);
        const out = rng.logNormalInt(p.outputMedianTokens, 0.6, 8, 800);
        yield {
          id: `hot-prefix-${i}`,
          arrivalMs: t,
          outputTokens: out,
          body: {
            model: BENCH_MODEL,
            messages: [
              { role: "system", content: text.cached(NS.hotPrefix, prefix, p.prefixTokens) },
              { role: "user", content: text.once(NS.user, i, u) },
            ],
            max_tokens: out,
          },
        };
        t += rng.exponential(meanGap);
      }
    },
  };
}

/* ----------------------------------------------------------------------------------------- */
/* registry and helpers                                                                        */
/* ----------------------------------------------------------------------------------------- */

/** Names of the built-in workloads, in the order the default run uses. */
export const WORKLOAD_NAMES = ["long-context", "sharegpt", "rag", "agent", "hot-prefix"] as const;

/** A built-in workload name. */
export type WorkloadName = (typeof WORKLOAD_NAMES)[number];

/** The built-in workload `name` with default parameters. */
export function builtinWorkload(name: WorkloadName): Workload {
  switch (name) {
    case "long-context":
      return longContextWorkload();
    case "sharegpt":
      return sharegptWorkload();
    case "rag":
      return ragWorkload();
    case "agent":
      return agentWorkload();
    case "hot-prefix":
      return hotPrefixWorkload();
  }
}

/** One turn a session generator yields. */
interface SessionTurn {
  readonly atMs: number;
  readonly body: ChatBody;
  readonly outputTokens: number;
}

/**
 * Merges sessions started by a Poisson process into one arrival-ordered stream. Each session is
 * a generator of turns with non-decreasing times, advanced only when its previous turn is
 * emitted, so at most one pending turn per live session is held in memory. Turns at or after
 * the end of the run are dropped.
 */
function* sessions(
  name: string,
  s: WorkloadSettings,
  sessionsPerSecond: number,
  makeSession: (index: number, rng: Rng, startMs: number) => Iterator<SessionTurn>,
): Generator<BenchRequest> {
  const arrivals = new Rng(mix32(s.seed, 0x5e5));
  const meanGap = 1000 / (sessionsPerSecond * s.rateMultiplier);
  const pending = new EventHeap<{ turn: SessionTurn; it: Iterator<SessionTurn> }>();
  let queued = 0; // equal times pop in the order they were queued
  let nextStart = arrivals.exponential(meanGap);
  let session = 0;
  let i = 0;
  for (;;) {
    const startDue = nextStart < s.durationMs;
    if (pending.size === 0 && !startDue) return;
    if (startDue && nextStart < pending.peekTime()) {
      const it = makeSession(session, new Rng(mix32(s.seed, 0x5e6, session)), nextStart);
      session++;
      const first = it.next();
      if (!first.done) pending.push(first.value.atMs, queued++, { turn: first.value, it });
      nextStart += arrivals.exponential(meanGap);
      continue;
    }
    const { turn, it } = pending.pop()!;
    if (turn.atMs >= s.durationMs) continue;
    yield { id: `${name}-${i++}`, arrivalMs: turn.atMs, body: turn.body, outputTokens: turn.outputTokens };
    const next = it.next();
    if (!next.done) pending.push(next.value.atMs, queued++, { turn: next.value, it });
  }
}

/** A seeded random permutation of 0..n-1 (Fisher–Yates). */
function permutation(n: number, rng: Rng): Int32Array {
  const a = new Int32Array(n);
  for (let i = 0; i < n; i++) a[i] = i;
  for (let i = n - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    const t = a[i]!;
    a[i] = a[j]!;
    a[j] = t;
  }
  return a;
}
