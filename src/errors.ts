/**
 * Every failure prefix-router raises on purpose is a {@link RouterError} with a stable `code`.
 * Match on `code` (or use {@link isRouterError}), never on the message text.
 */

/** Stable error codes. Adding a code is a minor change; renaming or removing one is breaking. */
export type RouterErrorCode =
  /** `canonicalize`: the value contains a reference cycle. */
  | "ERR_CYCLE"
  /** `canonicalize`: the value holds something JSON cannot represent (a BigInt, or a top-level `undefined`/function/symbol). */
  | "ERR_UNSERIALIZABLE"
  /** `canonicalize`: nesting deeper than {@link CANONICAL_MAX_DEPTH}. */
  | "ERR_TOO_DEEP"
  /** `canonicalizeJson` / text mode: the input is not valid JSON (or not valid UTF-8). */
  | "ERR_INVALID_JSON"
  /** A request body the chosen routing mode cannot read. */
  | "ERR_INVALID_BODY"
  /** A tenant id that is not 1–64 printable ASCII characters. */
  | "ERR_INVALID_TENANT"
  /** Under isolation, a request at odds with its tenant (docs/tenants.md). */
  | "ERR_TENANT_MISMATCH"
  /** The router has no targets at all. */
  | "ERR_NO_TARGETS"
  /** No target serves the requested model, or every target that does is draining (weight 0). */
  | "ERR_NO_ELIGIBLE_TARGET"
  /**
   * A routed request whose URL would leave the chosen target's base URL (another origin, a path
   * outside it, a scheme other than http(s)): refused, nothing sent.
   */
  | "ERR_CROSS_ORIGIN"
  /**
   * The connection to a target failed after the request may have been written (a reset, a closed
   * socket, a partial answer): not retried anywhere, because the model may have run it. `cause`
   * is the underlying error.
   */
  | "ERR_CONNECTION_LOST"
  /**
   * The target a request must go to (`route(request, { target })`: the replica that holds the
   * response a Responses API request continues) left the target set or no longer serves the model.
   */
  | "ERR_TARGET_GONE"
  /** A feature needs an optional peer dependency that is not installed (the message names it and its install command). */
  | "ERR_MISSING_PEER"
  /**
   * An engine's KV-event message that cannot be read: wrong frame count or seq width, a payload
   * that is not msgpack, a batch or event of the wrong shape, or one over the decoder's bounds.
   * The feed counts it and never applies any of it.
   */
  | "ERR_KV_EVENT_DECODE"
  /** `precise-prefix`: the tokenizer files or chat template could not be read or compiled (the message names the file and the cause). */
  | "ERR_TOKENIZER";

/** Maximum nesting depth `canonicalize` accepts; a deeper value is `ERR_TOO_DEEP`. */
export const CANONICAL_MAX_DEPTH = 1024;

const BRAND = Symbol.for("prefix-router.RouterError");

/**
 * The one error class of prefix-router. `code` is stable across releases; `cause` keeps the
 * underlying error when there is one.
 *
 * @example
 * try { canonicalize({ n: 1n }); } catch (e) { if (isRouterError(e) && e.code === "ERR_UNSERIALIZABLE") … }
 */
export class RouterError extends Error {
  readonly code: RouterErrorCode;
  /** Byte or character position in the input, when the failure has one (`ERR_INVALID_JSON`). */
  readonly position?: number;

  constructor(code: RouterErrorCode, message: string, options?: { cause?: unknown; position?: number }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "RouterError";
    this.code = code;
    if (options?.position !== undefined) this.position = options.position;
    Object.defineProperty(this, BRAND, { value: true });
  }
}

/**
 * True for a {@link RouterError}, also one created by another copy of this package or in another
 * realm (worker, vm context), where `instanceof` fails.
 */
export function isRouterError(value: unknown): value is RouterError {
  return (
    typeof value === "object" &&
    value !== null &&
    ((value as Record<symbol, unknown>)[BRAND] === true || value instanceof RouterError)
  );
}
