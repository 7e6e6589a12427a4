/**
 * Peer baselines: models of the routing algorithms other systems publish (LiteLLM, KubeAI,
 * SGLang), written against the benchmark's {@link Policy} interface so that they replay exactly
 * the same request sequences as prefix-router's strategies. They are *models* of the published
 * algorithms with their published defaults, not the systems themselves: no network hops, no
 * tokenizer of their own (the fleet's ≈4 characters per token), every router replica in one
 * process. Rows are named `peer:<system>-<algorithm>`.
 *
 * - `peer:litellm-affinity` — LiteLLM Router `prompt_prefix_affinity`: SHA-256 of the canonical
 *   JSON of tools + messages, first 2,048 tokens (8,192 characters), rendezvous (highest random
 *   weight, SHA-256 of digest + deployment id) over the deployments; a hard pin with no load
 *   guard and no spillover.
 * - `peer:kubeai-prefixhash` — KubeAI `PrefixHash`: xxHash64 of the first 100 characters of the
 *   first user message + the model (adapter), consistent hashing on a ring with 256 virtual nodes
 *   per endpoint, bounded load (Mirrokni et al., SODA 2018): walk the ring clockwise to the first
 *   endpoint whose in-flight count + 1 ≤ ⌈1.25 · (total in flight + 1) / n⌉.
 * - `peer:sglang-cache-aware` — SGLang model gateway `cache_aware`, library defaults: if
 *   max − min in-flight > 32 and max > 1.1 × min, the least loaded worker; otherwise the worker
 *   whose approximate radix tree matches the longest prefix of the request text if the match
 *   covers more than 0.5 of it, else the worker with the smallest tree. The text is inserted
 *   into the chosen worker's tree; every 30 s each worker's tree is trimmed to 2^24 characters
 *   (least recently used leaves first). Request text: prefix-router's text-mode routing input.
 *
 * Cost: LiteLLM O(prefix + n), KubeAI O(100 + log(256 n)) plus the walk, SGLang O(text) per
 * request plus its periodic eviction.
 */
import { createHash } from "node:crypto";
import xxhash from "xxhash-wasm";
import { EventHeap } from "../sim/event-heap.js";
import type { Policy, PolicyContext, PolicyDecision, PolicyFactory } from "./policies.js";
import type { BenchRequest } from "./workload.js";
import { canonicalize, routingInput } from "prefix-router";

/** In-flight counts per target id, with the release bookkeeping every baseline needs. */
class Loads {
  readonly inflight = new Map<string, number>();
  total = 0;

  constructor(ids: readonly string[]) {
    this.set(ids);
  }

  /** Keeps the counts of ids that stay (their requests still release), adds new ids at 0. */
  set(ids: readonly string[]): void {
    for (const id of ids) if (!this.inflight.has(id)) this.inflight.set(id, 0);
  }

  of(id: string): number {
    return this.inflight.get(id) ?? 0;
  }

  /** Counts a pick and returns its decision. */
  take(id: string, spilled: boolean, onRelease?: () => void): PolicyDecision {
    this.inflight.set(id, this.of(id) + 1);
    this.total++;
    let done = false;
    return {
      targetId: id,
      spilled,
      release: () => {
        if (done) return;
        done = true;
        this.inflight.set(id, this.of(id) - 1);
        this.total--;
        onRelease?.();
      },
    };
  }
}

// ---------------------------------------------------------------------------------------------
// LiteLLM prompt_prefix_affinity

/** Characters of canonical JSON LiteLLM's affinity key covers: 2,048 tokens at the fleet's 4 characters per token. */
export const LITELLM_PREFIX_CHARS = 2048 * 4;

/** Model of LiteLLM's `prompt_prefix_affinity` (see the file header). */
export const litellmAffinity: PolicyFactory = {
  name: "peer:litellm-affinity",
  usesPrefixLength: false,
  usesConcurrencyThreshold: false,
  async create(ctx: PolicyContext): Promise<Policy> {
    let ids = [...ctx.targets];
    const loads = new Loads(ids);
    return {
      route(request: BenchRequest): PolicyDecision {
        const body = request.body;
        const prefix = canonicalize({ tools: body.tools ?? null, messages: body.messages }).slice(0, LITELLM_PREFIX_CHARS);
        const digest = createHash("sha256").update(prefix).digest("hex");
        let best = ids[0] as string;
        let bestScore = -1n;
        for (const id of ids) {
          const score = createHash("sha256").update(digest).update(id).digest().readBigUInt64BE(0);
          if (score > bestScore) {
            best = id;
            bestScore = score;
          }
        }
        return loads.take(best, false);
      },
      setTargets(next) {
        ids = [...next];
        loads.set(ids);
      },
    };
  },
};

// ---------------------------------------------------------------------------------------------
// KubeAI PrefixHash (consistent hashing with bounded loads)

/** KubeAI's `PrefixHash` defaults. */
export const KUBEAI_DEFAULTS = Object.freeze({ prefixCharLength: 100, meanLoadPercentage: 125, replication: 256 });

