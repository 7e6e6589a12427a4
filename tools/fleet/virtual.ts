/**
 * Virtual-time driver: N engines (engine.ts) advanced by one discrete-event loop, no sockets,
 * no timers. The loop keeps each instance's next event in a binary heap keyed by (model time,
 * instance creation order) and processes events strictly in that order, so a run is
 * reproducible: same options, same calls, same results. Cost per event is O(log instances)
 * plus the engine's step work (O(running requests)); tokenizing and hashing a prompt is one
 * linear pass at `submit`.
 */

import type { EngineConfig } from "./config.js";
import { Engine, type EngineStats, type VirtualResult } from "./engine.js";
import { FleetError } from "./errors.js";
import { EventHeap } from "../sim/event-heap.js";
import { createRandom } from "../sim/random.js";
import { blockKeys, countTokens, emulatedTokens, tokenBlockKeys } from "./tokenizer.js";
import type { WireEvent } from "./kv-events/publisher.js";
import { cacheNamespace } from "./cache-salt.js";

/** A request for the virtual fleet: already-rendered prompt text (see `renderPrompt`). */
export interface VirtualRequest {
  /** Echoed in the result. */
  id: string | number;
  /** The rendered prompt text; tokenized with `countTokens`, hashed per 16-token block. */
  prompt: string;
  /** Tokens to generate (≥ 1). */
  outputTokens: number;
  /** Model name; caches are separate per model. @default "" */
  model?: string;
  /** vLLM's `cache_salt`: caches are separate per salt within a model. @default undefined */
  cacheSalt?: string;
}

/** Callbacks of {@link VirtualFleet.submit}, run from inside `advanceTo`/`runUntilIdle`. */
export interface VirtualCallbacks {
  /** Admitted by the instance's scheduler, with its cache hit. */
  onAdmit?(tMs: number, cachedTokens: number, queueMs: number): void;
  /** First token produced. */
  onFirstToken?(tMs: number): void;
  /** Last token produced. */
  onDone(result: VirtualResult): void;
}

/** Per-instance counters of a virtual or live fleet. */
export interface InstanceStats {
  /** Requests accepted. */
  requests: number;
  /** Requests finished. */
  completed: number;
  /** Prompt tokens of admitted requests (vLLM's `prefix_cache_queries`). */
  promptTokens: number;
  /** Of which served from the prefix cache (vLLM's `prefix_cache_hits`). */
  cachedTokens: number;
  /** Requests in the running batch. */
  running: number;
  /** Requests not yet admitted. */
  waiting: number;
  /** Prompt tokens of the requests not yet admitted that the prefix cache did not hold when they arrived. */
  waitingUncachedTokens: number;
  /** Fraction of KV blocks in use, 0..1. */
  kvUsage: number;
  /** True after `removeInstance` while requests are still finishing. */
  draining: boolean;
}

/** Options of {@link VirtualFleet}. */
export interface VirtualFleetOptions {
  /** Number of instances (ids `i0`, `i1`, ...) or their ids. */
  instances: number | readonly string[];
  /** Engine parameters for every instance; missing ones take `DEFAULT_ENGINE_CONFIG`. */
  engine?: Partial<EngineConfig>;
  /** Per-instance overrides, applied over `engine`. */
  instanceEngine?: Readonly<Record<string, Partial<EngineConfig>>>;
  /** Seed of the random source (only used by `stepJitter`). @default 0 */
  seed?: number;
  /**
   * Receives each instance's KV events, in vLLM's shapes, with the virtual time they happened at
   * (see docs/fleet.md): a bench can deliver them to a router with a modelled lag. Requests are
   * then tokenized with `tokenize`. @default none
   */
  kvEvents?: (instance: string, event: WireEvent, atMs: number) => void;
  /**
   * How prompts are tokenized when `kvEvents` is set (the events carry the token ids; the cache
   * hashes them). @default emulatedTokens (the 4-characters model, as ids) with `kvEvents`; without, the 4-characters model
   */
  tokenize?: (text: string) => readonly number[];
}

interface Entry {
  readonly id: string;
  readonly engine: Engine;
  readonly order: number;
  removed: boolean;
  queuedAt: number;
  /** Time until which the instance refuses requests (restarting). */
  downUntil: number;
}

/** Default instance ids: `i0`, `i1`, ... */
export function defaultInstanceIds(count: number): string[] {
  if (!Number.isSafeInteger(count) || count < 1 || count > 4096) {
    throw new FleetError("INVALID_ARGUMENT", `Expected \`instances\` to be an integer from 1 to 4096, got ${String(count)}`);
  }
  return Array.from({ length: count }, (_, i) => `i${i}`);
}

