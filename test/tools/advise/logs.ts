import { Rng } from "../../../tools/sim/random.js";
import { syntheticText } from "../../../tools/bench/text.js";
/**
 * Request logs with known drift, for the advisor's tests: what an application that puts a
 * timestamp in its system prompt, shuffles its tools, reorders its context messages or puts a
 * user id first would log. Each generator also gives the same log with the drift removed, which
 * the virtual fleet measures against the advisor's estimate.
 */

/** A log line: a chat body with a timestamp, as an application logs it. */
export interface Line {
  timestamp: number;
  body: Record<string, unknown>;
}

export type DriftKind = "timestamp" | "tools-order" | "message-order" | "user-id";

/** 2,400 tokens of policy text, the part requests should share. */
const POLICY = syntheticText(0x9011c7, 2400);
/** Six retrieved documents that every request sends, in an order that may vary. */
const DOCUMENTS = Array.from({ length: 6 }, (_, k) => syntheticText(0xd0c0 + k, 400));

const TOOLS = Array.from({ length: 8 }, (_, k) => ({
  type: "function",
  function: { name: `tool_${k}`, description: syntheticText(0x7001 + k, 60), parameters: { type: "object", properties: { q: { type: "string" } } } },
}));

/** `n` requests at 2 per second; `drift` false gives the same log with the drift removed. */
export function driftLog(kind: DriftKind, n: number, drift = true, seed = 1): Line[] {
  const rng = new Rng(seed);
  const lines: Line[] = [];
  for (let i = 0; i < n; i++) {
    const timestamp = 1_750_000_000_000 + i * 500;
    const question = { role: "user", content: `Question ${i}: ${syntheticText(0x50000 + i, 30)}` };
    let body: Record<string, unknown>;
    switch (kind) {
      case "timestamp": {
        const now = new Date(drift ? timestamp : 1_750_000_000_000).toISOString();
        body = { model: "llama", messages: [{ role: "system", content: `You are Acme's support assistant. Current time: ${now}.\n${POLICY}` }, question] };
        break;
      }
      case "tools-order": {
        const tools = [...TOOLS];
        if (drift) shuffle(tools, rng);
        body = { model: "llama", tools, messages: [{ role: "system", content: POLICY }, question] };
        break;
      }
      case "message-order": {
        const context = DOCUMENTS.map((content) => ({ role: "user", content }));
        if (drift) shuffle(context, rng);
        body = { model: "llama", messages: [{ role: "system", content: POLICY }, ...context, question] };
        break;
      }
      case "user-id": {
        const user = drift ? `u-${1000 + rng.int(400)}` : "u-1000";
        body = { model: "llama", messages: [{ role: "system", content: `User id: ${user}.\n${POLICY}` }, question] };
        break;
      }
    }
    lines.push({ timestamp, body });
  }
  return lines;
}

/**
 * `n` requests at 2 per second, each one of `documents` 2,400-token documents (a system prompt, in
 * a seeded random order) and a question: no drift, `documents` × 2,400 tokens of working set.
 */
export function documentsLog(documents: number, n: number, seed = 1): Line[] {
  const rng = new Rng(seed);
  const texts = Array.from({ length: documents }, (_, d) => syntheticText(0xd0c5 + d, 2400));
  return Array.from({ length: n }, (_, i) => ({
    timestamp: 1_750_000_000_000 + i * 500,
    body: {
      model: "llama",
      messages: [
        { role: "system", content: texts[rng.int(documents)] },
        { role: "user", content: `Question ${i}: ${syntheticText(0x60000 + i, 30)}` },
      ],
    },
  }));
}

function shuffle<T>(items: T[], rng: Rng): void {
  for (let k = items.length - 1; k > 0; k--) {
    const j = rng.int(k + 1);
    [items[k], items[j]] = [items[j]!, items[k]!];
  }
}
