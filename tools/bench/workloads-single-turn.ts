/**
 * Single-turn workloads: every request is one shared part (a document, a system prompt, a hot
 * prefix) followed by a unique question, arriving by a Poisson process: `long-context`, `rag`,
 * `hot-prefix` and `short-prompts`. Each is a pure function of (seed, duration, rate multiplier); see
 * workload.ts for what every workload guarantees.
 */
import { Rng, Zipf, mix32 } from "../sim/random.js";
import type { EngineConfig } from "../fleet/config.js";
import { CHARS_PER_TOKEN, TextSource } from "./text.js";
import { BENCH_MODEL, MINUTE, TEXT_NS, type Workload } from "./workload.js";

/* ----------------------------------------------------------------------------------------- */
/* long-context                                                                                */
/* ----------------------------------------------------------------------------------------- */

/** Parameters of {@link longContextWorkload}. */
export interface LongContextParams {
  /** Distinct documents. @default 1600 */
  documents: number;
  /** Tokens per document: the shared prefix. @default 8000 (the AWS benchmark) */
  documentTokens: number;
  /** Zipf exponent of document popularity. @default 0.9 */
  zipfExponent: number;
  /** Poisson arrival rate, requests per second, before the rate multiplier. @default 7 */
  ratePerSecond: number;
  /** Median question length in tokens (log-normal, σ 0.5, 8–400). @default 40 */
  questionMedianTokens: number;
  /** Median answer length in tokens (log-normal, σ 0.6, 8–800). @default 120 */
  outputMedianTokens: number;
}

/** Defaults of {@link longContextWorkload}; calibration in `docs/bench.md`. */
export const LONG_CONTEXT_DEFAULTS: Readonly<LongContextParams> = {
  documents: 580,
  documentTokens: 8000,
  zipfExponent: 0,
  ratePerSecond: 7,
  questionMedianTokens: 40,
  outputMedianTokens: 120,
};

/**
 * `long-context`: AWS's published long-context benchmark. Many 8,000-token documents, each
 * request one document (Zipf-popular) followed by a short question, Poisson arrivals, one
 * simulated hour.
 */
export function longContextWorkload(params: Partial<LongContextParams> = {}): Workload {
  const p: LongContextParams = { ...LONG_CONTEXT_DEFAULTS, ...params };
  return {
    name: "long-context",
    description: `${p.documents} documents of ${p.documentTokens} tokens (Zipf s=${p.zipfExponent}), each followed by a short question`,
    defaultDurationMs: 60 * MINUTE,
    parameters: { ...p },
    *requests(s) {
      const rng = new Rng(mix32(s.seed, 0x10c));
      const zipf = new Zipf(p.documents, p.zipfExponent);
      const text = new TextSource(s.seed);
      // Popularity rank → document id, so the most popular document is not always id 0.
      const docOfRank = permutation(p.documents, new Rng(mix32(s.seed, 0x10d)));
      const meanGap = 1000 / (p.ratePerSecond * s.rateMultiplier);
      let t = rng.exponential(meanGap);
      for (let i = 0; t < s.durationMs; i++) {
        const doc = docOfRank[zipf.sample(rng)]!;
        const q = rng.logNormalInt(p.questionMedianTokens, 0.5, 8, 400);
        const out = rng.logNormalInt(p.outputMedianTokens, 0.6, 8, 800);
        const content = `${text.cached(TEXT_NS.document, doc, p.documentTokens)}\n\nQuestion: ${text.once(TEXT_NS.question, i, q)}`;
        yield {
          id: `long-context-${i}`,
          arrivalMs: t,
          outputTokens: out,
          body: { model: BENCH_MODEL, messages: [{ role: "user", content }], max_tokens: out },
        };
        t += rng.exponential(meanGap);
      }
    },
  };
}

/* ----------------------------------------------------------------------------------------- */
/* rag                                                                                         */
/* ----------------------------------------------------------------------------------------- */