/**
 * A fleet of emulated instances in virtual time.
 * @example
 * const fleet = new VirtualFleet({ instances: 7 });
 * for (const r of trace) {
 *   fleet.advanceTo(r.arrivalMs);           // completions before this arrival fire first
 *   fleet.submit(pick(r), r, { onDone: (res) => results.push(res) });
 * }
 * fleet.runUntilIdle();
 */
export class VirtualFleet {
  private readonly entries = new Map<string, Entry>();
  private readonly heap = new EventHeap<Entry>();
  private readonly engineDefaults: Partial<EngineConfig> | undefined;
  private readonly instanceEngine: Readonly<Record<string, Partial<EngineConfig>>>;
  private readonly seed: number;
  private readonly kvEvents: VirtualFleetOptions["kvEvents"];
  private readonly tokenize: VirtualFleetOptions["tokenize"];
  private nextOrder = 0;
  private nowMs = 0;
  private dispatching = false;

  constructor(options: VirtualFleetOptions) {
    this.engineDefaults = options.engine;
    this.instanceEngine = options.instanceEngine ?? {};
    this.seed = options.seed ?? 0;
    if (options.kvEvents !== undefined && typeof options.kvEvents !== "function") throw new FleetError("INVALID_ARGUMENT", "Expected `kvEvents` to be a function");
    if (options.tokenize !== undefined && typeof options.tokenize !== "function") throw new FleetError("INVALID_ARGUMENT", "Expected `tokenize` to be a function");
    this.kvEvents = options.kvEvents;
    this.tokenize = options.tokenize ?? (options.kvEvents === undefined ? undefined : emulatedTokens);
    const ids = typeof options.instances === "number" ? defaultInstanceIds(options.instances) : [...options.instances];
    if (ids.length === 0) throw new FleetError("INVALID_ARGUMENT", "Expected `instances` to name at least one instance");
    for (const id of ids) this.addInstance(id);
  }

  /** Current virtual time, ms. */
  get now(): number {
    return this.nowMs;
  }

  /** Ids of the instances that accept requests, in creation order. */
  instanceIds(): string[] {
    const out: string[] = [];
    for (const e of this.entries.values()) if (!e.removed) out.push(e.id);
    return out;
  }

  /**
   * Adds an instance with an empty cache.
   * @throws FleetError `DUPLICATE_INSTANCE` when the id exists (even while draining)
   */
  addInstance(id: string, engine?: Partial<EngineConfig>): void {
    if (typeof id !== "string" || id.length === 0) {
      throw new FleetError("INVALID_ARGUMENT", `Expected an instance id to be a non-empty string, got ${String(id)}`);
    }
    if (this.entries.has(id)) throw new FleetError("DUPLICATE_INSTANCE", `Instance \`${id}\` already exists`);
    const order = this.nextOrder++;
    const sink = this.kvEvents;
    const e: Engine = new Engine({
      id,
      config: { ...this.engineDefaults, ...this.instanceEngine[id], ...engine },
      random: createRandom((this.seed ^ Math.imul(order + 1, 0x9e3779b1)) >>> 0),
      kvEvents: sink === undefined ? undefined : (event) => sink(id, event, e.now),
    });
    this.entries.set(id, { id, engine: e, order, removed: false, queuedAt: Number.NaN, downUntil: Number.NEGATIVE_INFINITY });
  }

  /**
   * Stops sending requests to an instance: `submit` to it throws `INSTANCE_REMOVED`, its
   * admitted and queued requests finish, then it and its cache are gone.
   */
  removeInstance(id: string): void {
    const e = this.entry(id);
    e.removed = true;
    if (e.engine.isIdle()) this.entries.delete(id);
  }

  /**
   * Restarts an instance now, under the same id: its prefix cache is emptied (requests already
   * admitted finish, as in a rolling restart that drains them); for `downMs` after now it refuses
   * new requests (`submit` throws `INSTANCE_DOWN`, as a refused connection), then serves again,
   * cold. A router that is not told sees only refusals and, later, the `cached_tokens` it gets back.
   */
  restartInstance(id: string, downMs = 0): void {
    if (!(typeof downMs === "number" && downMs >= 0 && Number.isFinite(downMs))) {
      throw new FleetError("INVALID_ARGUMENT", `Expected \`downMs\` to be a finite number ≥ 0, got ${String(downMs)}`);
    }
    const e = this.entry(id);
    e.engine.restart();
    e.downUntil = this.nowMs + downMs;
  }

  /** Multiplies an instance's step times and frontend overhead by `factor` from now on. */
  setSlowdown(id: string, factor: number): void {
    this.entry(id).engine.setSlowdown(factor);
  }

