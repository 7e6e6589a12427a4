/**
 * Errors the benchmark raises on purpose. Match on `code`, never on the message text.
 */

/** Stable error codes of the benchmark. */
export type BenchErrorCode =
  /** A trace file line is not a valid Mooncake record (the error's `line` says which). */
  | "ERR_TRACE_FORMAT"
  /** A trace file could not be read. */
  | "ERR_TRACE_READ"
  /** A benchmark option is missing, malformed or out of range (the message names it). */
  | "ERR_BENCH_OPTION"
  /** An optional package needed for this output (charts, progress bar) is not installed. */
  | "ERR_MISSING_PACKAGE"
  /** A request log line is neither a request body nor a Mooncake record (the error's `line` says which). */
  | "ERR_LOG_FORMAT"
  /** A request log could not be read. */
  | "ERR_LOG_READ";

const BRAND = Symbol.for("prefix-router.BenchError");

/**
 * The benchmark's error class. `line` is the 1-based line number for trace format errors.
 *
 * @example
 * try { parseTrace(text) } catch (e) { if (isBenchError(e) && e.code === "ERR_TRACE_FORMAT") console.error(e.line) }
 */
export class BenchError extends Error {
  /** Stable code. */
  readonly code: BenchErrorCode;
  /** 1-based line of the trace file or log, for `ERR_TRACE_FORMAT` and `ERR_LOG_FORMAT`. */
  readonly line?: number;

  constructor(code: BenchErrorCode, message: string, options?: { cause?: unknown; line?: number }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "BenchError";
    this.code = code;
    if (options?.line !== undefined) this.line = options.line;
    Object.defineProperty(this, BRAND, { value: true });
  }
}

/** True for a {@link BenchError}, also across realms and package copies. */
export function isBenchError(value: unknown): value is BenchError {
  return (
    typeof value === "object" &&
    value !== null &&
    ((value as Record<symbol, unknown>)[BRAND] === true || value instanceof BenchError)
  );
}
