/**
 * A request's prompt as the advisor compares it: a sequence of *segments* in the order the
 * engine's chat template renders them — each tool (its canonical JSON), then each message (its
 * content, with tool calls) — and the way back from segments changed by a fix to a body.
 */
import stableStringify from "fast-json-stable-stringify";
import type { ChatBody, ChatMessage, ChatTool } from "../bench/workload.js";
import { seedLanes } from "../fleet/tokenizer.js";

/** One tool or one message of a request. */
export interface Segment {
  readonly kind: "tool" | "message";
  /** Index in the body's `tools` or `messages`. */
  readonly index: number;
  /** What the segment is, for findings: "the system prompt", "tools[3] (search)", "message 2 (user)". */
  readonly field: string;
  /** Role for messages, "tool" for tools: only segments of the same role are compared as variants. */
  readonly role: string;
  /** The text the template renders. */
  readonly text: string;
  /** A hash of `text` (equal texts, equal keys; different texts collide with probability ~2⁻⁶⁴). */
  readonly key: string;
}

/** Hash key of a text: two 32-bit lanes and the length. */
export function textKey(text: string): string {
  const [a, b] = seedLanes(text);
  return `${a.toString(36)}.${b.toString(36)}.${text.length.toString(36)}`;
}

function messageText(m: ChatMessage): string {
  const calls = m.tool_calls === undefined || m.tool_calls.length === 0 ? "" : m.tool_calls.map((c) => stableStringify(c)).join("\n");
  return calls === "" ? m.content : m.content === "" ? calls : `${m.content}\n${calls}`;
}

/** The segments of `body`, tools first. */
export function segmentsOf(body: ChatBody): Segment[] {
  const out: Segment[] = [];
  (body.tools ?? []).forEach((tool, index) => {
    const text = stableStringify(tool);
    out.push({ kind: "tool", index, field: `tools[${index}] (${tool.function.name})`, role: "tool", text, key: textKey(text) });
  });
  body.messages.forEach((m, index) => {
    const text = messageText(m);
    const field = index === 0 && m.role === "system" ? "the system prompt" : `message ${index} (${m.role})`;
    out.push({ kind: "message", index, field, role: m.role, text, key: textKey(text) });
  });
  return out;
}

/** A substitution inside a segment's text: `[at, at + length)` becomes `text`. */
export interface Substitution {
  readonly at: number;
  readonly length: number;
  readonly text: string;
}

/** A change to a request that would let it share the prefix its template shares with others. */
export type Fix =
  | { readonly kind: "value"; readonly finding: string; readonly segment: number; readonly subs: readonly Substitution[] }
  | { readonly kind: "order"; readonly finding: string; readonly from: number; readonly keys: readonly string[] };

/** `text` with `subs` (sorted by position, not overlapping) applied. */
export function substitute(text: string, subs: readonly Substitution[]): string {
  let out = "";
  let at = 0;
  for (const s of subs) {
    out += text.slice(at, s.at) + s.text;
    at = s.at + s.length;
  }
  return out + text.slice(at);
}

/**
 * `body` with `fixes` applied: a value fix rewrites a message's content or a tool (its JSON
 * re-parsed; a fix that does not parse is skipped), an order fix puts a run of tools or messages
 * in the order the fix names.
 */
export function applyFixes(body: ChatBody, segments: readonly Segment[], fixes: readonly Fix[]): ChatBody {
  if (fixes.length === 0) return body;
  const tools: ChatTool[] = [...(body.tools ?? [])];
  const messages: ChatMessage[] = [...body.messages];
  for (const fix of fixes) {
    if (fix.kind === "value") {
      const seg = segments[fix.segment]!;
      if (seg.kind === "message") {
        const m = messages[seg.index]!;
        // The content comes first in the segment's text; a change inside tool calls is not fixed here.
        if (fix.subs.some((sub) => sub.at + sub.length > m.content.length)) continue;
        messages[seg.index] = { ...m, content: substitute(m.content, fix.subs) };
      } else {
        try {
          tools[seg.index] = JSON.parse(substitute(seg.text, fix.subs)) as ChatTool;
        } catch {
          // A substitution that breaks the JSON is not a fix the application could make.
        }
      }
    } else {
      const window = segments.slice(fix.from, fix.from + fix.keys.length);
      const byKey = new Map(window.map((s) => [s.key, s]));
      const ordered = fix.keys.map((k) => byKey.get(k)!);
      const target = window[0]!.kind === "tool" ? tools : messages;
      const source = window[0]!.kind === "tool" ? [...(body.tools ?? [])] : [...body.messages];
      ordered.forEach((s, j) => {
        (target as unknown[])[window[j]!.index] = (source as unknown[])[s.index];
      });
    }
  }
  return { ...body, messages, ...(tools.length > 0 ? { tools } : {}) };
}