  /**
   * Submits a request to an instance; it arrives at `now`. May be called from callbacks.
   * @throws FleetError `UNKNOWN_INSTANCE`, `INSTANCE_REMOVED`, `INSTANCE_DOWN`, `INVALID_REQUEST`, `PROMPT_TOO_LONG`
   */
  submit(instanceId: string, req: VirtualRequest, callbacks: VirtualCallbacks): void {
    const e = this.entry(instanceId);
    if (e.removed) throw new FleetError("INSTANCE_REMOVED", `Instance \`${instanceId}\` was removed`);
    if (this.nowMs < e.downUntil) throw new FleetError("INSTANCE_DOWN", `Instance \`${instanceId}\` is restarting until ${e.downUntil} ms`);
    if (typeof req.prompt !== "string") throw new FleetError("INVALID_REQUEST", "Expected `prompt` to be a string");
    const namespace = cacheNamespace(req.model ?? "", req.cacheSalt);
    const tokenIds = this.tokenize?.(req.prompt);
    e.engine.enqueue(
      tokenIds === undefined
        ? {
            id: req.id,
            promptTokens: countTokens(req.prompt),
            blockKeys: blockKeys(req.prompt, e.engine.config.blockSizeTokens, namespace),
            outputTokens: req.outputTokens,
          }
        : {
            id: req.id,
            promptTokens: Math.max(1, tokenIds.length),
            blockKeys: tokenBlockKeys(tokenIds, e.engine.config.blockSizeTokens, namespace),
            outputTokens: req.outputTokens,
            tokenIds,
            cacheSalt: req.cacheSalt,
          },
      callbacks,
      this.nowMs,
    );
    this.schedule(e);
  }

  /**
   * Processes every event up to `tMs` in time order (ties: instance creation order), firing
   * callbacks, then sets `now` to `tMs`.
   * @throws FleetError `INVALID_TIME` when `tMs < now` or when called from a callback
   */
  advanceTo(tMs: number): void {
    if (this.dispatching) throw new FleetError("INVALID_TIME", "advanceTo/runUntilIdle cannot be called from a callback");
    if (!(tMs >= this.nowMs)) throw new FleetError("INVALID_TIME", `Expected a time ≥ now (${this.nowMs}), got ${String(tMs)}`);
    this.run(tMs);
    this.nowMs = tMs;
  }

  /** Processes events until every instance is idle; `now` ends at the last event. */
  runUntilIdle(): void {
    if (this.dispatching) throw new FleetError("INVALID_TIME", "advanceTo/runUntilIdle cannot be called from a callback");
    this.run(Infinity);
  }

  /** Time of the next event, or `Infinity` when every instance is idle. */
  nextEventMs(): number {
    for (;;) {
      const t = this.heap.peekTime();
      if (t === Infinity) return t;
      const e = this.heap.pop()!;
      if (e.queuedAt === t) e.queuedAt = Number.NaN;
      if (this.entries.get(e.id) === e && e.engine.nextEventMs() === t) {
        this.heap.push(t, e.order, e);
        e.queuedAt = t;
        return t;
      }
      if (this.entries.get(e.id) === e) this.schedule(e);
    }
  }

  /** Counters per instance, including draining ones. */
  instanceStats(): Record<string, InstanceStats> {
    const out: Record<string, InstanceStats> = {};
    for (const e of this.entries.values()) out[e.id] = toInstanceStats(e.engine.stats(), e.removed);
    return out;
  }

  /** The engine of an instance, for diagnostics (its TTFT histogram, its KV cache). */
  engine(id: string): Engine {
    return this.entry(id).engine;
  }

  private entry(id: string): Entry {
    const e = this.entries.get(id);
    if (e === undefined) throw new FleetError("UNKNOWN_INSTANCE", `No instance \`${id}\``);
    return e;
  }

  private schedule(e: Entry): void {
    const t = e.engine.nextEventMs();
    if (t === Infinity || t === e.queuedAt) return;
    e.queuedAt = t;
    this.heap.push(t, e.order, e);
  }

  private run(limit: number): void {
    while (this.heap.size > 0 && this.heap.peekTime() <= limit) {
      const t = this.heap.peekTime();
      const e = this.heap.pop()!;
      if (e.queuedAt === t) e.queuedAt = Number.NaN;
      if (this.entries.get(e.id) !== e || e.engine.nextEventMs() !== t) {
        if (this.entries.get(e.id) === e) this.schedule(e);
        continue;
      }
      this.nowMs = t;
      this.dispatching = true;
      try {
        e.engine.processNext();
      } finally {
        this.dispatching = false;
      }
      this.schedule(e);
      if (e.removed && e.engine.isIdle()) this.entries.delete(e.id);
    }
  }
}

/** @internal */
export function toInstanceStats(s: EngineStats, draining: boolean): InstanceStats {
  return {
    requests: s.requests,
    completed: s.completed,
    promptTokens: s.promptTokens,
    cachedTokens: s.cachedTokens,
    running: s.running,
    waiting: s.waiting,
    waitingUncachedTokens: s.waitingUncachedTokens ?? 0,
    kvUsage: s.kvUsage,
    draining,
  };
}
