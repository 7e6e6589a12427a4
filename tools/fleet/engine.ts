/**
 * One emulated vLLM instance as a discrete-event state machine: the scheduler of vLLM V1
 * (continuous batching, chunked prefill, FCFS admission) over the paged prefix cache of
 * kv-cache.ts, with step times from cost-model.ts.
 *
 * Life of a request: `enqueue` at time t → ready for the scheduler at t + frontendOverheadMs
 * ("pending") → waits in FCFS order until a step starts with a free sequence slot
 * (`maxNumSeqs`), token budget and KV blocks for prompt + output ("waiting") → admitted: the
 * prefix cache is looked up (the hit counts as `cachedTokens` and in
 * `vllm:prefix_cache_hits`), its blocks are allocated → prefill chunks, one per step, until the
 * prompt is computed; the step that completes it emits the first token → one token per step
 * → done, blocks released to the LRU free queue.
 *
 * Each step: running requests first (a decode token each, or their next prefill chunk), then
 * admissions while the budget lasts; the step's duration is fixed when it starts, and requests
 * that become ready meanwhile wait for the next step (as in vLLM's engine loop). Output blocks
 * are reserved at admission, so there is no preemption.
 *
 * Slot mode (`slots` = K ≥ 1), llama.cpp's cache instead of vLLM's: K slots, each holding the
 * block keys of the prompt it last ran. At most K requests run; an admission takes the idle slot
 * llama-server's `get_available_slot` would (`chooseSlot` of llama/slots.ts, comparing block keys:
 * the longest common prefix as a fraction of the prompt's full blocks above
 * `slotPromptSimilarity`, else the least recently released) and reuses min(common blocks × block
 * size, prompt − 1) tokens; the FCFS waiting queue is llama-server's. A busy slot is never shared:
 * a second request for a prompt running in one slot starts cold in another. Steps batch the busy
 * slots as llama-server does, with the same cost model. Reuse is counted in whole blocks (one
 * token blocks, `blockSizeTokens: 1`, count as llama.cpp does) and a slot keeps its prompt, not
 * its output.
 *
 * KV events (`kvEvents`, for requests that carry `tokenIds`): the paged mode publishes its cache's
 * (kv-cache.ts's observer: `BlockStored` when blocks are cached at allocation, `BlockRemoved` on
 * eviction). Slot mode publishes what its slots hold (kv-events/slot-blocks.ts), as the llama
 * fleet does: at admission the chosen slot's replaced blocks are removed and the prompt's stored
 * (a block is stored when its first holder slot takes it, removed when its last holder drops it),
 * in 16-token blocks when the slot's block divides 16; a cancelled prefill removes what was
 * never computed. Both publish `AllBlocksCleared` on a restart.
 *
 * The engine never reads a clock: the caller advances it to a time (`advanceTo`), virtual.ts
 * from a discrete-event loop, live.ts from timers scaled by `timeScale`. Same code, same times.
 */

import { resolveEngineConfig, type EngineConfig } from "./config.js";
import { decodeTokenMs, prefillChunkMs } from "./cost-model.js";
import { FleetError } from "./errors.js";
import { Histogram, TTFT_BUCKETS_SECONDS } from "./histogram.js";
import { KvCache } from "./kv-cache.js";
import type { WireEvent } from "./kv-events/publisher.js";
import { SlotBlockPublisher } from "./kv-events/slot-blocks.js";
import { type SlotView, chooseSlot } from "./llama/slots.js";
import { createRandom, type RandomSource } from "../sim/random.js";

/** What the engine needs of a request: the tokenized prompt, not its text. */
export interface EngineRequest {
  /** Caller's id, echoed in the result. */
  id: string | number;
  /** Prompt length in tokens (≥ 1). */
  promptTokens: number;
  /** Chained keys of the prompt's full blocks (tokenizer.ts `blockKeys`). */
  blockKeys: Float64Array;
  /** Tokens to generate (≥ 1). */
  outputTokens: number;
  /** The prompt's token ids, when the engine publishes KV events (`BlockStored` carries them). */
  tokenIds?: readonly number[];
  /** The request's `cache_salt`, published in the first block's `extra_keys` as vLLM does. */
  cacheSalt?: string;
  /** The adapter's name when the request names a model other than the instance's base one. */
  loraName?: string;
}

