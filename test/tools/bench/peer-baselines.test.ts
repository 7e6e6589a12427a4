import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { BENCH_STRATEGIES, type BenchRequest, type ChatMessage } from "prefix-router/bench";
import { canonicalize } from "prefix-router";
import { ApproximateTree } from "../../../tools/bench/baselines.js";
import type { Policy, PolicyDecision } from "../../../tools/bench/policies.js";
import { PEER_BASELINES, kubeaiPrefixHash, litellmAffinity, sglangCacheAware } from "../../../tools/bench/baselines.js";
import { policyByName } from "../../../tools/bench/registry.js";

const ids = ["i0", "i1", "i2", "i3", "i4", "i5", "i6"];

function context(clock = { t: 0 }) {
  return {
    targets: ids,
    prefixLength: 4096,
    concurrencyThreshold: 32,
    seed: 1,
    random: () => 0.5,
    clock: { now: () => clock.t },
  };
}

let n = 0;
function request(messages: ChatMessage[]): BenchRequest {
  return { id: `r${n++}`, arrivalMs: 0, outputTokens: 10, body: { model: "m", messages, max_tokens: 10 } };
}

const filler = (tag: string, chars: number) => `${tag} `.repeat(Math.ceil(chars / (tag.length + 1))).slice(0, chars);

/** Routes `reqs` keeping every lease open; returns the decisions. */
function hold(policy: Policy, reqs: BenchRequest[]): PolicyDecision[] {
  return reqs.map((r) => policy.route(r));
}

describe("peer baselines are registered as labelled models", () => {
  it("runs them by default after prefix-router's strategies, named peer:*", () => {
    expect(BENCH_STRATEGIES.slice(-3)).toEqual(["peer:litellm-affinity", "peer:kubeai-prefixhash", "peer:sglang-cache-aware"]);
    for (const p of PEER_BASELINES) {
      expect(policyByName(p.name)).toBe(p);
      expect(p.usesPrefixLength).toBe(false);
    }
  });
});

describe("peer:litellm-affinity", () => {
  it("pins on SHA-256 rendezvous of the first 8,192 canonical-JSON characters, whatever the load", async () => {
    const policy = await litellmAffinity.create(context());
    const doc = filler("shared", 9000);
    const decisions = hold(policy, Array.from({ length: 50 }, (_, i) => request([{ role: "user", content: `${doc} q${i}` }])));
    const expected = (() => {
      const prefix = canonicalize({ tools: null, messages: [{ role: "user", content: `${doc} q0` }] }).slice(0, 8192);
      const digest = createHash("sha256").update(prefix).digest("hex");
      let best = "";
      let score = -1n;
      for (const id of ids) {
        const s = createHash("sha256").update(digest).update(id).digest().readBigUInt64BE(0);
        if (s > score) [best, score] = [id, s];
      }
      return best;
    })();
    expect(new Set(decisions.map((d) => d.targetId))).toEqual(new Set([expected]));
    expect(decisions.some((d) => d.spilled)).toBe(false);
  });
});

describe("peer:kubeai-prefixhash", () => {
  it("keys on the first 100 characters of the first user message", async () => {
    const policy = await kubeaiPrefixHash.create(context());
    const start = filler("user", 100);
    const a = policy.route(request([{ role: "system", content: "one" }, { role: "user", content: `${start} tail A` }]));
    a.release();
    const b = policy.route(request([{ role: "system", content: "two" }, { role: "user", content: `${start} tail B` }]));
    expect(b.targetId).toBe(a.targetId);
  });

  it("bounds every endpoint at ⌈1.25 × mean in flight⌉ while one key floods it", async () => {
    const policy = await kubeaiPrefixHash.create(context());
    const open = hold(policy, Array.from({ length: 70 }, () => request([{ role: "user", content: "same question" }])));
    const counts = new Map<string, number>();
    for (const d of open) counts.set(d.targetId, (counts.get(d.targetId) ?? 0) + 1);
    for (const c of counts.values()) expect(c).toBeLessThanOrEqual(Math.ceil((1.25 * 70) / 7));
    expect(open.filter((d) => !d.spilled)).toHaveLength(Math.ceil((1.25 * 70) / 7));
  });
});