/** Parameters of {@link ragWorkload}. */
export interface RagParams {
  /** Tokens of the common system prompt (instructions shared by every request). @default 600 */
  systemTokens: number;
  /** Distinct retrievable documents (chunks). @default 4000 */
  documents: number;
  /** Median document length in tokens (log-normal per document, σ 0.4, 300–6000). @default 1500 */
  documentMedianTokens: number;
  /** Zipf exponent of document retrieval popularity. @default 1.0 */
  zipfExponent: number;
  /** Poisson arrival rate, requests per second, before the rate multiplier. @default 12 */
  ratePerSecond: number;
  /** Median question length in tokens (log-normal, σ 0.5, 8–400). @default 30 */
  questionMedianTokens: number;
  /** Median answer length in tokens (log-normal, σ 0.6, 8–800). @default 150 */
  outputMedianTokens: number;
}

/** Defaults of {@link ragWorkload}. */
export const RAG_DEFAULTS: Readonly<RagParams> = {
  systemTokens: 600,
  documents: 4000,
  documentMedianTokens: 1500,
  zipfExponent: 1.0,
  ratePerSecond: 12,
  questionMedianTokens: 30,
  outputMedianTokens: 150,
};

/**
 * `rag`: a common system prompt, then one of many retrieved documents (Zipf-popular), then a
 * question. The shared system prompt (600 tokens ≈ 2,400 characters) is longer than a
 * 1,024-character routing prefix, so at that prefix length every request has the same key.
 */
export function ragWorkload(params: Partial<RagParams> = {}): Workload {
  const p: RagParams = { ...RAG_DEFAULTS, ...params };
  return {
    name: "rag",
    description: `${p.systemTokens}-token system prompt + 1 of ${p.documents} documents (~${p.documentMedianTokens} tokens, Zipf s=${p.zipfExponent}) + question`,
    defaultDurationMs: 20 * MINUTE,
    defaultPrefixLengths: [1024, 4096],
    parameters: { ...p },
    *requests(s) {
      const rng = new Rng(mix32(s.seed, 0x4a6));
      const zipf = new Zipf(p.documents, p.zipfExponent);
      const text = new TextSource(s.seed);
      const docOfRank = permutation(p.documents, new Rng(mix32(s.seed, 0x4a7)));
      const docTokens = (d: number) =>
        new Rng(mix32(s.seed, 0x4a8, d)).logNormalInt(p.documentMedianTokens, 0.4, 300, 6000);
      const system = text.cached(TEXT_NS.system, 0, p.systemTokens);
      const meanGap = 1000 / (p.ratePerSecond * s.rateMultiplier);
      let t = rng.exponential(meanGap);
      for (let i = 0; t < s.durationMs; i++) {
        const doc = docOfRank[zipf.sample(rng)]!;
        const q = rng.logNormalInt(p.questionMedianTokens, 0.5, 8, 400);
        const out = rng.logNormalInt(p.outputMedianTokens, 0.6, 8, 800);
        const content = `Context:\n${text.cached(TEXT_NS.document, doc, docTokens(doc))}\n\nQuestion: ${text.once(TEXT_NS.question, i, q)}`;
        yield {
          id: `rag-${i}`,
          arrivalMs: t,
          outputTokens: out,
          body: {
            model: BENCH_MODEL,
            messages: [
              { role: "system", content: system },
              { role: "user", content },
            ],
            max_tokens: out,
          },
        };
        t += rng.exponential(meanGap);
      }
    },
  };
}

/* ----------------------------------------------------------------------------------------- */
/* hot-prefix                                                                                  */
/* ----------------------------------------------------------------------------------------- */

/** Parameters of {@link hotPrefixWorkload}. */
export interface HotPrefixParams {
  /** Distinct shared prefixes (e.g. one system prompt per product feature). @default 100 */
  prefixes: number;
  /** Tokens per shared prefix. @default 3000 */
  prefixTokens: number;
  /** Zipf exponent of prefix popularity; 1.2 over 100 prefixes gives the top one ~26% of requests. @default 1.2 */
  zipfExponent: number;
  /**
   * Poisson arrival rate, requests per second, before the rate multiplier. One instance serves
   * at most ~27.7 req/s of this mix (measured: 1 instance, rising rate); 110 req/s is ~57% of 7
   * instances' capacity, while the top prefix alone brings ~29 req/s: more than one instance.
   * @default 110
   */
  ratePerSecond: number;
  /** Median unique user suffix in tokens (log-normal, σ 0.8, 8–4000). @default 300 */
  userMedianTokens: number;
  /** Median answer length in tokens (log-normal, σ 0.6, 8–800). @default 150 */
  outputMedianTokens: number;
}