/** Timings and cache accounting of one finished request. Times are model ms. */
export interface VirtualResult {
  /** The request's id. */
  id: string | number;
  /** Instance that served it. */
  instance: string;
  /** When it was submitted. */
  arrivalMs: number;
  /** When its first token was produced (TTFT = firstTokenMs − arrivalMs). */
  firstTokenMs: number;
  /** When its last token was produced. */
  finishMs: number;
  /** Time spent ready but not admitted (after the frontend overhead, before the first step). */
  queueMs: number;
  /** Prompt tokens. */
  promptTokens: number;
  /** Prompt tokens served from the prefix cache (a multiple of the block size). */
  cachedTokens: number;
  /** Generated tokens. */
  outputTokens: number;
}

/** Callbacks of one request; each runs once, in the order listed, at the model time given. */
export interface EngineCallbacks {
  /** Admitted by the scheduler; `cachedTokens` is final from here on; `queueMs` as in the result. */
  onAdmit?(tMs: number, cachedTokens: number, queueMs: number): void;
  /** The first token was produced. */
  onFirstToken?(tMs: number): void;
  /** A token was produced (the first one too); `generated` counts tokens so far. */
  onToken?(tMs: number, generated: number): void;
  /** The last token was produced. */
  onDone(result: VirtualResult): void;
}

/** Handle of an enqueued request. */
export interface EngineTicket {
  /** Aborts the request (client gone); its blocks are released. Returns false if it already finished. */
  cancel(): boolean;
}

/** Counters and gauges of one instance. */
export interface EngineStats {
  /** Requests accepted by `enqueue`. */
  requests: number;
  /** Requests finished. */
  completed: number;
  /** Requests cancelled. */
  aborted: number;
  /** Prompt tokens of admitted requests (vLLM's `prefix_cache_queries`). */
  promptTokens: number;
  /** Of which served from the prefix cache (vLLM's `prefix_cache_hits`). */
  cachedTokens: number;
  /** Tokens generated. */
  generationTokens: number;
  /** Requests in the running batch. */
  running: number;
  /** Requests not yet admitted (in the frontend or the waiting queue). */
  waiting: number;
  /** Prompt tokens of the requests not yet admitted (vLLM's proposed `vllm:num_tokens_waiting`); absent when the engine cannot tell. */
  waitingTokens?: number;
  /**
   * Of those, the tokens the prefix cache did not hold when each request arrived (vLLM's proposed
   * `vllm:approximate_uncached_tokens_waiting`, SGLang's `num_waiting_uncached_tokens`); absent
   * when the engine cannot tell.
   */
  waitingUncachedTokens?: number;
  /** Fraction of KV blocks used by running requests, 0..1. */
  kvUsage: number;
}

const PENDING = 0;
const WAITING = 1;
const RUNNING = 2;
const FINISHED = 3;
const ABORTED = 4;

interface Seq {
  readonly req: EngineRequest;
  readonly cb: EngineCallbacks;
  readonly arrivalMs: number;
  readyAt: number;
  state: number;
  admittedAt: number;
  cached: number;
  computed: number;
  generated: number;
  chunk: number;
  firstTokenMs: number;
  blocks: Int32Array | null;
  /** Slot mode: the slot it runs in, −1 if none. */
  slot: number;
  /** Prompt tokens the cache did not hold at arrival: counted in `waitingUncachedTokens` until admission. */
  uncachedAtArrival: number;
}

/** One llama.cpp slot (slot mode): the block keys it holds, whether it runs a request, when it was last released. */
interface EngineSlot extends SlotView {
  tokens: Float64Array;
  busy: boolean;
  lastUsed: number;
}

const NO_KEYS = new Float64Array(0);

const EV_ADMIT = 0;
const EV_TOKEN = 1;
const EV_DONE = 2;

/** Options of {@link Engine}. */
export interface EngineOptions {
  /** Instance id reported in results. */
  id: string;
  /** Parameters; missing ones take {@link DEFAULT_ENGINE_CONFIG}. */
  config?: Partial<EngineConfig>;
  /** Random source for `stepJitter`. @default createRandom(0) */
  random?: RandomSource;
  /**
   * Receives the cache's KV events, in vLLM's shapes, as they happen: `BlockStored` when
   * blocks are cached (for requests that carry `tokenIds`), `BlockRemoved` when one is evicted,
   * `AllBlocksCleared` on a restart. In slot mode, what the slots hold (see the file header;
   * blocks of `kvEventBlockSize(config)` tokens). @default none
   */
  kvEvents?: (event: WireEvent) => void;
}