describe("peer:sglang-cache-aware", () => {
  it("follows a match above 0.5, else the smallest tree", async () => {
    const policy = await sglangCacheAware.create(context());
    const doc = filler("document", 4000);
    const first = policy.route(request([{ role: "user", content: `${doc} first question` }]));
    first.release();
    // Over half of the text matches the first worker's tree: it goes there.
    const again = policy.route(request([{ role: "user", content: `${doc} another question` }]));
    expect(again.targetId).toBe(first.targetId);
    again.release();
    // Less than half matches (a short shared start): the smallest tree, i.e. an empty worker.
    const other = policy.route(request([{ role: "user", content: `${doc.slice(0, 100)}${filler("other", 4000)}` }]));
    expect(other.targetId).not.toBe(first.targetId);
  });

  it("goes to the least loaded worker when max − min > 32 and max > 1.1 × min", async () => {
    const policy = await sglangCacheAware.create(context());
    const doc = filler("hot", 4000);
    const open = hold(policy, Array.from({ length: 40 }, (_, i) => request([{ role: "user", content: `${doc} q${i}` }])));
    const home = open[0]?.targetId;
    // 33 on one worker, 0 elsewhere: imbalanced from the 34th request on.
    expect(open.slice(0, 33).every((d) => d.targetId === home)).toBe(true);
    expect(open[33]?.targetId).not.toBe(home);
    expect(open[33]?.spilled).toBe(true);
  });

  it("keeps trees under the size cap intact across the 30 s eviction", async () => {
    const clock = { t: 0 };
    const policy = await sglangCacheAware.create(context(clock));
    const docs = Array.from({ length: 6 }, (_, i) => filler(`doc${i}`, 6000));
    const homes = docs.map((d, i) => {
      clock.t = i * 1000;
      const r = policy.route(request([{ role: "user", content: d }]));
      r.release();
      return r.targetId;
    });
    clock.t = 30_000;
    policy.route(request([{ role: "user", content: filler("trigger", 50) }])).release();
    // Every worker got one document (smallest tree each time): 6,000 characters, under the cap, kept.
    expect(new Set(homes).size).toBe(6);
    const back = policy.route(request([{ role: "user", content: `${docs[0]} more` }]));
    expect(back.targetId).toBe(homes[0]);
  });
});

describe("ApproximateTree", () => {
  it("matches the longest shared prefix and tracks characters per tenant", () => {
    const tree = new ApproximateTree();
    tree.insert("abcdef", "a", 1);
    tree.insert("abcxyz", "b", 2);
    expect(tree.match("abcdzz")).toEqual({ chars: 4, tenant: "a" });
    expect(tree.match("abcxy")).toEqual({ chars: 5, tenant: "b" });
    expect(tree.match("abq")).toEqual({ chars: 2, tenant: "b" }); // both hold "abc": the most recent
    expect(tree.match("zzz")).toEqual({ chars: 0, tenant: undefined });
    expect(tree.size.get("a")).toBe(6);
    expect(tree.size.get("b")).toBe(6);
  });

  it("evicts least recently used leaves down to the cap", () => {
    const tree = new ApproximateTree();
    tree.insert("xxxx1111", "a", 1);
    tree.insert("xxxx2222", "a", 2);
    tree.insert("yyyy3333", "a", 3);
    expect(tree.size.get("a")).toBe(20);
    tree.evict(16);
    expect(tree.size.get("a")).toBe(16);
    expect(tree.match("xxxx1111").chars).toBe(4); // the oldest leaf went first
    expect(tree.match("xxxx2222").chars).toBe(8);
    tree.remove("a");
    expect(tree.match("yyyy3333")).toEqual({ chars: 0, tenant: undefined });
  });
});