/** Model of KubeAI's `PrefixHash` load balancing (see the file header). */
export const kubeaiPrefixHash: PolicyFactory = {
  name: "peer:kubeai-prefixhash",
  usesPrefixLength: false,
  usesConcurrencyThreshold: false,
  async create(ctx: PolicyContext): Promise<Policy> {
    const api = await xxhash();
    const seed = BigInt(ctx.seed);
    let ids = [...ctx.targets];
    const loads = new Loads(ids);
    let ring: { hash: bigint; id: string }[] = [];
    const build = () => {
      ring = [];
      for (const id of ids) {
        for (let r = 0; r < KUBEAI_DEFAULTS.replication; r++) ring.push({ hash: api.h64(`${id}#${r}`, seed), id });
      }
      ring.sort((a, b) => (a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : a.id < b.id ? -1 : 1));
    };
    build();
    return {
      route(request: BenchRequest): PolicyDecision {
        const user = request.body.messages.find((m) => m.role === "user")?.content ?? "";
        const key = api.h64(`${user.slice(0, KUBEAI_DEFAULTS.prefixCharLength)}\u0000${request.body.model}`, seed);
        // First ring position with hash ≥ key (binary search), wrapping around.
        let lo = 0;
        let hi = ring.length;
        while (lo < hi) {
          const mid = (lo + hi) >>> 1;
          if ((ring[mid] as { hash: bigint }).hash < key) lo = mid + 1;
          else hi = mid;
        }
        const cap = Math.ceil(((KUBEAI_DEFAULTS.meanLoadPercentage / 100) * (loads.total + 1)) / ids.length);
        const first = (ring[lo % ring.length] as { id: string }).id;
        for (let k = 0; k < ring.length; k++) {
          const id = (ring[(lo + k) % ring.length] as { id: string }).id;
          if (loads.of(id) + 1 <= cap) return loads.take(id, id !== first);
        }
        return loads.take(first, false); // unreachable: some endpoint is at or below the mean
      },
      setTargets(next) {
        ids = [...next];
        loads.set(ids);
        build();
      },
    };
  },
};

// ---------------------------------------------------------------------------------------------
// SGLang cache_aware

/**
 * SGLang cache-aware router defaults: match threshold 0.5 and balance thresholds 32 / 1.1,
 * eviction every 30 s (SGLang's published defaults); the tree holds up to 2^24 characters per
 * worker, sglang-router's `max_tree_size` default. (A "max tree" of 10k, as some summaries of
 * SGLang quote it, would trim each worker to 10,000 characters — about 2,500 tokens — and turn
 * the model into least-loaded routing on any long-context workload, which is not what SGLang
 * does.)
 */
export const SGLANG_DEFAULTS = Object.freeze({
  cacheThreshold: 0.5,
  balanceAbsThreshold: 32,
  balanceRelThreshold: 1.1,
  evictionIntervalMs: 30_000,
  maxTreeSize: 2 ** 24,
});

/** A node of the multi-tenant approximate radix tree: an edge label and who holds it, when. */
interface TreeNode {
  label: string;
  parent: TreeNode | undefined;
  children: Map<number, TreeNode>;
  /** Tenant (worker id) → last access time, ms. */
  tenants: Map<string, number>;
}

/**
 * SGLang's approximate tree: one character radix tree shared by all workers, each node knowing
 * which workers hold it; per-worker character counts drive eviction and the smallest-tree choice.
 * @internal
 */
export class ApproximateTree {
  readonly root: TreeNode = { label: "", parent: undefined, children: new Map(), tenants: new Map() };
  /** Characters held per tenant. */
  readonly size = new Map<string, number>();

  /** Longest prefix of `text` in the tree: matched characters and the most recent tenant holding it. */
  match(text: string): { chars: number; tenant: string | undefined } {
    let node = this.root;
    let at = 0;
    let tenant: string | undefined;
    for (;;) {
      const child = node.children.get(text.charCodeAt(at));
      if (child === undefined || at >= text.length) break;
      const common = commonPrefix(child.label, text, at);
      at += common;
      node = child;
      if (common < child.label.length) break;
    }
    let latest = Number.NEGATIVE_INFINITY;
    for (const [t, time] of node.tenants) {
      if (time > latest || (time === latest && tenant !== undefined && t < tenant)) {
        latest = time;
        tenant = t;
      }
    }
    return { chars: node === this.root ? 0 : at, tenant };
  }

