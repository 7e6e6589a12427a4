/**
 * Lines of a request log, read in constant memory and in time linear in the file. A log is read
 * several times (once to learn its prompts, once per counterfactual, once per simulated
 * strategy), and the virtual fleet replays a workload as a synchronous iterable, so the reader is
 * synchronous: 1 MiB chunks from `fs.readSync`, split on `\n` where the bytes are (a trailing
 * `\r` is dropped), each line decoded as UTF-8 once it is whole (`\n` never occurs inside a
 * multi-byte sequence, so a line decodes alone). A line that runs past `maxLineBytes` is never
 * held: its bytes are dropped as they arrive and only counted, and it comes out as a line with
 * `tooLong` set, which the caller refuses or skips with its number. Every byte is looked at once
 * by `indexOf` and copied at most twice (into the pending line, then into the line decoded), so a
 * file of one endless line costs what a file of short lines costs. Memory: one chunk plus at most
 * `maxLineBytes` of pending line.
 */
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { BenchError } from "../common/errors.js";

/** One line of a log, 1-based. */
export interface LogLine {
  /** The line's text (empty when `value` is given). */
  readonly text: string;
  readonly line: number;
  /** The line's value when it came from memory already parsed. */
  readonly value?: unknown;
  /** Set for a line over `maxLineBytes` (never kept). */
  readonly tooLong?: { readonly bytes: number; readonly maxLineBytes: number };
}

/** Where log lines come from: a file (read again for every pass) or lines in memory. */
export interface LineSource {
  /** Name used in messages (a path, or "requests"). */
  readonly name: string;
  /** Total bytes, for progress; `undefined` for lines in memory. */
  readonly bytes: number | undefined;
  /** The lines, from the first, each time it is called. `onBytes` reports bytes read so far. */
  lines(onBytes?: (bytes: number) => void): Iterable<LogLine>;
}

/** Longest log line read by default, bytes: 64 MiB. */
export const DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024;
/** Largest `maxLineBytes` accepted: 256 MiB, well inside the longest string V8 can make. */
export const MAX_LINE_BYTES_LIMIT = 256 * 1024 * 1024;

const CHUNK = 1 << 20;

/**
 * Splits bytes pushed chunk by chunk into lines (see the file header). The chunks pushed may be
 * reused by the caller once `push` has returned: pending bytes are copied.
 */
export class LineSplitter {
  private pending: Buffer[] = [];
  private held = 0;
  /** Bytes of the current line once it is past the limit (its bytes are no longer kept); -1 before. */
  private over = -1;
  private line = 0;

  constructor(private readonly maxLineBytes: number = DEFAULT_MAX_LINE_BYTES) {}

  /** Bytes of the unfinished line held now: at most `maxLineBytes`. */
  get heldBytes(): number {
    return this.held;
  }

  /** The lines `chunk` completes. */
  *push(chunk: Uint8Array): Generator<LogLine> {
    const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let start = 0;
    for (;;) {
      const nl = bytes.indexOf(0x0a, start);
      const end = nl === -1 ? bytes.length : nl;
      if (nl !== -1 && this.held === 0 && this.over === -1 && end - start <= this.maxLineBytes) {
        // The whole line is in this chunk: decoded from it, no copy.
        yield this.text(bytes.toString("utf8", start, end));
      } else {
        this.take(bytes.subarray(start, end));
        if (nl === -1) return;
        yield this.finish();
      }
      start = nl + 1;
    }
  }

  /** The last line, when the input does not end with `\n`. */
  *end(): Generator<LogLine> {
    if (this.held > 0 || this.over !== -1) yield this.finish();
  }

  private take(part: Buffer): void {
    if (this.over !== -1) {
      this.over += part.length;
    } else if (this.held + part.length > this.maxLineBytes) {
      this.over = this.held + part.length;
      this.pending = [];
      this.held = 0;
    } else if (part.length > 0) {
      this.pending.push(Buffer.from(part));
      this.held += part.length;
    }
  }

  private finish(): LogLine {
    if (this.over !== -1) {
      const bytes = this.over;
      this.over = -1;
      return { text: "", line: ++this.line, tooLong: { bytes, maxLineBytes: this.maxLineBytes } };
    }
    const text = this.pending.length === 1 ? (this.pending[0] as Buffer).toString("utf8") : Buffer.concat(this.pending, this.held).toString("utf8");
    this.pending = [];
    this.held = 0;
    return this.text(text);
  }

  private text(text: string): LogLine {
    return { text: text.endsWith("\r") ? text.slice(0, -1) : text, line: ++this.line };
  }
}

/**
 * Validates `maxLineBytes`.
 * @throws {BenchError} `ERR_BENCH_OPTION` naming the option, the range and the value
 */
export function checkMaxLineBytes(value: unknown, name = "maxLineBytes"): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > MAX_LINE_BYTES_LIMIT) {
    throw new BenchError("ERR_BENCH_OPTION", `Expected \`${name}\` to be an integer from 1 to ${MAX_LINE_BYTES_LIMIT}, got ${String(value)}`);
  }
  return value;
}

/**
 * The lines of the file at `path`.
 * @throws {BenchError} `ERR_LOG_READ` when the file cannot be opened (at the first pass)
 */
export function fileLines(path: string, maxLineBytes: number = DEFAULT_MAX_LINE_BYTES): LineSource {
  const max = checkMaxLineBytes(maxLineBytes);
  let bytes: number;
  try {
    const fd = openSync(path, "r");
    try {
      bytes = fstatSync(fd).size;
    } finally {
      closeSync(fd);
    }
  } catch (e) {
    throw new BenchError("ERR_LOG_READ", `Cannot read request log ${path}: ${(e as Error).message}`, { cause: e });
  }
  return {
    name: path,
    bytes,
    *lines(onBytes) {
      const fd = openSync(path, "r");
      try {
        const buffer = Buffer.allocUnsafe(CHUNK);
        const splitter = new LineSplitter(max);
        let read = 0;
        for (;;) {
          const n = readSync(fd, buffer, 0, CHUNK, null);
          if (n === 0) {
            yield* splitter.end();
            return;
          }
          read += n;
          yield* splitter.push(buffer.subarray(0, n));
          onBytes?.(read);
        }
      } finally {
        closeSync(fd);
      }
    },
  };
}

/** Lines from values in memory: each value is one line (a string is JSON text; anything else is used as parsed). */
export function memoryLines(values: readonly unknown[], maxLineBytes: number = DEFAULT_MAX_LINE_BYTES): LineSource {
  const max = checkMaxLineBytes(maxLineBytes);
  return {
    name: "requests",
    bytes: undefined,
    *lines() {
      for (let i = 0; i < values.length; i++) {
        const v = values[i];
        if (typeof v !== "string") {
          yield { text: "", line: i + 1, value: v };
          continue;
        }
        // A UTF-8 byte count is at most three per UTF-16 code unit: only long strings are measured.
        const bytes = v.length * 3 > max ? Buffer.byteLength(v, "utf8") : v.length;
        yield bytes > max ? { text: "", line: i + 1, tooLong: { bytes, maxLineBytes: max } } : { text: v, line: i + 1 };
      }
    },
  };
}
