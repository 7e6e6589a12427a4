/**
 * One llama.cpp engine: a node-llama-cpp context with K sequences (the slots), slot selection
 * and the FIFO queue of slots.ts, greedy generation, and the counters `/metrics` exports.
 *
 * A request: its prompt is tokenized by llama.cpp (so `prompt_tokens` is the engine's own count)
 * → it waits for a slot → the slot's tokens past the reused prefix are erased from its KV cache
 * and the rest of the prompt is evaluated (the reused count is `cached_tokens`) → tokens are
 * sampled one at a time (temperature 0) until the limit, the end-of-text token, or the end of
 * the slot's context → the slot is released holding the prompt and the generated tokens it
 * evaluated, for the next request to reuse.
 *
 * With a KV-event publisher, each change of a slot's tokens is published as vLLM's block events
 * (kv-events.ts): at admission the slot's blocks become the prompt's (as vLLM publishes blocks
 * when its scheduler allocates them, before computing them), and at the request's end what the
 * slot really holds.
 */

import { FleetError } from "../errors.js";
import { Histogram, TTFT_BUCKETS_SECONDS } from "../histogram.js";
import type { EngineStats } from "../engine.js";
import type { LlamaContext, LlamaContextSequence, LlamaModel, Token } from "./runtime.js";
import { KV_BLOCK_SIZE, SlotBlockEvents, type KvPublisher } from "./kv-events.js";
import { SlotScheduler, type SlotChoice } from "./slots.js";

/** Why a generation ended (OpenAI's `finish_reason`, plus `abort` for a client gone). */
export type FinishReason = "stop" | "length" | "abort";

/** What one generation did. Times are ms of the engine's clock. */
export interface GenerationResult {
  /** Prompt tokens, as llama.cpp tokenized the prompt. */
  readonly promptTokens: number;
  /** Prompt tokens the slot kept from its previous request (not evaluated). */
  readonly cachedTokens: number;
  /** Tokens generated. */
  readonly outputTokens: number;
  readonly finishReason: FinishReason;
  /** The slot that served it. */
  readonly slot: number;
  /** Time waiting for a slot. */
  readonly queueMs: number;
  /** Time from submission to the first token (`NaN` if none was generated). */
  readonly ttftMs: number;
}

/** Callbacks of one generation. */
export interface GenerationCallbacks {
  /** A slot was granted: how much of the prompt it reuses. */
  onAdmit?(info: { slot: number; cachedTokens: number; queueMs: number }): void;
  /** Token `index` (0-based) was generated. */
  onToken?(token: Token, index: number, ttftMs: number): void;
}

/** Options of {@link LlamaEngine}. */
export interface LlamaEngineOptions {
  readonly model: LlamaModel;
  readonly context: LlamaContext;
  /** Number of sequences of `context` to use as slots. */
  readonly slots: number;
  /** llama-server's `--slot-prompt-similarity`. */
  readonly slotPromptSimilarity: number;
  /** Monotonic clock in ms. */
  readonly clock: { now(): number };
  /** Token ids are below this. */
  readonly vocabularySize: number;
  /** Where to publish the slots' KV-cache events; none when absent. */
  readonly kvEvents?: KvPublisher;
}

/** One slot as `GET /slots` shows it. */
export interface SlotState {
  readonly id: number;
  readonly isProcessing: boolean;
  /** The tokens its KV cache holds, in order. */
  readonly tokens: readonly Token[];
}

/** One engine; see the file header. */
export class LlamaEngine {
  readonly contextSize: number;
  readonly vocabularySize: number;
  private readonly model: LlamaModel;
  private readonly sequences: LlamaContextSequence[];
  private readonly scheduler: SlotScheduler;
  private readonly clock: { now(): number };
  private readonly ttft = new Histogram(TTFT_BUCKETS_SECONDS);
  private readonly kvEvents: KvPublisher | undefined;
  private readonly blocks: SlotBlockEvents | undefined;
  private readonly busy: boolean[];
  private counters = { requests: 0, completed: 0, aborted: 0, promptTokens: 0, cachedTokens: 0, generationTokens: 0 };

  constructor(options: LlamaEngineOptions) {
    this.model = options.model;
    this.clock = options.clock;
    this.contextSize = options.context.contextSize;
    this.vocabularySize = options.vocabularySize;
    this.sequences = Array.from({ length: options.slots }, () => options.context.getSequence());
    this.scheduler = new SlotScheduler(options.slots, options.slotPromptSimilarity);
    this.busy = new Array<boolean>(options.slots).fill(false);
    this.kvEvents = options.kvEvents;
    if (this.kvEvents !== undefined) this.blocks = new SlotBlockEvents(options.slots, KV_BLOCK_SIZE);
  }

  /** Each slot: whether it runs a request, and the tokens its KV cache holds. */
  slots(): SlotState[] {
    return this.sequences.map((seq, id) => ({ id, isProcessing: this.busy[id]!, tokens: seq.contextTokens.slice() }));
  }

