/**
 * The closed loop: a strategy that predicts where a prefix is cached learns, from the
 * `cached_tokens` the engines report back, when that prediction has gone stale — a replica
 * restarted, or evicted what the strategy believes it holds — and forgets what it believed that
 * target holds, so its traffic re-spreads at once instead of being sent there as if warm.
 *
 * The rule (docs/observability.md, "Closed loop"), per target:
 *
 *   - a response *tests* a prediction when it succeeded, reported `cachedTokens`, and its pick
 *     predicted at least {@link MIN_PREDICTED_TOKENS} cached tokens;
 *   - the test *misses* when the server served fewer than `ratio` × min(predicted, promptTokens)
 *     tokens from its cache, and *hits* otherwise;
 *   - `misses` misses in a row (no hit in between) and the strategy forgets the target's entries.
 *
 * Predictions are estimates in tokens: characters (or bytes) the strategy believes are cached
 * divided by the target's characters per token, learned from its responses ({@link TokenRatio}:
 * the whole prompt's routing input against the `promptTokens` the server reported), starting at
 * {@link CHARS_PER_TOKEN}. Tokenizers differ by 4× and more (about 4 characters a token for
 * English with large vocabularies, 1 for byte-level ones): a fixed ratio judges real hits as misses.
 */
import { checkInteger, checkKnownKeys, checkNumber, describe, keysOf } from "../internal/validate.js";
import type { LeaseOutcome, ReleaseInfo } from "../types.js";

/** Characters (text mode) or bytes (bytes mode) per token before a target has answered: Llama 3's English ratio, llm-d's assumption. */
export const CHARS_PER_TOKEN = 4;

/** Bounds of a learned characters-per-token ratio: byte-level tokenizers and below, to 4× English's. */
export const TOKEN_RATIO_RANGE = Object.freeze({ min: 0.5, max: 16 });

/** Prompts shorter than this (characters or bytes) teach nothing: the chat template's own tokens dominate them. */
export const MIN_RATIO_SAMPLE_UNITS = 256;

/** Responses a ratio averages over: the first ones weigh 1/(n+1) (the prior counts once), later ones 1/this. */
export const TOKEN_RATIO_WINDOW = 32;

/** Samples after which the starting guess ({@link CHARS_PER_TOKEN}) no longer counts. */
export const TOKEN_RATIO_TRUSTED = 4;

/** A prediction below this many tokens is too small to test: a miss there costs little and says little. */
export const MIN_PREDICTED_TOKENS = 256;

/** Options of the closed loop (`RouterOptions.closedLoop`). */
export interface ClosedLoopOptions {
  /**
   * Misses in a row after which a strategy forgets what it believed a target caches. From 1
   * to 1,000.
   * @default 3
   */
  misses?: number;
  /**
   * A response misses when the server served fewer than `ratio` × the predicted tokens from its
   * cache (capped at the prompt's tokens). From 0 (exclusive) to 1.
   * @default 0.5
   */
  ratio?: number;
}

/** Defaults of {@link ClosedLoopOptions}. */
export const DEFAULT_CLOSED_LOOP: Readonly<Required<ClosedLoopOptions>> = Object.freeze({ misses: 3, ratio: 0.5 });

/** @internal Validated options; `undefined` when the loop is off (`closedLoop: false`). */
export type ClosedLoopConfig = Readonly<Required<ClosedLoopOptions>> | undefined;

/** @internal Every key of {@link ClosedLoopOptions}. */
export const CLOSED_LOOP_OPTION_KEYS = keysOf<ClosedLoopOptions>()(["misses", "ratio"]);

/** @internal Validates `RouterOptions.closedLoop`. */
export function resolveClosedLoop(options: unknown): ClosedLoopConfig {
  if (options === false) return undefined;
  if (options === undefined) return DEFAULT_CLOSED_LOOP;
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new TypeError(`Expected \`closedLoop\` to be an object or false, got ${describe(options)}`);
  }
  checkKnownKeys("closedLoop", options, CLOSED_LOOP_OPTION_KEYS);
  const o = options as ClosedLoopOptions;
  const ratio = checkNumber("closedLoop.ratio", o.ratio ?? DEFAULT_CLOSED_LOOP.ratio, 0, 1);
  if (ratio === 0) throw new RangeError("Expected `closedLoop.ratio` to be a number from 0 (exclusive) to 1, got 0");
  return Object.freeze({ misses: checkInteger("closedLoop.misses", o.misses ?? DEFAULT_CLOSED_LOOP.misses, 1, 1000), ratio });
}

