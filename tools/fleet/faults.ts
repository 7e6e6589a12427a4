/**
 * Fault knobs of a live instance, changeable while it runs (`LiveInstance.setFaults`).
 * Probabilities are drawn from the instance's seeded random source, one draw per request
 * and knob, so a seed reproduces which requests fail.
 */

import { FleetError } from "./errors.js";

/** What can go wrong with one instance. */
export interface FaultKnobs {
  /**
   * The server stops listening and drops every open connection: clients get
   * `ECONNREFUSED`, in-flight requests are aborted (the prefix cache survives, as with a
   * network partition). Setting it back to `false` listens again on the same port.
   * @default false
   */
  down: boolean;
  /**
   * The model is loading: `GET /health` and `GET /ping` answer 503, OpenAI requests 503,
   * SageMaker invocations 429 `ModelNotReadyException`.
   * @default false
   */
  notReady: boolean;
  /**
   * Fraction of requests (0..1) answered at once with `errorStatus` instead of being served.
   * @default 0
   */
  errorRate: number;
  /**
   * Status of injected errors. OpenAI protocol: that status with vLLM's error body.
   * SageMaker: 503 → `ServiceUnavailable`, 500 → `ModelError` (424, `OriginalStatusCode` 500,
   * as SageMaker reports a container's 500).
   * @default 500
   */
  errorStatus: 500 | 503;
  /**
   * Fraction of streaming responses (0..1) whose connection is reset in the middle: after
   * `ceil(outputTokens / 2)` tokens the socket is destroyed and the request aborted.
   * @default 0
   */
  resetStreamRate: number;
  /**
   * Fraction of streaming responses (0..1) that end in the middle with an in-band error:
   * OpenAI `data: {"error": ...}` then `data: [DONE]` (as vLLM does), SageMaker a
   * `ModelStreamError` event-stream exception.
   * @default 0
   */
  streamErrorRate: number;
  /**
   * Multiplies the engine's step times and frontend overhead (> 0): a degraded replica.
   * @default 1
   */
  slowdown: number;
}

/** No faults. */
export const DEFAULT_FAULTS: Readonly<FaultKnobs> = Object.freeze({
  down: false,
  notReady: false,
  errorRate: 0,
  errorStatus: 500,
  resetStreamRate: 0,
  streamErrorRate: 0,
  slowdown: 1,
});

/**
 * Applies `patch` over `current` and validates the result.
 * @throws FleetError `INVALID_ARGUMENT`
 */
export function applyFaults(current: Readonly<FaultKnobs>, patch: Partial<FaultKnobs>): FaultKnobs {
  const next: FaultKnobs = { ...current };
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) continue;
    if (!(key in DEFAULT_FAULTS)) throw new FleetError("INVALID_ARGUMENT", `Unknown fault knob \`${key}\``);
    (next as unknown as Record<string, unknown>)[key] = value;
  }
  for (const key of ["down", "notReady"] as const) {
    if (typeof next[key] !== "boolean") {
      throw new FleetError("INVALID_ARGUMENT", `Expected \`${key}\` to be a boolean, got ${String(next[key])}`);
    }
  }
  for (const key of ["errorRate", "resetStreamRate", "streamErrorRate"] as const) {
    const v = next[key];
    if (typeof v !== "number" || !(v >= 0 && v <= 1)) {
      throw new FleetError("INVALID_ARGUMENT", `Expected \`${key}\` to be a number from 0 to 1, got ${String(v)}`);
    }
  }
  if (next.errorStatus !== 500 && next.errorStatus !== 503) {
    throw new FleetError("INVALID_ARGUMENT", `Expected \`errorStatus\` to be 500 or 503, got ${String(next.errorStatus)}`);
  }
  if (typeof next.slowdown !== "number" || !Number.isFinite(next.slowdown) || next.slowdown <= 0) {
    throw new FleetError("INVALID_ARGUMENT", `Expected \`slowdown\` to be a finite number > 0, got ${String(next.slowdown)}`);
  }
  return next;
}
