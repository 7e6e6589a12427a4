/**
 * Typed errors of the emulated fleet. Every failure has a stable {@link FleetErrorCode}; match on
 * `code`, never on the message text.
 */

/** Stable codes of {@link FleetError}. */
export type FleetErrorCode =
  /** An option or a request field is outside its documented range. */
  | "INVALID_ARGUMENT"
  /** The request body cannot be rendered into a prompt (unknown shape, empty prompt, ...). */
  | "INVALID_REQUEST"
  /** prompt + output tokens exceed `maxModelLen` or the whole KV cache. */
  | "PROMPT_TOO_LONG"
  /** No instance with this id exists (or it finished draining and is gone). */
  | "UNKNOWN_INSTANCE"
  /** The instance was removed with `removeInstance` and takes no new requests. */
  | "INSTANCE_REMOVED"
  /** An instance with this id already exists (possibly still draining). */
  | "DUPLICATE_INSTANCE"
  /** `advanceTo` was called with a time before `now`, or from inside a callback. */
  | "INVALID_TIME"
  /** `VirtualFleet.submit` to an instance that is down while it restarts (the client's connection is refused). */
  | "INSTANCE_DOWN"
  /** A real engine process (`startLlamaFleet`) failed to start, or exited. */
  | "ENGINE_FAILED";

const FLEET_ERROR_BRAND = Symbol.for("prefix-router.FleetError");

/** The one error class of `prefix-router/fleet`; `cause` is kept when there is one. */
export class FleetError extends Error {
  /** Stable machine-readable code. */
  readonly code: FleetErrorCode;
  /** @internal brand for {@link isFleetError} across realms and duplicated packages. */
  readonly [FLEET_ERROR_BRAND] = true;

  constructor(code: FleetErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "FleetError";
    this.code = code;
  }
}

/** True for any {@link FleetError}, even one created by another copy of this package. */
export function isFleetError(value: unknown): value is FleetError {
  return (
    typeof value === "object" &&
    value !== null &&
    (value as Record<symbol, unknown>)[FLEET_ERROR_BRAND] === true
  );
}