/** One emulated instance; see the file header. */
export class Engine {
  readonly id: string;
  readonly config: EngineConfig;
  private readonly cache: KvCache;
  /** The request whose blocks `cache.allocate` is taking (its tokens go into `BlockStored`). */
  private allocating: EngineRequest | undefined;
  /** Slot mode with `kvEvents`: the slots' blocks as events. */
  private readonly slotEvents: SlotBlockPublisher | undefined;
  private readonly random: RandomSource;
  private readonly ttft = new Histogram(TTFT_BUCKETS_SECONDS);
  private pending: Seq[] = [];
  private waiting: Seq[] = [];
  private waitingHead = 0;
  private running: Seq[] = [];
  private inStep = false;
  private stepEnd = Infinity;
  private slowdownFactor = 1;
  private restartCount = 0;
  private nowMs = 0;
  private counters = { requests: 0, completed: 0, aborted: 0, promptTokens: 0, cachedTokens: 0, generationTokens: 0 };
  /** Slot mode: the slots (empty in paged mode). */
  private readonly slotList: EngineSlot[];
  private slotReleases = 0;
  /** Prompt tokens, and uncached ones at arrival, of the requests not yet admitted. */
  private queuedTokens = 0;
  private queuedUncachedTokens = 0;

  constructor(options: EngineOptions) {
    this.id = options.id;
    this.config = resolveEngineConfig(options.config);
    this.cache = new KvCache(this.config.slots > 0 ? 1 : this.config.numGpuBlocks, this.config.blockSizeTokens);
    const emit = options.kvEvents;
    if (emit !== undefined && this.config.slots === 0) {
      const bs = this.config.blockSizeTokens;
      this.cache.observer = {
        stored: (keys, from, to) => {
          const req = this.allocating;
          if (req?.tokenIds === undefined || req.tokenIds.length < to * bs) return;
          const salt = req.cacheSalt;
          emit({
            type: "BlockStored",
            block_hashes: Array.from(keys.subarray(from, to), (k) => BigInt(k)),
            parent_block_hash: from > 0 ? BigInt(keys[from - 1]!) : null,
            token_ids: req.tokenIds.slice(from * bs, to * bs),
            block_size: bs,
            lora_id: null,
            medium: "GPU",
            lora_name: req.loraName ?? null,
            extra_keys: salt === undefined ? null : Array.from({ length: to - from }, (_, i) => (from + i === 0 ? [salt] : null)),
          });
        },
        removed: (key) => emit({ type: "BlockRemoved", block_hashes: [BigInt(key)], medium: "GPU" }),
        cleared: () => emit({ type: "AllBlocksCleared" }),
      };
    }
    this.slotEvents = emit !== undefined && this.config.slots > 0 ? new SlotBlockPublisher(this.config.slots, this.config.blockSizeTokens, emit) : undefined;
    this.random = options.random ?? createRandom(0);
    this.slotList = Array.from({ length: this.config.slots }, () => ({ tokens: NO_KEYS, busy: false, lastUsed: -1 }));
  }

  /** Slot mode: the block keys each slot holds (diagnostics and tests); empty in paged mode. */
  slotKeys(): readonly Float64Array[] {
    return this.slotList.map((s) => s.tokens);
  }

  /** Model time of the last processed event or `advanceTo`. */
  get now(): number {
    return this.nowMs;
  }

  /** Current slowdown factor (multiplies step durations and the frontend overhead). */
  get slowdown(): number {
    return this.slowdownFactor;
  }

  /** Sets the slowdown factor (> 0) for steps and requests that start from now on. */
  setSlowdown(factor: number): void {
    if (!(typeof factor === "number" && Number.isFinite(factor) && factor > 0)) {
      throw new FleetError("INVALID_ARGUMENT", `Expected \`slowdown\` to be a finite number > 0, got ${String(factor)}`);
    }
    this.slowdownFactor = factor;
  }

