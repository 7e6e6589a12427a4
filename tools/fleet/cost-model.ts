/**
 * Time of one engine step (one forward pass), vLLM-style continuous batching with chunked
 * prefill. With the parameters of {@link EngineConfig} (values and sources in config.ts):
 *
 *   step(ms) = slowdown · (stepBaseMs
 *              + Σ_prefill chunks [ prefillMsPerToken · n + prefillMsPerTokenPair · n · (c + n/2) ]
 *              + Σ_decoding seqs [ decodeMsPerSeq + decodeMsPerContextToken · context ])
 *
 * where a prefill chunk computes `n` new tokens after `c` already computed (cached or earlier
 * chunks): every new token attends to the `c` earlier ones and, on average, to half of its
 * own chunk. Concurrent prefills share a step (and its token budget), so each one finishes
 * later than it would alone: that is how prefills are "shared" on one GPU.
 *
 *   TTFT = frontendOverheadMs + queueing (waiting for a slot, a step boundary or KV blocks)
 *          + the steps that compute the uncached prompt tokens.
 */

import type { EngineConfig } from "./config.js";

/** Cost in ms of prefilling `n` new tokens after `computed` tokens, before the step base. */
export function prefillChunkMs(config: EngineConfig, n: number, computed: number): number {
  return config.prefillMsPerToken * n + config.prefillMsPerTokenPair * n * (computed + n / 2);
}

/** Cost in ms of one decode token of a sequence holding `contextTokens` tokens, before the step base. */
export function decodeTokenMs(config: EngineConfig, contextTokens: number): number {
  return config.decodeMsPerSeq + config.decodeMsPerContextToken * contextTokens;
}

/**
 * TTFT in ms of a lone request on an idle instance, from the formula above (no queueing):
 * useful to check a calibration without running the engine.
 * @param promptTokens prompt length
 * @param cachedTokens tokens served from the prefix cache (a multiple of the block size)
 */
export function idleTtftMs(config: EngineConfig, promptTokens: number, cachedTokens: number): number {
  let computed = cachedTokens;
  let ms = config.frontendOverheadMs;
  while (computed < promptTokens) {
    const n = Math.min(promptTokens - computed, config.maxNumBatchedTokens);
    ms += config.stepBaseMs + prefillChunkMs(config, n, computed);
    computed += n;
  }
  return ms;
}
