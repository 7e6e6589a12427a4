/**
 * Tokens the way the engine sees them: the request rendered with the model's chat template
 * (`@huggingface/jinja`, the template of `tokenizer_config.json`) and tokenized with the model's
 * `tokenizer.json` (`@huggingface/tokenizers`), or through an engine's `POST /tokenize` (vLLM:
 * `{model, prompt, add_special_tokens}` → `{count, max_model_len, tokens}`), or by the user's own
 * functions (`{ render, encode }`: {@link OwnTokenizerSource}), called synchronously in the read.
 *
 * The parts: `prompt-tokenizer.ts` (rendering, segments, the segment cache), `tokenizer-backends.ts`
 * (in this thread, a worker thread, an engine's `/tokenize`), `tokenizer-load.ts` (loading a
 * source, the start-up checks) and `tokenizer-types.ts` (the shapes they share).
 */
export { PromptTokenizer } from "./prompt-tokenizer.js";
export { EndpointBackend } from "./tokenizer-backends.js";
export { checkAgainstEngine, isOwnTokenizer, loadTokenizer, ownTokenizer, PROBE_CONVERSATIONS } from "./tokenizer-load.js";
export type { LoadedTokenizer, LoadTokenizerOptions, OwnTokenizerSource, TokenizerSource } from "./tokenizer-load.js";
export type { ChatTemplate, HfTokenizer, PromptTokenizerSettings, PromptTokens, TokenizerBackend, TokenizerStats } from "./tokenizer-types.js";
