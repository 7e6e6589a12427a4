/** Routing keys in records: a 64-bit key as 16 lowercase hex digits, JSON-safe (a bigint is not). */
export function hex64(key: bigint): string {
  return key.toString(16).padStart(16, "0");
}

/** {@link hex64} of a key that may be absent. */
export function hexKey(key: bigint | undefined): string | undefined {
  return key === undefined ? undefined : hex64(key);
}