/** Defaults of {@link hotPrefixWorkload}. */
export const HOT_PREFIX_DEFAULTS: Readonly<HotPrefixParams> = {
  prefixes: 100,
  prefixTokens: 3000,
  zipfExponent: 1.2,
  ratePerSecond: 110,
  userMedianTokens: 300,
  outputMedianTokens: 150,
};

/**
 * `hot-prefix`: Zipf-popular shared prefixes where the most popular one alone carries more
 * traffic than one instance can serve (~26% of requests against a fair share of 1/7 ≈ 14%), so
 * pinning it to one instance without a load guard saturates that instance.
 */
export function hotPrefixWorkload(params: Partial<HotPrefixParams> = {}): Workload {
  const p: HotPrefixParams = { ...HOT_PREFIX_DEFAULTS, ...params };
  return {
    name: "hot-prefix",
    description: `${p.prefixes} prefixes of ${p.prefixTokens} tokens, Zipf s=${p.zipfExponent} (top prefix ${(100 * new Zipf(p.prefixes, p.zipfExponent).probability(0)).toFixed(0)}% of requests)`,
    defaultDurationMs: 5 * MINUTE,
    parameters: { ...p },
    *requests(s) {
      const rng = new Rng(mix32(s.seed, 0x407));
      const zipf = new Zipf(p.prefixes, p.zipfExponent);
      const text = new TextSource(s.seed);
      const meanGap = 1000 / (p.ratePerSecond * s.rateMultiplier);
      let t = rng.exponential(meanGap);
      for (let i = 0; t < s.durationMs; i++) {
        const prefix = zipf.sample(rng);
        const u = rng.logNormalInt(p.userMedianTokens, 0.8, 8, 4000);
        const out = rng.logNormalInt(p.outputMedianTokens, 0.6, 8, 800);
        yield {
          id: `hot-prefix-${i}`,
          arrivalMs: t,
          outputTokens: out,
          body: {
            model: BENCH_MODEL,
            messages: [
              { role: "system", content: text.cached(TEXT_NS.hotPrefix, prefix, p.prefixTokens) },
              { role: "user", content: text.once(TEXT_NS.user, i, u) },
            ],
            max_tokens: out,
          },
        };
        t += rng.exponential(meanGap);
      }
    },
  };
}

/* ----------------------------------------------------------------------------------------- */
/* short-prompts                                                                               */
/* ----------------------------------------------------------------------------------------- */

/** Parameters of {@link shortPromptsWorkload}. */
export interface ShortPromptsParams {
  /** Distinct shared system prompts: more than one engine's slots, no more than all slots together. @default 12 */
  prompts: number;
  /** Characters per system prompt (shorter than the default `prefixLength` of 4,096). @default 1500 */
  promptChars: number;
  /** Zipf exponent of prompt popularity; 1.0 over 12 prompts gives the top one ~32% of requests. @default 1.0 */
  zipfExponent: number;
  /** Poisson arrival rate, requests per second, before the rate multiplier: about 4 in flight on the slot fleet. @default 12 */
  ratePerSecond: number;
  /** Median question length in characters (log-normal, σ 0.5, 16–400). @default 80 */
  questionMedianChars: number;
  /** Median answer length in tokens (log-normal, σ 0.5, 4–64). @default 16 */
  outputMedianTokens: number;
}

/** Defaults of {@link shortPromptsWorkload}. */
export const SHORT_PROMPTS_DEFAULTS: Readonly<ShortPromptsParams> = {
  prompts: 12,
  promptChars: 1500,
  zipfExponent: 1.0,
  ratePerSecond: 12,
  questionMedianChars: 80,
  outputMedianTokens: 16,
};

