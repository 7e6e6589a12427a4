/**
 * Parameters of one emulated vLLM instance and their calibration.
 *
 * Reference setup (AWS's published SageMaker benchmark): Llama 3.1 70B Instruct in BF16, vLLM with prefix caching, one
 * ml.p5.48xlarge (8 × H100 80 GB, tensor parallel 8) per instance. AWS measured a model TTFT of
 * 63–280 ms in that setup; the defaults reproduce both ends at light load:
 *
 *   cold 8,000-token prompt:  frontend 50 + step 12.5 + 0.0253·8000 + 4.7e-7·8000·4000
 *                             = 50 + 12.5 + 202.4 + 15.04 ≈ 279.9 ms
 *   cached 8,000-token prompt (7,984 tokens hit, 16 recomputed, see kv-cache.ts):
 *                             50 + 12.5 + 0.0253·16 + 4.7e-7·16·7992 ≈ 63.0 ms
 *
 * Where the shapes come from:
 * - Prefill is compute-bound: ≈ 2 · 70.6e9 FLOP per token for the dense layers (linear in the
 *   new tokens) plus attention, 4 · 80 layers · 64 heads · 128 dims ≈ 2.6 MFLOP per
 *   (query, key) pair, i.e. 1.87e-5 of a token's dense cost per context token. The two
 *   coefficients keep that ratio and are scaled so the cold prompt lands on 280 ms.
 * - Decode is memory-bound: every step streams the weights (141 GB over 8 GPUs at 3.35 TB/s is
 *   ≈ 5.3 ms, ≈ 12.5 ms with tensor-parallel all-reduces and kernel launches in practice, i.e.
 *   ~80 tokens/s for one stream), plus each sequence's KV cache: 320 KiB per token
 *   (80 layers · 8 KV heads · 128 dims · 2 (K,V) · 2 bytes) / 8 GPUs / 3.35 TB/s ≈ 12 ns per
 *   context token.
 * - KV capacity: 0.9 · 640 GB (vLLM's `gpu_memory_utilization`) − 141 GB weights − ≈ 40 GB
 *   activations, CUDA graphs and NCCL buffers ≈ 395 GB, / 320 KiB per token ≈ 1.2 M tokens
 *   = 75,000 blocks of 16 tokens.
 */

import { FleetError } from "./errors.js";
import { DEFAULT_SLOT_PROMPT_SIMILARITY } from "./llama/slots.js";

/** Every parameter of the engine model. All times are model milliseconds (before `timeScale`). */
export interface EngineConfig {
  /**
   * Tokens per KV-cache block (vLLM's `--block-size`). Only full blocks are cached and reused.
   * @default 16 (vLLM's default on CUDA)
   */
  blockSizeTokens: number;
  /**
   * KV-cache capacity in blocks (vLLM's `num_gpu_blocks`).
   * @default 75_000 — 1.2 M tokens: Llama 3.1 70B BF16 on 8 × H100 80 GB, see the file header.
   */
  numGpuBlocks: number;
  /**
   * Maximum number of running sequences per step (vLLM's `--max-num-seqs`); the rest wait.
   * @default 256 (vLLM's long-standing default)
   */
  maxNumSeqs: number;
  /**
   * Token budget of one engine step (vLLM's `--max-num-batched-tokens`): decodes take one token
   * each, prefills are chunked into what is left.
   * @default 8192 (vLLM V1's default for the OpenAI server on GPUs with ≥ 70 GiB)
   */
  maxNumBatchedTokens: number;
  /**
   * Maximum prompt + output tokens of one request (vLLM's `--max-model-len`).
   * @default 131_072 (Llama 3.1's 128 K context)
   */
  maxModelLen: number;
  /**
   * Fixed latency before a request reaches the scheduler: HTTP, chat template, tokenization,
   * detokenization of the first token. Counted in TTFT, not in queueing, and it does not use
   * the GPU.
   * @default 50 — with `stepBaseMs` it gives the 63 ms cached TTFT AWS measured.
   */
  frontendOverheadMs: number;
  /**
   * Fixed cost of every engine step (one forward pass): streaming the weights and the
   * tensor-parallel collectives. Also the inter-token latency of a lone sequence.
   * @default 12.5 — 141 GB of weights over 8 × 3.35 TB/s plus TP overhead (~80 tokens/s).
   */
  stepBaseMs: number;
  /**
   * Prefill cost per uncached prompt token (dense layers, compute-bound).
   * @default 0.0253 — calibrated so a cold 8,000-token prompt has a 280 ms TTFT.
   */
  prefillMsPerToken: number;
  /**
   * Prefill attention cost per (new token, context token) pair: a chunk of `n` new tokens
   * after `c` computed ones costs `n · (c + n/2)` pairs, so long contexts cost more per token.
   * @default 4.7e-7 — 1.87e-5 × `prefillMsPerToken` (attention vs dense FLOPs of Llama 3.1 70B).
   */
  prefillMsPerTokenPair: number;
  /**
   * Decode cost per running sequence per step (sampling, per-sequence compute).
   * @default 0.04
   */
  decodeMsPerSeq: number;
  /**
   * Decode cost per context token of each decoding sequence per step (reading its KV cache).
   * @default 1.2e-5 — 320 KiB per token / 8 GPUs / 3.35 TB/s.
   */
  decodeMsPerContextToken: number;
  /**
   * Relative uniform noise on each step's duration: `× (1 + j · (2u − 1))` with `u` from the
   * seeded random source. 0 keeps every time exact and reproducible without a seed.
   * @default 0
   */
  stepJitter: number;
  /**
   * The prefix cache: 0 for vLLM's paged cache (kv-cache.ts); K ≥ 1 for llama.cpp's slots: K
   * slots, each holding the prompt it last ran, at most K requests running (`maxNumSeqs` is then
   * ignored), a request taking the idle slot whose cached prompt shares the most with its own
   * (tools/fleet/llama/slots.ts). See engine.ts.
   * @default 0
   */
  slots: number;
  /**
   * With slots: llama-server's `--slot-prompt-similarity`, the shared fraction of the prompt above
   * which an idle slot is chosen for what it holds rather than by LRU; 0 chooses by LRU only.
   * @default 0.1
   */
  slotPromptSimilarity: number;
}