  /**
   * Restarts the engine as a rolling restart does, in an instant: its prefix cache is emptied, so
   * every request from now on starts cold; requests already admitted finish (their blocks stay
   * theirs). Counters are kept. `restarts` counts the calls.
   */
  restart(): void {
    this.cache.clear();
    for (const slot of this.slotList) slot.tokens = NO_KEYS;
    this.slotEvents?.clear();
    this.restartCount++;
  }

  /** Times {@link restart} was called. */
  get restarts(): number {
    return this.restartCount;
  }

  /**
   * Accepts a request arriving at `tMs` (≥ the last processed event). Callbacks run from
   * inside later `advanceTo`/`processNext` calls, never from here.
   * @throws FleetError `INVALID_REQUEST` / `PROMPT_TOO_LONG`
   */
  enqueue(req: EngineRequest, cb: EngineCallbacks, tMs: number): EngineTicket {
    const { promptTokens, outputTokens } = req;
    if (!Number.isSafeInteger(promptTokens) || promptTokens < 1) {
      throw new FleetError("INVALID_REQUEST", `Expected \`promptTokens\` to be an integer ≥ 1, got ${String(promptTokens)}`);
    }
    if (!Number.isSafeInteger(outputTokens) || outputTokens < 1) {
      throw new FleetError("INVALID_REQUEST", `Expected \`outputTokens\` to be an integer ≥ 1, got ${String(outputTokens)}`);
    }
    const total = promptTokens + outputTokens;
    if (total > this.config.maxModelLen) {
      throw new FleetError(
        "PROMPT_TOO_LONG",
        `This model's maximum context length is ${this.config.maxModelLen} tokens, but ${promptTokens} prompt + ${outputTokens} output tokens were requested`,
      );
    }
    if (this.config.slots === 0 && Math.ceil(total / this.config.blockSizeTokens) > this.config.numGpuBlocks) {
      throw new FleetError("PROMPT_TOO_LONG", `${total} tokens do not fit in the KV cache (${this.config.numGpuBlocks} blocks)`);
    }
    const arrival = Math.max(tMs, this.nowMs);
    const seq: Seq = {
      req,
      cb,
      arrivalMs: arrival,
      readyAt: arrival + this.config.frontendOverheadMs * this.slowdownFactor,
      state: PENDING,
      admittedAt: Number.NaN,
      cached: 0,
      computed: 0,
      generated: 0,
      chunk: 0,
      firstTokenMs: Number.NaN,
      blocks: null,
      slot: -1,
      // Looked up once, at arrival, as vLLM's proposed gauge does: blocks cached meanwhile still count.
      uncachedAtArrival: promptTokens - this.cache.lookup(req.blockKeys, promptTokens) * this.config.blockSizeTokens,
    };
    this.queuedTokens += promptTokens;
    this.queuedUncachedTokens += seq.uncachedAtArrival;
    // Keep `pending` sorted by readyAt (equal times in arrival order); usually an append.
    let i = this.pending.length;
    while (i > 0 && this.pending[i - 1]!.readyAt > seq.readyAt) i--;
    this.pending.splice(i, 0, seq);
    this.counters.requests++;
    return { cancel: () => this.cancel(seq) };
  }

  /** Model time of the next event, or `Infinity` when idle. */
  nextEventMs(): number {
    if (this.inStep) return this.stepEnd;
    const p = this.pending[0];
    return p === undefined ? Infinity : p.readyAt;
  }

  /** True when no request is pending, waiting or running. */
  isIdle(): boolean {
    return !this.inStep && this.pending.length === 0 && this.waiting.length === this.waitingHead && this.running.length === 0;
  }

  /** Processes every event at or before `tMs`, in time order, then sets `now` to `tMs`. */
  advanceTo(tMs: number): void {
    while (this.nextEventMs() <= tMs) this.processNext();
    if (tMs > this.nowMs) this.nowMs = tMs;
  }

