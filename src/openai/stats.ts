/**
 * What the OpenAI adapter's response affinity reports under `router.stats().responseAffinity`.
 * Types only, importing nothing: `RouterStats` names them without depending on the adapter.
 */
/** What `stats().responseAffinity` reports (OpenAI adapter, response affinity on; exported by `prefix-router/openai`). */
export interface ResponseAffinityStats {
  /** Response ids in this process's map. */
  entries: number;
  /** Requests referring to a stored response that this process's map placed. */
  localHits: number;
  /** Requests referring to a stored response this process's map did not know (the store, if any, was asked). */
  localMisses: number;
  /** The shared store; present only with `responseAffinity.store`. */
  store?: ResponseStoreStats;
}

/** What `stats().responseAffinity.store` reports (exported by `prefix-router/openai`). */
export interface ResponseStoreStats {
  source: "redis";
  /** Connected, and reads are not backing off after a failure. */
  healthy: boolean;
  /** Reads that named a current target. */
  hits: number;
  /** Reads that found nothing (or a value naming no current target). */
  misses: number;
  /** Reads that failed, timeouts included. */
  errors: number;
  /** Of `errors`, reads that took longer than `timeoutMs`. */
  timeouts: number;
  /** Reads not sent: not connected, or backing off after a failure. */
  skipped: number;
  /** Writes Redis acknowledged. */
  writes: number;
  /** Writes that failed or were dropped (not connected, or too many waiting), or that Redis refused as stale. */
  writeErrors: number;
  /** Of `writeErrors`: dropped without being sent (not connected, or `MAX_PENDING_WRITES` waiting or unanswered). */
  writesDropped?: number;
  /** Of `writeErrors`: refused by Redis because they reached it more than `timeoutMs` after they were sent. */
  writesExpired?: number;
  /** Responses answers (a non-streamed body, or a stream's end) handed over after `timeoutMs` without their id's write acknowledged. */
  lateAnswers?: number;
  /** The last error's message (credentials redacted), `null` when there was none. */
  lastError: string | null;
}
