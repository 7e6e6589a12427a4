/**
 * Saturation measured in tokens ("sticky until saturated", after llm-d's scheduler): a target is
 * saturated when its uncached prefill tokens in flight — this router's requests between commit
 * and first byte, the new request's own included — would pass
 *
 *   τ = θ × ttftPenaltyMs
 *
 * where θ is the target's peak prefill throughput (tokens per ms) and `ttftPenaltyMs` the extra
 * time to first token a request accepts for waiting behind queued prefill on its cache-warm
 * replica. A target with nothing uncached in flight always takes the request (a prompt larger
 * than τ must go somewhere).
 *
 * Calibration, online, from what responses report. Each response that reports usage gives one
 * sample: x = the uncached tokens this router had in flight there when it committed the pick
 * (its estimate) + the tokens the server did not serve from cache (`promptTokens −
 * cachedTokens`), y = its TTFT. An exponentially weighted least-squares fit of y = a + x / θ
 * (horizon {@link FIT_HORIZON} samples) separates the fixed overhead `a` (frontend, a step)
 * from the marginal prefill cost 1/θ. Until the fit is usable (enough samples spread over enough
 * tokens, positive slope) a target borrows the fit of the whole fleet; until that is usable too,
 * no token bound applies (only `concurrencyThreshold`). A sample's prompt tokens are clamped to
 * what its characters can be (units ÷ 16 to units ÷ 0.5 + 256), so one hostile `usage` moves the
 * ratio and the fits by one plausible sample (a few per cent), which decays like any other.
 * Cost: O(1) per sample and per check.
 *
 * Estimates before a response: prompt tokens = routing-input characters (or bytes) ÷ the learned
 * characters per token (4 until responses report `promptTokens`; decayed sums over the fit's
 * horizon); cached tokens of a key a target holds = what the server last reported for that key
 * (until then, the key's prefix in tokens). The hold a pick takes is remembered with it and
 * returned exactly once, at the first byte or at the release, whichever comes first — so errors,
 * aborts and retries leave nothing behind.
 */
import { LRUCache } from "lru-cache";
import type { Clock, LeaseOutcome, ReleaseInfo } from "../../types.js";
import { CHARS_PER_TOKEN, TOKEN_RATIO_RANGE } from "../../closed-loop/closed-loop.js";

/** Samples the throughput fit weighs (exponential decay by 1 − 1/FIT_HORIZON per sample). */
export const FIT_HORIZON = 256;
/** Samples a fit needs before it is used. */
export const FIT_MIN_SAMPLES = 8;
/** Spread (standard deviation) of the samples' tokens a fit needs before it is used. */
export const FIT_MIN_SPREAD_TOKENS = 256;
/** Tokens a chat template may add to a prompt, beyond its characters' worth (bounds one answer's claim). */
const TEMPLATE_TOKENS = 256;
/** Keys whose reported cached tokens are remembered (LRU). */
export const CACHED_KEYS = 16_384;

/** Per-target figures of `saturation: "tokens"`, under `stats().prefill`. */
export interface PrefillStats {
  /** Characters (text mode) or bytes (bytes mode) per prompt token, learned from `promptTokens` (4 before). */
  unitsPerToken: number;
  targets: {
    id: string;
    /** This router's uncached prefill tokens in flight (estimated), between commit and first byte. */
    uncachedTokensInFlight: number;
    /** Calibrated peak prefill throughput, tokens per second (the fleet's until the target has its own); `null` before calibration. */
    prefillTokensPerSecond: number | null;
    /** τ, the bound in uncached tokens; `null` (no bound) before calibration. */
    boundTokens: number | null;
  }[];
}

/**
 * Weighted least squares of y = a + b·x with exponential forgetting. `slope()` is b when the fit
 * is usable, `undefined` otherwise.
 */
export class DecayingFit {
  private n = 0;
  private w = 0;
  private sx = 0;
  private sy = 0;
  private sxx = 0;
  private sxy = 0;

  add(x: number, y: number): void {
    const d = 1 - 1 / FIT_HORIZON;
    this.n++;
    this.w = this.w * d + 1;
    this.sx = this.sx * d + x;
    this.sy = this.sy * d + y;
    this.sxx = this.sxx * d + x * x;
    this.sxy = this.sxy * d + x * y;
  }

  slope(): number | undefined {
    if (this.n < FIT_MIN_SAMPLES) return undefined;
    const mx = this.sx / this.w;
    const varX = this.sxx / this.w - mx * mx;
    if (!(varX >= FIT_MIN_SPREAD_TOKENS * FIT_MIN_SPREAD_TOKENS)) return undefined;
    const b = (this.sxy / this.w - mx * (this.sy / this.w)) / varX;
    return b > 0 && Number.isFinite(b) ? b : undefined;
  }
}

