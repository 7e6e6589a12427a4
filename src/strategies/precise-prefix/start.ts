/**
 * `precise-prefix`'s start: the tokenizer loaded from its files or an engine's `/tokenize`, then
 * checked against the engine's `/tokenize` where there is one. A tokenizer that cannot load, or
 * does not match the engine's, is a warning and a state under which every request routes on the
 * approximate strategy — never an error for the application, never silent zero hits.
 */
import type { Logger } from "../../logger.js";
import type { Clock } from "../../types.js";
import { EndpointBackend, type PromptTokenizer, type TokenizerSource, checkAgainstEngine, loadTokenizer } from "../../kv-events/tokenizer.js";
import type { PrecisePrefixConfig } from "./options.js";
import type { PreciseState } from "./stats.js";

/**
 * Loads and checks `source` (`p.tokenizer`: configured, not the user's own unchecked functions);
 * `loaded` has the tokenizer as soon as it is loaded, before the check (so that closing the
 * strategy meanwhile stops its worker).
 */
export async function loadAndCheck(source: TokenizerSource, p: PrecisePrefixConfig, clock: Clock, logger: Logger, loaded: (t: PromptTokenizer) => void): Promise<PreciseState> {
  try {
    const tokenizer = (await loadTokenizer(source, { model: p.model, cacheTokens: p.cacheTokens, maxQueuedChars: p.maxQueuedChars, worker: p.worker, timeoutMs: p.tokenizeTimeoutMs, clock, logger })).tokenizer;
    loaded(tokenizer);
    const checkUrl = p.checkUrl ?? ("endpoint" in source ? source.endpoint : undefined);
    if (checkUrl !== undefined) {
      let mismatch: string | undefined;
      try {
        mismatch = await checkAgainstEngine(tokenizer, new EndpointBackend(checkUrl, p.model, p.tokenizeTimeoutMs));
      } catch (e) {
        logger.warn(`precise-prefix: could not check the tokenizer against ${checkUrl}/tokenize (${(e as Error).message}); routing on it unchecked`, { error: e });
      }
      if (mismatch !== undefined) {
        logger.warn(`precise-prefix: the tokenizer does not match the engine's: ${mismatch}. Every request routes on the approximate strategy (longest-prefix) until the tokenizer files match the served model`);
        return "mismatch";
      }
    }
    return "ready";
  } catch (e) {
    logger.warn(`precise-prefix: ${(e as Error).message}; every request routes on the approximate strategy (longest-prefix)`, { error: e });
    return "failed";
  }
}
