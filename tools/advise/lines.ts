/**
 * Lines of a request log, read in constant memory. A log is read several times (once to learn
 * its prompts, once per counterfactual, once per simulated strategy), and the virtual fleet
 * replays a workload as a synchronous iterable, so the reader is synchronous: 1 MiB chunks from
 * `fs.readSync`, decoded as UTF-8 across chunk boundaries, split on `\n` (a trailing `\r` is
 * dropped). Memory: one chunk plus the longest line.
 */
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { StringDecoder } from "node:string_decoder";
import { BenchError } from "../common/errors.js";

/** One line of a log, 1-based. */
export interface LogLine {
  /** The line's text (empty when `value` is given). */
  readonly text: string;
  readonly line: number;
  /** The line's value when it came from memory already parsed. */
  readonly value?: unknown;
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

const CHUNK = 1 << 20;

/**
 * The lines of the file at `path`.
 * @throws {BenchError} `ERR_LOG_READ` when the file cannot be opened (at the first pass)
 */
export function fileLines(path: string): LineSource {
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
        const decoder = new StringDecoder("utf8");
        let rest = "";
        let line = 0;
        let read = 0;
        for (;;) {
          const n = readSync(fd, buffer, 0, CHUNK, null);
          const text = n === 0 ? rest + decoder.end() : rest + decoder.write(buffer.subarray(0, n));
          read += n;
          let start = 0;
          for (let nl = text.indexOf("\n"); nl !== -1; nl = text.indexOf("\n", start)) {
            yield { text: stripCr(text.slice(start, nl)), line: ++line };
            start = nl + 1;
          }
          rest = text.slice(start);
          onBytes?.(read);
          if (n === 0) {
            if (rest.length > 0) yield { text: stripCr(rest), line: ++line };
            return;
          }
        }
      } finally {
        closeSync(fd);
      }
    },
  };
}

/** Lines from values in memory: each value is one line (a string is JSON text; anything else is used as parsed). */
export function memoryLines(values: readonly unknown[]): LineSource {
  return {
    name: "requests",
    bytes: undefined,
    *lines() {
      for (let i = 0; i < values.length; i++) {
        const v = values[i];
        yield { text: typeof v === "string" ? v : "", line: i + 1, ...(typeof v === "string" ? {} : { value: v }) };
      }
    },
  };
}

function stripCr(s: string): string {
  return s.endsWith("\r") ? s.slice(0, -1) : s;
}