  /** Processes the next event (a step end and/or requests becoming ready) and runs its callbacks. */
  processNext(): void {
    const t = this.nextEventMs();
    if (t === Infinity) return;
    this.nowMs = t;
    const kinds: number[] = [];
    const seqs: Seq[] = [];
    if (this.inStep) this.finishStep(t, kinds, seqs);
    while (this.pending.length > 0 && this.pending[0]!.readyAt <= t) {
      const s = this.pending.shift()!;
      s.state = WAITING;
      this.waiting.push(s);
    }
    if (this.running.length > 0 || this.waiting.length > this.waitingHead) this.startStep(t, kinds, seqs);
    for (let i = 0; i < kinds.length; i++) {
      const s = seqs[i]!;
      const kind = kinds[i]!;
      if (kind === EV_ADMIT) s.cb.onAdmit?.(s.admittedAt, s.cached, s.admittedAt - s.readyAt);
      else if (kind === EV_TOKEN) {
        if (s.generated === 1) s.cb.onFirstToken?.(s.firstTokenMs);
        s.cb.onToken?.(t, s.generated);
      } else s.cb.onDone(this.result(s, t));
    }
  }

  /** Counters and gauges now. */
  stats(): EngineStats {
    return {
      ...this.counters,
      running: this.running.length,
      waiting: this.pending.length + this.waiting.length - this.waitingHead,
      waitingTokens: this.queuedTokens,
      waitingUncachedTokens: this.queuedUncachedTokens,
      kvUsage: this.slotList.length > 0 ? this.slotUsage() : this.cache.usageFraction(),
    };
  }

  /** Slot mode: tokens held by every slot ÷ their capacity (`maxModelLen` each), as llama's fleet reports it. */
  private slotUsage(): number {
    let held = 0;
    for (const slot of this.slotList) held += slot.tokens.length * this.config.blockSizeTokens;
    return held / (this.slotList.length * this.config.maxModelLen);
  }

  /** Slot mode: frees the slot of `s`, which now holds the prompt's first `blocks` block keys. */
  private releaseSlot(s: Seq, blocks: number): void {
    const slot = this.slotList[s.slot]!;
    slot.busy = false;
    slot.tokens = s.req.blockKeys.subarray(0, blocks);
    slot.lastUsed = this.slotReleases++;
    // Published at admission; changed only by a cancelled prefill, or a restart meanwhile.
    this.slotEvents?.hold(s.slot, s.req, blocks);
    s.slot = -1;
  }

  /** Time-to-first-token histogram in model seconds (vLLM's buckets). */
  ttftHistogram(): Histogram {
    return this.ttft;
  }

  /** The prefix cache (read-only use: diagnostics and tests). */
  kvCache(): KvCache {
    return this.cache;
  }

  private result(s: Seq, t: number): VirtualResult {
    return {
      id: s.req.id,
      instance: this.id,
      arrivalMs: s.arrivalMs,
      firstTokenMs: s.firstTokenMs,
      finishMs: t,
      queueMs: s.admittedAt - s.readyAt,
      promptTokens: s.req.promptTokens,
      cachedTokens: s.cached,
      outputTokens: s.req.outputTokens,
    };
  }

  private finishStep(t: number, kinds: number[], seqs: Seq[]): void {
    this.inStep = false;
    this.stepEnd = Infinity;
    const running = this.running;
    let w = 0;
    for (let r = 0; r < running.length; r++) {
      const s = running[r]!;
      if (s.state !== RUNNING) continue;
      if (s.chunk > 0) {
        const prompt = s.req.promptTokens;
        let emitted = false;
        if (s.computed < prompt) {
          s.computed += s.chunk;
          if (s.computed >= prompt) {
            s.generated = 1;
            s.firstTokenMs = t;
            this.ttft.observe((t - s.arrivalMs) / 1000);
            emitted = true;
          }
        } else {
          s.generated++;
          emitted = true;
        }
        s.chunk = 0;
        if (emitted) {
          this.counters.generationTokens++;
          kinds.push(EV_TOKEN);
          seqs.push(s);
          if (s.generated >= s.req.outputTokens) {
            s.state = FINISHED;
            if (s.slot >= 0) this.releaseSlot(s, s.req.blockKeys.length);
            else this.cache.release(s.blocks!);
            s.blocks = null;
            this.counters.completed++;
            kinds.push(EV_DONE);
            seqs.push(s);
            continue;
          }
        }
      }
      running[w++] = s;
    }
    running.length = w;
  }