  /** Publishes what changed in `slot`'s whole blocks since it was last published: its tokens now, or `tokens` it is about to hold. */
  private publishSlot(slot: number, tokens: readonly Token[] = this.sequences[slot]!.contextTokens): void {
    if (this.blocks === undefined) return;
    const events = this.blocks.update(slot, tokens);
    if (events.length > 0) this.kvEvents!.publish(events);
  }

  /**
   * llama.cpp's tokens of `text`; with `specialTokens` (the default, as llama-server's
   * `parse_special`) control-token texts such as `<|eot_id|>` are those tokens.
   */
  tokenize(text: string, specialTokens = true): Token[] {
    return this.model.tokenize(text, specialTokens);
  }

  /** llama.cpp's text of `tokens` (control tokens dropped). */
  detokenize(tokens: readonly Token[]): string {
    return this.model.detokenize(tokens, false);
  }

  /**
   * Generates up to `maxTokens` tokens after `prompt`, greedily; resolves when done, aborted
   * (`signal`) or failed. A slot is always released, whatever happens.
   * @throws FleetError `PROMPT_TOO_LONG` when the prompt does not fit a slot's context
   */
  async generate(prompt: Token[], maxTokens: number, callbacks: GenerationCallbacks = {}, signal?: AbortSignal): Promise<GenerationResult> {
    if (prompt.length === 0) throw new FleetError("INVALID_REQUEST", "The prompt is empty");
    if (prompt.length >= this.contextSize) {
      throw new FleetError(
        "PROMPT_TOO_LONG",
        `the request exceeds the available context size, try increasing it: ${prompt.length} prompt tokens, ${this.contextSize} per slot`,
      );
    }
    const arrival = this.clock.now();
    this.counters.requests++;
    const choice = await new Promise<SlotChoice | undefined>((resolve) => {
      const ticket = this.scheduler.request(prompt, resolve);
      signal?.addEventListener("abort", () => {
        if (ticket.cancel()) resolve(undefined);
      });
    });
    const queueMs = this.clock.now() - arrival;
    if (choice === undefined) {
      this.counters.aborted++;
      return { promptTokens: prompt.length, cachedTokens: 0, outputTokens: 0, finishReason: "abort", slot: -1, queueMs, ttftMs: Number.NaN };
    }
    const seq = this.sequences[choice.slot]!;
    let generated = 0;
    let ttftMs = Number.NaN;
    let finishReason: FinishReason = "abort";
    this.busy[choice.slot] = true;
    try {
      if (choice.reused < seq.nextTokenIndex) await seq.eraseContextTokenRanges([{ start: choice.reused, end: seq.nextTokenIndex }]);
      // Admitted: the slot's blocks are the prompt's from now on. vLLM publishes a request's
      // blocks when its scheduler allocates them (`KVCacheManager.allocate_slots`), before the
      // forward pass computes them; so does this engine, so that routers learn where a prompt went
      // as soon as it is admitted rather than after its prefill.
      this.publishSlot(choice.slot, prompt);
      this.counters.promptTokens += prompt.length;
      this.counters.cachedTokens += choice.reused;
      callbacks.onAdmit?.({ slot: choice.slot, cachedTokens: choice.reused, queueMs });
      // After n tokens the slot holds the prompt and n − 1 of them: stop before it would need
      // a context shift (llama-server stops there too, as `truncated`).
      const limit = Math.min(maxTokens, this.contextSize - prompt.length);
      if (!signal?.aborted) {
        for await (const token of seq.evaluate(prompt.slice(choice.reused), { temperature: 0 })) {
          if (generated === 0) {
            ttftMs = this.clock.now() - arrival;
            this.ttft.observe(ttftMs / 1000);
          }
          callbacks.onToken?.(token, generated, ttftMs);
          generated++;
          if (signal?.aborted || generated >= limit) break;
        }
      }
      if (!signal?.aborted) {
        finishReason = generated >= limit ? "length" : "stop";
        // The end-of-text token sampled first ends the generation with nothing to yield.
        if (generated === 0) ttftMs = this.clock.now() - arrival;
      }
    } finally {
      // A failed evaluation counts as aborted: it did not complete.
      this.counters.generationTokens += generated;
      if (finishReason === "abort") this.counters.aborted++;
      else this.counters.completed++;
      this.busy[choice.slot] = false;
      try {
        this.publishSlot(choice.slot);
      } finally {
        this.scheduler.release(choice.slot, seq.contextTokens.slice());
      }
    }
    return { promptTokens: prompt.length, cachedTokens: choice.reused, outputTokens: generated, finishReason, slot: choice.slot, queueMs, ttftMs };
  }

  /** Counters and gauges, in the shape the emulated engine's `/metrics` renders. */
  stats(): EngineStats {
    return {
      ...this.counters,
      running: this.scheduler.running,
      waiting: this.scheduler.waiting,
      kvUsage: this.scheduler.heldTokens / (this.sequences.length * this.contextSize),
    };
  }

  /** TTFT histogram in seconds. */
  ttftHistogram(): Histogram {
    return this.ttft;
  }
}
