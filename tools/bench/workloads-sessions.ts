/**
 * Session workloads: multi-turn conversations that resend their whole history every turn,
 * started by a Poisson process and merged into one arrival-ordered stream: `sharegpt` and
 * `agent`. The next turn of a session comes after an estimate of the previous answer's decode
 * time ({@link DECODE_MS_PER_TOKEN_ESTIMATE} per output token) plus a think or tool time, never
 * after the simulated answer, so every strategy sees the same sequence.
 */
import { EventHeap } from "../sim/event-heap.js";
import { Rng, Zipf, mix32 } from "../sim/random.js";
import { TextSource } from "./text.js";
import {
  BENCH_MODEL,
  type BenchRequest,
  type ChatBody,
  type ChatMessage,
  type ChatTool,
  DECODE_MS_PER_TOKEN_ESTIMATE,
  MINUTE,
  TEXT_NS,
  type Workload,
  type WorkloadSettings,
} from "./workload.js";

/* ----------------------------------------------------------------------------------------- */
/* sharegpt                                                                                    */
/* ----------------------------------------------------------------------------------------- */

/** Parameters of {@link sharegptWorkload}. */
export interface SharegptParams {
  /** Poisson rate of new conversations per second, before the rate multiplier. @default 3 */
  conversationsPerSecond: number;
  /**
   * Mean user turns per whole conversation (geometric, capped at 24). @default 5.5 — whole
   * conversations, not the 3.51 turns of ShareGPT's training split (see docs/bench-sharegpt.md)
   */
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
  meanTurns: 5.5,
  userMedianTokens: 70,
  outputMedianTokens: 230,
  thinkMeanMs: 20_000,
};

/**
 * `sharegpt`: the second workload of AWS's published benchmark (ShareGPT-like). Short,
 * variable-length multi-turn conversations with no shared system prompt; each turn resends the
 * whole history, so sharing is only within a conversation. Conversations are whole ones (mean
 * 5.5 user turns), as a multi-turn replay sends them, not the parts of ShareGPT's training split
 * (docs/bench-sharegpt.md).
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
          messages.push({ role: "user", content: text.once(TEXT_NS.user, mix32(c, k), u) });
          yield { atMs: t, body: { model: BENCH_MODEL, messages: [...messages], max_tokens: out }, outputTokens: out };
          messages.push({ role: "assistant", content: text.once(TEXT_NS.answer, mix32(c, k), out) });
          t += out * DECODE_MS_PER_TOKEN_ESTIMATE + rng.exponential(p.thinkMeanMs);
        }
      });
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
            description: text.cached(TEXT_NS.tool, mix32(a, k), p.toolDescriptionTokens),
            parameters: { type: "object", properties: { input: { type: "string" } }, required: ["input"] },
          },
        })),
        instructions: text.cached(TEXT_NS.system, 100 + a, p.instructionTokens),
      }));
      const pickConfig = new Zipf(p.agentTypes, 1);
      return sessions("agent", s, p.sessionsPerSecond, function* (c, rng, startMs) {
        const cfg = configs[pickConfig.sample(rng)]!;
        const steps = rng.geometric(p.meanSteps, 40);
        const task = rng.logNormalInt(p.taskMedianTokens, 0.7, 20, 2000);
        const messages: ChatMessage[] = [
          { role: "system", content: cfg.instructions },
          { role: "user", content: text.once(TEXT_NS.task, c, task) },
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
            content: text.once(TEXT_NS.thought, mix32(c, k), thought),
            tool_calls: [
              {
                id: callId,
                type: "function",
                function: { name: tool.function.name, arguments: JSON.stringify({ input: text.once(TEXT_NS.args, mix32(c, k), out - thought) }) },
              },
            ],
          });
          const result = rng.logNormalInt(p.toolResultMedianTokens, 1.0, 10, 6000);
          messages.push({ role: "tool", tool_call_id: callId, content: text.once(TEXT_NS.toolResult, mix32(c, k), result) });
          t += out * DECODE_MS_PER_TOKEN_ESTIMATE + rng.exponential(p.toolMeanMs);
        }
      });
    },
  };
}

/* ----------------------------------------------------------------------------------------- */
/* sessions merged into one stream                                                           */
/* ----------------------------------------------------------------------------------------- */

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
