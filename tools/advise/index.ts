/**
 * `prefix-router/advise`: what a request log says about prefix routing — the reuse its prompts
 * allow, where requests that should share a prefix diverge (drift) and what that costs, what each
 * strategy gets on it on the virtual fleet, and the settings to use. Behind `prefix-router
 * advise`; run it in a test suite on your own request fixtures. See docs/advise.md.
 */
export { advise, adviseLog, adviseRequests } from "./advise.js";
export type { AdviseOptions, AdviseProgress, AdviseReport, DriftFinding, HandledFinding } from "./advise.js";
export type { Recommendation } from "./recommend.js";
export { DEFAULT_BAD_LINES, DEFAULT_OUTPUT_TOKENS, MAX_LOG_DEPTH } from "./records.js";
export type { BadLines } from "./records.js";
export type { SkippedLine } from "./analysis.js";
export { DEFAULT_MAX_LINE_BYTES, fileLines, memoryLines } from "./lines.js";
export type { LineSource, LogLine } from "./lines.js";
export { formatAdvice } from "./format.js";
export { renderAdviceHtml } from "./report.js";
