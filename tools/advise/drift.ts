/**
 * Drift: where requests that should share a prefix diverge. The analyzer keeps a trie of the
 * prompts seen so far, one level per segment (tool or message, segments.ts); each request walks
 * it from the root:
 *
 * - a segment equal to a child's goes down that child;
 * - a segment that is a *variant* of one of the most frequent children's (variants.ts: the same
 *   text with a few short values changed) is a **value drift**: recorded, fixed in the request's
 *   copy, and the walk goes on down that child as if the request had sent it;
 * - a run of segments that is a *permutation* of the most frequent path below (same tools or
 *   messages, another order) is an **order drift**, recorded and fixed the same way;
 * - anything else is a real divergence (a new question, a new conversation): learning, the
 *   segment becomes a new child and the walk goes on; reading, the walk stops.
 *
 * The trie is bounded ({@link TRIE_LIMITS}): depth, nodes, stored text, candidates compared.
 * Requests walk it once to learn (pass 1: the findings and their counts) and once more to read
 * (pass 2: each request's fixes, against the final trie, for the counterfactual replays).
 */
import type { Fix, Segment } from "./segments.js";
import { variantOf } from "./variants.js";

/** Bounds of the trie. */
export const TRIE_LIMITS = {
  /** Segments walked per request. */
  depth: 48,
  /** Trie nodes kept. */
  nodes: 100_000,
  /** Characters of segment text kept (text is needed to compare variants). */
  chars: 32 * 1024 * 1024,
  /** Longest segment text kept, characters. */
  segmentChars: 256 * 1024,
  /** Most frequent children compared against a new segment. */
  candidates: 8,
  /** Longest run of segments compared for a permutation. */
  permutation: 32,
} as const;

interface Child {
  readonly key: string;
  readonly role: string;
  /** The segment's text, or undefined when it was not kept. */
  readonly text: string | undefined;
  count: number;
  readonly node: TrieNode;
}

interface TrieNode {
  readonly children: Map<string, Child>;
  /** The most frequent children, most frequent first (at most `candidates`). */
  readonly top: Child[];
}

/** One drift, aggregated over the requests it occurs in (pass 1). */
export interface DriftStats {
  /** Identity: kind, field and position. */
  readonly id: string;
  readonly kind: "value" | "order";
  /** Where: "the system prompt", "message 3 (user)", "tools[2] (search)", "the tools", "the messages". */
  readonly field: string;
  /** Character position in the field (value drift). */
  readonly position: number | undefined;
  /** Requests in which it occurs. */
  requests: number;
  /** Distinct values seen (at most 10,000 counted). */
  readonly values: Set<string>;
  /** A few (seen, expected) pairs. */
  readonly samples: { seen: string; expected: string }[];
  /** Σ characters after the drift that the request would otherwise share with its template. */
  blockedChars: number;
}

/** What one walk found. */
export interface Walk {
  readonly fixes: Fix[];
}

const newNode = (): TrieNode => ({ children: new Map(), top: [] });

/** The prompt trie and the drifts found in it; see the file header. */
export class DriftAnalyzer {
  private readonly root = newNode();
  private nodes = 1;
  private chars = 0;
  /** Drifts by id. */
  readonly drifts = new Map<string, DriftStats>();

  /** Walks `segments`, learning (inserting new segments, counting drifts) or only reading. */
  walk(segments: readonly Segment[], learn: boolean): Walk {
    const fixes: Fix[] = [];
    const found: { stats: DriftStats; segment: number; at: number }[] = [];
    const counted = new Set<string>();
    let node = this.root;
    let shared = segments.length;
    let i = 0;
    while (i < segments.length && i < TRIE_LIMITS.depth) {
      const seg = segments[i]!;
      const exact = node.children.get(seg.key);
      if (exact !== undefined) {
        if (learn) bump(node, exact);
        node = exact.node;
        i++;
        continue;
      }
      const value = this.valueDrift(node, seg);
      if (value !== undefined) {
        const stats = learn ? this.record("value", seg.field, value.variant.at, value.variant.seen, value.variant.expected, counted) : this.peek("value", seg.field, value.variant.at);
        fixes.push({ kind: "value", finding: stats?.id ?? "", segment: i, subs: value.variant.subs });
        if (stats !== undefined) found.push({ stats, segment: i, at: value.variant.at });
        if (learn) bump(node, value.child);
        node = value.child.node;
        i++;
        continue;
      }
      const order = orderDrift(node, segments, i);
      if (order !== undefined) {
        const field = orderField(segments, i);
        const stats = learn ? this.record("order", field, undefined, order.seen, order.expected, counted) : this.peek("order", field, undefined);
        fixes.push({ kind: "order", finding: stats?.id ?? "", from: i, keys: order.keys });
        if (stats !== undefined) found.push({ stats, segment: i, at: 0 });
        node = order.node;
        i += order.keys.length;
        continue;
      }
      if (!learn || this.nodes >= TRIE_LIMITS.nodes) {
        shared = i;
        break;
      }
      shared = Math.min(shared, i);
      node = this.insert(node, seg).node;
      i++;
    }
    if (learn) {
      // What each drift blocks: the rest of its segment and every later segment the template shares.
      for (const f of found) {
        let blocked = segments[f.segment]!.text.length - f.at;
        for (let j = f.segment + 1; j < shared; j++) blocked += segments[j]!.text.length;
        f.stats.blockedChars += blocked;
      }
    }
    return { fixes: fixes.filter((f) => f.finding !== "") };
  }

