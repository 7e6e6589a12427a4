/**
 * The workloads of the real-engine bench, as conversations ("sessions") a closed loop of clients
 * plays in order. Sized for a handful of small engines on a CPU: more shared prefixes than one
 * engine's slots, no more than all slots together, prompts that fit one slot's context.
 *
 *   - `short-prompts`: 12 shared system prompts of about 1,500 characters, picked with a Zipf
 *     (s = 1) popularity, each session one short distinct question — the shape where a
 *     4,096-character routing key would include the question.
 *   - `long-documents`: 8 shared documents of about 6,000 characters, Zipf (s = 0.8), each session
 *     three turns: a question, the engine's answer, a follow-up, …
 *
 * Everything is drawn from the seed: the same seed gives the same sessions, in the same order.
 * Text is ASCII (sim/prose.ts), the text the tiny llama model's tokenizer was trained on.
 */
import { prose } from "../../sim/prose.js";
import { Rng, Zipf, mix32 } from "../../sim/random.js";

export { prose };

/** One conversation: its shared prefix (a system message) and the user turns, played in order. */
export interface EngineSession {
  /** Position in the workload (0-based). */
  readonly index: number;
  /** Which shared prefix it uses (0 = the most popular). */
  readonly group: number;
  /** The system message: the shared prefix. */
  readonly system: string;
  /** The user messages; each turn's request carries the earlier turns and the engine's answers. */
  readonly turns: readonly string[];
}

/** A workload of the real-engine bench. */
export interface EngineWorkload {
  readonly name: EngineWorkloadName;
  readonly sessions: readonly EngineSession[];
  /** Shared prefixes (system messages) it draws from. */
  readonly groups: number;
}

/** Names of the real-engine workloads. */
export const ENGINE_WORKLOAD_NAMES = ["short-prompts", "long-documents"] as const;
export type EngineWorkloadName = (typeof ENGINE_WORKLOAD_NAMES)[number];

/** Parameters of an engine workload. */
export interface EngineWorkloadParams {
  /** Sessions in the workload. */
  sessions: number;
  /** Shared prefixes. */
  groups: number;
  /** Characters of each shared prefix. */
  prefixChars: number;
  /** Zipf exponent of the prefixes' popularity. */
  zipf: number;
  /** User turns per session. */
  turns: number;
  /** Characters of a question, about. */
  questionChars: number;
}

/** The workloads' defaults. */
export const ENGINE_WORKLOAD_DEFAULTS: Readonly<Record<EngineWorkloadName, Readonly<EngineWorkloadParams>>> = Object.freeze({
  "short-prompts": Object.freeze({ sessions: 160, groups: 12, prefixChars: 1500, zipf: 1, turns: 1, questionChars: 80 }),
  "long-documents": Object.freeze({ sessions: 48, groups: 8, prefixChars: 6000, zipf: 0.8, turns: 3, questionChars: 80 }),
});

function checkParams(p: EngineWorkloadParams): void {
  for (const [name, min, max] of [
    ["sessions", 1, 100_000],
    ["groups", 1, 1000],
    ["prefixChars", 16, 1_000_000],
    ["turns", 1, 100],
    ["questionChars", 8, 100_000],
  ] as const) {
    const v = p[name];
    if (!Number.isSafeInteger(v) || v < min || v > max) throw new RangeError(`Expected \`${name}\` to be an integer from ${min} to ${max}, got ${String(v)}`);
  }
  if (!(p.zipf >= 0 && p.zipf <= 10)) throw new RangeError(`Expected \`zipf\` to be a number from 0 to 10, got ${String(p.zipf)}`);
}

/**
 * The workload `name` drawn from `seed`, with `params` over its defaults.
 * @throws RangeError on a parameter out of range
 */
export function engineWorkload(name: EngineWorkloadName, seed: number, params: Partial<EngineWorkloadParams> = {}): EngineWorkload {
  const p: EngineWorkloadParams = { ...ENGINE_WORKLOAD_DEFAULTS[name], ...params };
  checkParams(p);
  const kind = name === "short-prompts" ? "assistant for a support desk" : "analyst answering from the document below";
  const prefixes = Array.from({ length: p.groups }, (_, g) => {
    const rng = new Rng(mix32(seed, 101, g));
    const head = `You are prefix-router's ${kind}, profile ${g}.\n`;
    return head + prose(rng, p.prefixChars - head.length);
  });
  const popularity = new Zipf(p.groups, p.zipf);
  const rng = new Rng(mix32(seed, 202));
  const sessions = Array.from({ length: p.sessions }, (_, index): EngineSession => {
    const group = popularity.sample(rng);
    const turns = Array.from({ length: p.turns }, (_, t) => `Question ${index}.${t}: ${prose(rng, p.questionChars)}?`);
    return { index, group, system: prefixes[group]!, turns };
  });
  return { name, sessions, groups: p.groups };
}