/** What one response says about its pick's prediction: `undefined` when it tests nothing. */
export type PredictionVerdict = "hit" | "miss" | undefined;

/** The verdict of a response on its pick's prediction (see the file header). */
export function judgePrediction(
  predicted: number | undefined,
  outcome: LeaseOutcome,
  info: ReleaseInfo | undefined,
  ratio: number,
): PredictionVerdict {
  if (predicted === undefined || predicted < MIN_PREDICTED_TOKENS || outcome !== "success") return undefined;
  const cached = info?.cachedTokens;
  if (typeof cached !== "number" || !(cached >= 0)) return undefined;
  const prompt = info?.promptTokens;
  const expected = typeof prompt === "number" && prompt >= 0 ? Math.min(predicted, prompt) : predicted;
  return cached < ratio * expected ? "miss" : "hit";
}

/** What a strategy that runs the loop needs from its router. */
export interface ClosedLoopEnv {
  /** The loop's settings; `undefined` when it is off. */
  readonly closedLoop: ClosedLoopConfig;
  /** The strategy forgot what it believed target `id` holds (`entries` entries). */
  forgot(id: string, entries: number): void;
}

/** A target's run of misses, kept by the strategy beside what it believes the target holds. */
export interface MissRun {
  misses: number;
}

/**
 * Counts one verdict into a target's run; true when the run just reached `config.misses` (the
 * strategy should forget the target's entries now; the run starts over).
 */
export function countVerdict(run: MissRun, verdict: PredictionVerdict, config: ClosedLoopConfig): boolean {
  if (config === undefined || verdict === undefined) return false;
  if (verdict === "hit") {
    run.misses = 0;
    return false;
  }
  if (++run.misses < config.misses) return false;
  run.misses = 0;
  return true;
}

/**
 * A target's characters (or bytes) per token, learned online: each successful response whose
 * prompt was at least {@link MIN_RATIO_SAMPLE_UNITS} long gives a sample `units / promptTokens`
 * (the routing input of the whole prompt against the tokens the server counted, its chat template
 * included), clamped to {@link TOKEN_RATIO_RANGE}; the ratio is a geometric moving average of the
 * samples over the last ~{@link TOKEN_RATIO_WINDOW}, starting at {@link CHARS_PER_TOKEN}, which
 * weighs as one sample until {@link TOKEN_RATIO_TRUSTED} samples are in and then no more (a
 * byte-level tokenizer's 1 is reached in 4 responses, not 15). A usage field that is missing, not
 * a positive finite number, or a prompt the router did not read whole, teaches nothing. One
 * hostile answer moves the ratio by at most √8 ≈ 2.8× if it is the first, 32^(1/4) ≈ 2.4× among
 * the first four, and by at most 32^(1/32) ≈ 1.11× once the window is full.
 */
export class TokenRatio {
  /** ln of the ratio. */
  private log = Math.log(CHARS_PER_TOKEN);
  /** Moving mean of the samples' logarithms. */
  private mean = 0;
  /** Samples learned (capped at the window). */
  private samples = 0;

  /** Characters (or bytes) per token now. */
  get value(): number {
    return Math.exp(this.log);
  }

  /** Predicted tokens for `units` characters (or bytes). */
  tokens(units: number): number {
    return Math.floor(units / this.value);
  }

  /**
   * Learns from one response: `units` of routing input were sent (the whole prompt, or
   * `undefined` when the router did not read it whole), the server counted `promptTokens`.
   * @returns true when the sample was used
   */
  learn(units: number | undefined, promptTokens: unknown): boolean {
    if (typeof units !== "number" || !(units >= MIN_RATIO_SAMPLE_UNITS) || !Number.isFinite(units)) return false;
    if (typeof promptTokens !== "number" || !(promptTokens >= 1) || !Number.isFinite(promptTokens)) return false;
    const sample = Math.min(TOKEN_RATIO_RANGE.max, Math.max(TOKEN_RATIO_RANGE.min, units / promptTokens));
    if (this.samples < TOKEN_RATIO_WINDOW) this.samples++;
    this.mean += (Math.log(sample) - this.mean) / this.samples;
    // The starting guess weighs as one sample until TOKEN_RATIO_TRUSTED samples are in, then not at all.
    this.log = this.samples >= TOKEN_RATIO_TRUSTED ? this.mean : (Math.log(CHARS_PER_TOKEN) + this.samples * this.mean) / (this.samples + 1);
    return true;
  }
}