/** One target's uncached tokens in flight and its own throughput fit. */
export class PrefillTarget {
  /** Σ holds not yet returned. */
  inflight = 0;
  readonly fit = new DecayingFit();
  constructor(readonly id: string) {}
}

/** A pick's hold: returned once, at the first byte or the release. */
export interface PrefillHold {
  firstByte(): void;
  release(outcome: LeaseOutcome, info: ReleaseInfo | undefined): void;
}

/** The token accounting and calibration of one router's `prefix-aware` strategy. */
export class PrefillSaturation {
  private readonly fleet = new DecayingFit();
  private readonly cached = new LRUCache<bigint, number>({ max: CACHED_KEYS });
  /** Decayed sums of routing-input units and reported prompt tokens (each clamped), for units per token. */
  private units = 0;
  private tokens = 0;

  constructor(
    private readonly penaltyMs: number,
    private readonly clock: Clock,
  ) {}

  /** Routing-input units per prompt token: learned, {@link CHARS_PER_TOKEN} before any report. */
  unitsPerToken(): number {
    return this.tokens > 0 ? this.units / this.tokens : CHARS_PER_TOKEN;
  }

  /** Estimated prompt tokens of a prompt of `units` characters (or bytes). */
  promptTokens(units: number): number {
    return Math.ceil(units / this.unitsPerToken());
  }

  /**
   * Estimated uncached tokens of a prompt of `promptTokens` on a target that holds (`held`) or
   * does not hold its key, whose prefix covers `prefixUnits`.
   */
  uncached(key: bigint, prefixUnits: number, promptTokens: number, held: boolean): number {
    if (!held) return promptTokens;
    const cached = this.cached.get(key) ?? Math.floor(prefixUnits / this.unitsPerToken());
    return Math.max(0, promptTokens - cached);
  }

  /** τ of target `t` in tokens, `undefined` before calibration. */
  bound(t: PrefillTarget): number | undefined {
    const slope = t.fit.slope() ?? this.fleet.slope();
    return slope === undefined ? undefined : this.penaltyMs / slope;
  }

  /** Whether `t` takes `uncached` more tokens: nothing in flight, no bound yet, or within τ. */
  admits(t: PrefillTarget, uncached: number): boolean {
    if (t.inflight <= 0) return true;
    const tau = this.bound(t);
    return tau === undefined || t.inflight + uncached <= tau;
  }

  /**
   * Takes a hold of `uncached` tokens on `t` for a pick committed at `startMs`. `held`: the pick
   * expected the key cached there (the response's cached tokens then teach the key's estimate).
   */
  hold(t: PrefillTarget, pick: { uncached: number; startMs: number; key: bigint; units: number; held: boolean }): PrefillHold {
    const { uncached, startMs, key, units, held } = pick;
    const ahead = t.inflight;
    t.inflight += uncached;
    let open = true;
    let ttftMs: number | undefined;
    const give = (): void => {
      if (!open) return;
      open = false;
      t.inflight -= uncached;
    };
    return {
      firstByte: () => {
        if (ttftMs === undefined) ttftMs = this.clock.now() - startMs;
        give();
      },
      release: (outcome, info) => {
        give();
        if (outcome !== "success" || info === undefined) return;
        const reported = info.promptTokens;
        const cached = info.cachedTokens;
        if (typeof reported !== "number" || !(reported > 0) || !Number.isFinite(reported)) return;
        // What one answer can claim is bounded by what was sent: a prompt of `units` characters is
        // between units / 16 and units / 0.5 tokens (the closed loop's ratio range) plus a chat
        // template, so one hostile usage figure moves the ratio, the fits and the key's cached
        // estimate by one plausible sample, which decays like any other.
        const prompt = Math.min(Math.max(reported, Math.floor(units / TOKEN_RATIO_RANGE.max)), Math.ceil(units / TOKEN_RATIO_RANGE.min) + TEMPLATE_TOKENS);
        const d = 1 - 1 / FIT_HORIZON;
        this.units = this.units * d + units;
        this.tokens = this.tokens * d + prompt;
        if (typeof cached !== "number" || !(cached >= 0) || cached > reported) return;
        const cachedTokens = Math.min(cached, prompt);
        if (held) this.cached.set(key, cachedTokens);
        if (ttftMs === undefined || !(ttftMs >= 0)) return;
        const x = ahead + (prompt - cachedTokens);
        t.fit.add(x, ttftMs);
        this.fleet.add(x, ttftMs);
      },
    };
  }

  /** The figures of `stats().prefill`. */
  stats(targets: readonly PrefillTarget[]): PrefillStats {
    return {
      unitsPerToken: this.unitsPerToken(),
      targets: targets.map((t) => {
        const tau = this.bound(t);
        return {
          id: t.id,
          uncachedTokensInFlight: t.inflight,
          prefillTokensPerSecond: tau === undefined ? null : (1000 * tau) / this.penaltyMs,
          boundTokens: tau === undefined ? null : tau,
        };
      }),
    };
  }
}