  private startStep(t: number, kinds: number[], seqs: Seq[]): void {
    const cfg = this.config;
    let budget = cfg.maxNumBatchedTokens;
    let cost = 0;
    for (const s of this.running) {
      if (budget === 0) break;
      const prompt = s.req.promptTokens;
      if (s.computed < prompt) {
        const n = Math.min(prompt - s.computed, budget);
        cost += prefillChunkMs(cfg, n, s.computed);
        s.chunk = n;
        budget -= n;
      } else {
        cost += decodeTokenMs(cfg, prompt + s.generated);
        s.chunk = 1;
        budget -= 1;
      }
    }
    const bs = cfg.blockSizeTokens;
    const slotMode = this.slotList.length > 0;
    const maxSeqs = slotMode ? this.slotList.length : cfg.maxNumSeqs;
    while (budget > 0 && this.running.length < maxSeqs && this.waiting.length > this.waitingHead) {
      const s = this.waiting[this.waitingHead]!;
      const { blockKeys, promptTokens, outputTokens } = s.req;
      if (slotMode) {
        const choice = chooseSlot(this.slotList, blockKeys, cfg.slotPromptSimilarity);
        if (choice === undefined) break;
        this.slotList[choice.slot]!.busy = true;
        s.slot = choice.slot;
        s.cached = Math.max(0, Math.min(choice.commonPrefix * bs, promptTokens - 1));
        // As vLLM caches the blocks it schedules before the forward pass: the slot's replaced
        // blocks leave, the prompt's are stored.
        this.slotEvents?.hold(choice.slot, s.req, blockKeys.length);
      } else {
        const hit = this.cache.lookup(blockKeys, promptTokens);
        this.allocating = s.req;
        const blocks = this.cache.allocate(blockKeys, hit, Math.ceil((promptTokens + outputTokens) / bs));
        this.allocating = undefined;
        if (blocks === null) break;
        s.blocks = blocks;
        s.cached = hit * bs;
      }
      this.waiting[this.waitingHead++] = undefined as unknown as Seq;
      this.dequeued(s);
      s.state = RUNNING;
      s.computed = s.cached;
      s.admittedAt = t;
      this.counters.promptTokens += promptTokens;
      this.counters.cachedTokens += s.cached;
      this.running.push(s);
      kinds.push(EV_ADMIT);
      seqs.push(s);
      const n = Math.min(promptTokens - s.computed, budget);
      cost += prefillChunkMs(cfg, n, s.computed);
      s.chunk = n;
      budget -= n;
    }
    if (this.waitingHead > 1024 && this.waitingHead * 2 > this.waiting.length) {
      this.waiting = this.waiting.slice(this.waitingHead);
      this.waitingHead = 0;
    }
    if (budget === cfg.maxNumBatchedTokens) {
      // Nothing fits: impossible while enqueue checks that every request fits an empty cache.
      throw new Error(`Engine ${this.id}: scheduler made no progress`);
    }
    const jitter = cfg.stepJitter > 0 ? 1 + cfg.stepJitter * (2 * this.random() - 1) : 1;
    this.stepEnd = t + (cfg.stepBaseMs + cost) * this.slowdownFactor * jitter;
    this.inStep = true;
  }

  /** A request leaves the queue (admitted or cancelled): its tokens no longer wait. */
  private dequeued(s: Seq): void {
    this.queuedTokens -= s.req.promptTokens;
    this.queuedUncachedTokens -= s.uncachedAtArrival;
  }

  private cancel(s: Seq): boolean {
    switch (s.state) {
      case PENDING:
        this.pending.splice(this.pending.indexOf(s), 1);
        this.dequeued(s);
        break;
      case WAITING: {
        const i = this.waiting.indexOf(s, this.waitingHead);
        this.waiting.splice(i, 1);
        this.dequeued(s);
        break;
      }
      case RUNNING:
        // Blocks past the computed prompt were never filled: drop their keys.
        if (s.slot >= 0) this.releaseSlot(s, Math.min(s.req.blockKeys.length, Math.floor(s.computed / this.config.blockSizeTokens)));
        else this.cache.release(s.blocks!, Math.floor(s.computed / this.config.blockSizeTokens));
        s.blocks = null;
        if (!this.inStep) this.running.splice(this.running.indexOf(s), 1);
        break;
      default:
        return false;
    }
    s.state = ABORTED;
    this.counters.aborted++;
    return true;
  }
}