/** The calibrated defaults (Llama 3.1 70B on one ml.p5.48xlarge); see {@link EngineConfig}. */
export const DEFAULT_ENGINE_CONFIG: Readonly<EngineConfig> = Object.freeze({
  blockSizeTokens: 16,
  numGpuBlocks: 75_000,
  maxNumSeqs: 256,
  maxNumBatchedTokens: 8192,
  maxModelLen: 131_072,
  frontendOverheadMs: 50,
  stepBaseMs: 12.5,
  prefillMsPerToken: 0.0253,
  prefillMsPerTokenPair: 4.7e-7,
  decodeMsPerSeq: 0.04,
  decodeMsPerContextToken: 1.2e-5,
  stepJitter: 0,
  slots: 0,
  slotPromptSimilarity: DEFAULT_SLOT_PROMPT_SIMILARITY,
});

const INTEGER_FIELDS = ["blockSizeTokens", "numGpuBlocks", "maxNumSeqs", "maxNumBatchedTokens", "maxModelLen"] as const;
const NON_NEGATIVE_FIELDS = [
  "frontendOverheadMs",
  "stepBaseMs",
  "prefillMsPerToken",
  "prefillMsPerTokenPair",
  "decodeMsPerSeq",
  "decodeMsPerContextToken",
] as const;

/**
 * Merges `overrides` over {@link DEFAULT_ENGINE_CONFIG} (and an optional base) and validates
 * the result, naming the option, the range and the value received.
 * @throws FleetError `INVALID_ARGUMENT`
 */
export function resolveEngineConfig(...overrides: (Partial<EngineConfig> | undefined)[]): EngineConfig {
  const config: EngineConfig = { ...DEFAULT_ENGINE_CONFIG };
  for (const o of overrides) {
    if (o === undefined) continue;
    for (const [key, value] of Object.entries(o)) {
      if (value === undefined) continue;
      if (!(key in DEFAULT_ENGINE_CONFIG)) {
        throw new FleetError("INVALID_ARGUMENT", `Unknown engine option \`${key}\``);
      }
      (config as unknown as Record<string, unknown>)[key] = value;
    }
  }
  for (const key of INTEGER_FIELDS) {
    const v = config[key];
    if (!Number.isSafeInteger(v) || v < 1) {
      throw new FleetError("INVALID_ARGUMENT", `Expected \`${key}\` to be a positive integer, got ${String(v)}`);
    }
  }
  for (const key of NON_NEGATIVE_FIELDS) {
    const v = config[key];
    if (typeof v !== "number" || !Number.isFinite(v) || v < 0) {
      throw new FleetError("INVALID_ARGUMENT", `Expected \`${key}\` to be a finite number ≥ 0, got ${String(v)}`);
    }
  }
  if (!Number.isSafeInteger(config.slots) || config.slots < 0) {
    throw new FleetError("INVALID_ARGUMENT", `Expected \`slots\` to be an integer ≥ 0 (0: paged cache), got ${String(config.slots)}`);
  }
  if (typeof config.slotPromptSimilarity !== "number" || !(config.slotPromptSimilarity >= 0 && config.slotPromptSimilarity < 1)) {
    throw new FleetError("INVALID_ARGUMENT", `Expected \`slotPromptSimilarity\` to be a number from 0 to below 1, got ${String(config.slotPromptSimilarity)}`);
  }
  if (typeof config.stepJitter !== "number" || !(config.stepJitter >= 0 && config.stepJitter < 1)) {
    throw new FleetError("INVALID_ARGUMENT", `Expected \`stepJitter\` to be a number from 0 to below 1, got ${String(config.stepJitter)}`);
  }
  return config;
}
