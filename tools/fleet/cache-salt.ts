/**
 * vLLM's `cache_salt` (V1 engine): an optional non-empty string in a request body that vLLM mixes
 * into the hash of the prompt's first block. Block hashes are chained, so every block of a salted
 * prompt differs from the same prompt's blocks under another salt or none: requests share cached
 * prefixes only with requests of the same salt. The emulated engine does the same by hashing a
 * prompt's blocks in the namespace (model, salt) instead of the model alone.
 */
import { FleetError } from "./errors.js";

/**
 * The prefix-cache namespace of a request: its model, and its salt when it has one. Two requests
 * can share cached blocks only when their namespaces are equal.
 * @example
 * cacheNamespace("llama", undefined); // "llama"
 */
export function cacheNamespace(model: string, salt: string | undefined): string {
  return salt === undefined ? model : `${model}\u0000cache_salt\u0000${salt}`;
}

/**
 * The `cache_salt` of a request body, validated as vLLM does: absent (or `null`), or a non-empty
 * string.
 * @throws FleetError `INVALID_REQUEST` with vLLM's message for anything else
 */
export function cacheSaltOf(body: Readonly<Record<string, unknown>>): string | undefined {
  const salt = body["cache_salt"];
  if (salt === undefined || salt === null) return undefined;
  if (typeof salt !== "string" || salt.length === 0) {
    throw new FleetError("INVALID_REQUEST", "Parameter 'cache_salt' must be a non-empty string if provided.");
  }
  return salt;
}