  /** Inserts `text` for `tenant` at time `now`, splitting edges where it diverges. */
  insert(text: string, tenant: string, now: number): void {
    let node = this.root;
    let at = 0;
    while (at < text.length) {
      const c = text.charCodeAt(at);
      let child = node.children.get(c);
      if (child === undefined) {
        child = { label: text.slice(at), parent: node, children: new Map(), tenants: new Map() };
        node.children.set(c, child);
      } else {
        const common = commonPrefix(child.label, text, at);
        if (common < child.label.length) {
          // Split: the new middle node holds the common part and every tenant of the old edge.
          const middle: TreeNode = { label: child.label.slice(0, common), parent: node, children: new Map(), tenants: new Map(child.tenants) };
          child.label = child.label.slice(common);
          child.parent = middle;
          middle.children.set(child.label.charCodeAt(0), child);
          node.children.set(c, middle);
          child = middle;
        }
      }
      if (!child.tenants.has(tenant)) this.size.set(tenant, (this.size.get(tenant) ?? 0) + child.label.length);
      child.tenants.set(tenant, now);
      at += child.label.length;
      node = child;
    }
  }

  /** Trims every tenant to `max` characters, least recently used leaves first. */
  evict(max: number): void {
    for (const [tenant, size] of this.size) {
      if (size <= max) continue;
      const heap = new EventHeap<TreeNode>();
      let order = 0; // equal access times pop in the order they were queued
      const visit = (n: TreeNode) => {
        let leaf = true;
        for (const child of n.children.values()) {
          if (child.tenants.has(tenant)) {
            leaf = false;
            visit(child);
          }
        }
        if (leaf && n !== this.root) heap.push(n.tenants.get(tenant) as number, order++, n);
      };
      visit(this.root);
      let left = size;
      while (left > max && heap.size > 0) {
        const n = heap.pop() as TreeNode;
        n.tenants.delete(tenant);
        left -= n.label.length;
        const parent = n.parent;
        if (n.tenants.size === 0 && n.children.size === 0 && parent !== undefined) parent.children.delete(n.label.charCodeAt(0));
        if (parent !== undefined && parent !== this.root && ![...parent.children.values()].some((c) => c.tenants.has(tenant))) {
          heap.push(parent.tenants.get(tenant) as number, order++, parent);
        }
      }
      this.size.set(tenant, left);
    }
  }

  /** Forgets a tenant everywhere (a removed worker). */
  remove(tenant: string): void {
    const visit = (n: TreeNode) => {
      n.tenants.delete(tenant);
      for (const child of [...n.children.values()]) {
        visit(child);
        if (child.tenants.size === 0 && child.children.size === 0) n.children.delete(child.label.charCodeAt(0));
      }
    };
    visit(this.root);
    this.size.delete(tenant);
  }
}

function commonPrefix(label: string, text: string, at: number): number {
  const n = Math.min(label.length, text.length - at);
  let i = 0;
  while (i < n && label.charCodeAt(i) === text.charCodeAt(at + i)) i++;
  return i;
}

/** Model of SGLang's `cache_aware` policy with its library defaults (see the file header). */
export const sglangCacheAware: PolicyFactory = {
  name: "peer:sglang-cache-aware",
  usesPrefixLength: false,
  usesConcurrencyThreshold: false,
  async create(ctx: PolicyContext): Promise<Policy> {
    let ids = [...ctx.targets];
    const loads = new Loads(ids);
    const tree = new ApproximateTree();
    let nextEviction = ctx.clock.now() + SGLANG_DEFAULTS.evictionIntervalMs;
    return {
      route(request: BenchRequest): PolicyDecision {
        const now = ctx.clock.now();
        while (now >= nextEviction) {
          tree.evict(SGLANG_DEFAULTS.maxTreeSize);
          nextEviction += SGLANG_DEFAULTS.evictionIntervalMs;
        }
        const text = routingInput(request.body, { mode: "text", prefixLength: Number.MAX_SAFE_INTEGER / 2 });
        let min = ids[0] as string;
        let max = ids[0] as string;
        for (const id of ids) {
          if (loads.of(id) < loads.of(min)) min = id;
          if (loads.of(id) > loads.of(max)) max = id;
        }
        const imbalanced =
          loads.of(max) - loads.of(min) > SGLANG_DEFAULTS.balanceAbsThreshold &&
          loads.of(max) > SGLANG_DEFAULTS.balanceRelThreshold * loads.of(min);
        let pick: string;
        if (imbalanced) {
          pick = min;
        } else {
          const m = tree.match(text);
          if (m.tenant !== undefined && ids.includes(m.tenant) && m.chars / Math.max(1, text.length) > SGLANG_DEFAULTS.cacheThreshold) {
            pick = m.tenant;
          } else {
            pick = ids[0] as string;
            for (const id of ids) if ((tree.size.get(id) ?? 0) < (tree.size.get(pick) ?? 0)) pick = id;
          }
        }
        tree.insert(text, pick, now);
        return loads.take(pick, imbalanced);
      },
      setTargets(next) {
        for (const id of ids) if (!next.includes(id)) tree.remove(id);
        ids = [...next];
        loads.set(ids);
      },
    };
  },
};

/** The peer baselines, in the order the benchmark lists them. */
export const PEER_BASELINES: readonly PolicyFactory[] = [litellmAffinity, kubeaiPrefixHash, sglangCacheAware];
