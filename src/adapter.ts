/**
 * Kept for modules that still import the router handle from here (src/demo/demo.ts); its home
 * is src/adapter/handle.ts.
 */
export { DEFAULT_ATTEMPTS, MAX_ATTEMPTS, getRouter } from "./adapter/handle.js";