/**
 * The emulated engine `short-prompts` runs on by default: llama.cpp's slot cache (4 slots per
 * instance) and a CPU engine's costs, where prefill dominates. Per emulated token (4 characters),
 * about what 4 tokens cost the tiny llama.cpp model of docs/real-engines.md on one core (a
 * 2,176-token cold prefill in ≈ 370 ms), reuse counted token by token. Calibrated when that
 * model's tokenizer was byte-level (4 characters were 4 of its tokens; with its BPE they are
 * about 0.75): a cost model of a CPU engine, kept as it was so the emulated results stay
 * comparable.
 */
export const SLOT_ENGINE: Readonly<Partial<EngineConfig>> = Object.freeze({
  slots: 4,
  blockSizeTokens: 1,
  maxNumBatchedTokens: 512,
  frontendOverheadMs: 2,
  stepBaseMs: 2,
  prefillMsPerToken: 0.6,
  prefillMsPerTokenPair: 5e-5,
  decodeMsPerSeq: 0.5,
  decodeMsPerContextToken: 0,
});

/**
 * `short-prompts`: a dozen shared system prompts of ~1,500 characters (shorter than the default
 * routing prefix) under a skewed popularity, each followed by a short distinct question; run by
 * default on 4 instances with llama.cpp-like slot caches ({@link SLOT_ENGINE}), about 4 requests
 * in flight. The engine bench replays the same generator on real llama.cpp engines.
 *
 * @example
 * for (const r of shortPromptsWorkload({ prompts: 8 }).requests({ seed: 1, durationMs: 10_000, rateMultiplier: 1 })) send(r.body);
 */
export function shortPromptsWorkload(params: Partial<ShortPromptsParams> = {}): Workload {
  const p: ShortPromptsParams = { ...SHORT_PROMPTS_DEFAULTS, ...params };
  return {
    name: "short-prompts",
    description: `${p.prompts} system prompts of ${p.promptChars} characters (Zipf s=${p.zipfExponent}, top ${(100 * new Zipf(p.prompts, p.zipfExponent).probability(0)).toFixed(0)}%) + short questions, slot engines`,
    defaultDurationMs: 5 * MINUTE,
    fleet: { instances: 4, engine: SLOT_ENGINE },
    parameters: { ...p },
    *requests(s) {
      const rng = new Rng(mix32(s.seed, 0x5407));
      const zipf = new Zipf(p.prompts, p.zipfExponent);
      const text = new TextSource(s.seed);
      const promptOfRank = permutation(p.prompts, new Rng(mix32(s.seed, 0x5408)));
      const promptTokens = Math.max(1, Math.round(p.promptChars / CHARS_PER_TOKEN));
      const meanGap = 1000 / (p.ratePerSecond * s.rateMultiplier);
      let t = rng.exponential(meanGap);
      for (let i = 0; t < s.durationMs; i++) {
        const prompt = promptOfRank[zipf.sample(rng)]!;
        const q = Math.max(1, Math.round(rng.logNormalInt(p.questionMedianChars, 0.5, 16, 400) / CHARS_PER_TOKEN));
        const out = rng.logNormalInt(p.outputMedianTokens, 0.5, 4, 64);
        yield {
          id: `short-prompts-${i}`,
          arrivalMs: t,
          outputTokens: out,
          body: {
            model: BENCH_MODEL,
            messages: [
              { role: "system", content: text.cached(TEXT_NS.shortPrompt, prompt, promptTokens) },
              { role: "user", content: `${text.once(TEXT_NS.question, i, q)}?` },
            ],
            max_tokens: out,
          },
        };
        t += rng.exponential(meanGap);
      }
    },
  };
}

/* ----------------------------------------------------------------------------------------- */
/* helpers                                                                                   */
/* ----------------------------------------------------------------------------------------- */

/** A seeded random permutation of 0..n-1 (Fisher–Yates). */
function permutation(n: number, rng: Rng): Int32Array {
  const a = new Int32Array(n);
  for (let i = 0; i < n; i++) a[i] = i;
  for (let i = n - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    const t = a[i]!;
    a[i] = a[j]!;
    a[j] = t;
  }
  return a;
}