  private valueDrift(node: TrieNode, seg: Segment): { child: Child; variant: NonNullable<ReturnType<typeof variantOf>> } | undefined {
    for (const child of node.top) {
      if (child.role !== seg.role || child.text === undefined) continue;
      const variant = variantOf(seg.text, child.text);
      if (variant !== undefined) return { child, variant };
    }
    return undefined;
  }

  private insert(node: TrieNode, seg: Segment): Child {
    const keep = seg.text.length <= TRIE_LIMITS.segmentChars && this.chars + seg.text.length <= TRIE_LIMITS.chars;
    if (keep) this.chars += seg.text.length;
    const child: Child = { key: seg.key, role: seg.role, text: keep ? seg.text : undefined, count: 0, node: newNode() };
    node.children.set(seg.key, child);
    this.nodes++;
    bump(node, child);
    return child;
  }

  /** Counts a drift once per request (`counted`: the ids this request already counted). */
  private record(kind: "value" | "order", field: string, position: number | undefined, seen: string, expected: string, counted: Set<string>): DriftStats {
    const id = `${kind}|${field}|${position ?? ""}`;
    let stats = this.drifts.get(id);
    if (stats === undefined) {
      stats = { id, kind, field, position, requests: 0, values: new Set(), samples: [], blockedChars: 0 };
      this.drifts.set(id, stats);
    }
    if (!counted.has(id)) stats.requests++;
    counted.add(id);
    if (stats.values.size < 10_000) stats.values.add(seen);
    if (stats.samples.length < 3 && !stats.samples.some((s) => s.seen === seen)) stats.samples.push({ seen, expected });
    return stats;
  }

  private peek(kind: "value" | "order", field: string, position: number | undefined): DriftStats | undefined {
    return this.drifts.get(`${kind}|${field}|${position ?? ""}`);
  }
}

/** Counts a visit of `child` and keeps `node.top` ordered. */
function bump(node: TrieNode, child: Child): void {
  child.count++;
  const top = node.top;
  let at = top.indexOf(child);
  if (at === -1) {
    if (top.length < TRIE_LIMITS.candidates) at = top.push(child) - 1;
    else if (child.count > top[top.length - 1]!.count) at = (top[top.length - 1] = child, top.length - 1);
    else return;
  }
  while (at > 0 && top[at - 1]!.count < top[at]!.count) {
    [top[at - 1], top[at]] = [top[at]!, top[at - 1]!];
    at--;
  }
}

/**
 * A permutation drift at `segments[i]`: the shortest run of ≥ 2 segments, all tools or all
 * messages, that holds the same texts as the most frequent path below `node` through one of its
 * top children, in another order.
 */
function orderDrift(
  node: TrieNode,
  segments: readonly Segment[],
  i: number,
): { keys: string[]; node: TrieNode; seen: string; expected: string } | undefined {
  const kind = segments[i]!.kind;
  for (const first of node.top) {
    const diff = new Map<string, number>();
    let nonZero = 0;
    const add = (k: string, d: number) => {
      const v = (diff.get(k) ?? 0) + d;
      nonZero += v === 0 ? -1 : v === d ? 1 : 0;
      diff.set(k, v);
    };
    const path: Child[] = [];
    let child: Child | undefined = first;
    for (let m = 0; m < TRIE_LIMITS.permutation && child !== undefined && i + m < segments.length; m++) {
      const seg = segments[i + m]!;
      if (seg.kind !== kind) break;
      path.push(child);
      add(seg.key, 1);
      add(child.key, -1);
      if (m >= 1 && nonZero === 0) {
        const sent = segments.slice(i, i + m + 1);
        const label = (s: Segment) => (s.kind === "tool" ? s.field.replace(/^.*\((.*)\)$/, "$1") : `"${s.text.slice(0, 16)}…"`);
        return {
          keys: path.map((c) => c.key),
          node: child.node,
          seen: sent.map(label).join(", "),
          expected: path.map((c) => label(sent.find((s) => s.key === c.key)!)).join(", "),
        };
      }
      child = child.node.top[0];
    }
  }
  return undefined;
}

function orderField(segments: readonly Segment[], i: number): string {
  return segments[i]!.kind === "tool" ? "the tools" : "the messages";
}
