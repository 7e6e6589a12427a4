/**
 * Mooncake JSONL traces (the de-facto trace format of LLM-serving benchmarks: Mooncake, LMCache,
 * Dynamo's tooling). One JSON object a line, sorted by time:
 *
 *     {"timestamp": 529, "input_length": 28, "output_length": 445, "hash_ids": [298]}
 *
 * - `timestamp`: arrival in milliseconds from the start of the trace
 * - `input_length` / `output_length`: prompt and completion length in tokens
 * - `hash_ids`: one id per 512-token block of the prompt, prefix-chained: two requests whose
 *   `hash_ids` share their first k ids share their first k × 512 prompt tokens.
 *
 * Parsing is all-or-nothing: every line is validated before any record is returned, and the
 * first bad line raises a {@link BenchError} (`ERR_TRACE_FORMAT`) naming its line number.
 */
import { readFile } from "node:fs/promises";
import { BenchError } from "../common/errors.js";
import { CHARS_PER_TOKEN, TextSource } from "./text.js";
import { BENCH_MODEL, type BenchRequest, type Workload } from "./workload.js";
import { parseJson } from "prefix-router";

/** Tokens per `hash_ids` block in the Mooncake format. */
export const MOONCAKE_BLOCK_TOKENS = 512;

/** One request of a trace. */
export interface TraceRecord {
  /** Arrival in milliseconds from the start of the trace. */
  readonly timestampMs: number;
  /** Prompt length in tokens. */
  readonly inputTokens: number;
  /** Completion length in tokens. */
  readonly outputTokens: number;
  /** Prefix-chained block ids, one per `blockTokens` tokens of the prompt (the last block may be partial). */
  readonly hashIds: readonly number[];
}

/** Options of {@link parseTrace} and {@link loadTrace}. */
export interface TraceParseOptions {
  /**
   * Tokens per hash id; each record must have exactly ⌈input_length / blockTokens⌉ ids.
   * @default 512 ({@link MOONCAKE_BLOCK_TOKENS})
   */
  blockTokens?: number;
  /** Name used in error messages (a file path). @default "trace" */
  source?: string;
}

/**
 * Parses Mooncake JSONL text. Blank lines are skipped; anything else that is not a valid record
 * throws before any record is returned.
 *
 * @throws {BenchError} `ERR_TRACE_FORMAT` with `line` set to the 1-based line number
 * @example
 * const records = parseTrace('{"timestamp":0,"input_length":600,"output_length":20,"hash_ids":[1,2]}\n');
 */
export function parseTrace(text: string, options: TraceParseOptions = {}): TraceRecord[] {
  const blockTokens = options.blockTokens ?? MOONCAKE_BLOCK_TOKENS;
  const source = options.source ?? "trace";
  if (!Number.isInteger(blockTokens) || blockTokens < 1) {
    throw new BenchError("ERR_BENCH_OPTION", `Expected \`blockTokens\` to be an integer ≥ 1, got ${blockTokens}`);
  }
  const records: TraceRecord[] = [];
  let lineNo = 0;
  let previous = -Infinity;
  let start = 0;
  while (start <= text.length) {
    let end = text.indexOf("\n", start);
    if (end === -1) end = text.length;
    lineNo++;
    const line = text.slice(start, end).trim();
    start = end + 1;
    if (line === "") continue;
    const fail = (why: string, cause?: unknown): never => {
      const shown = line.length > 120 ? `${line.slice(0, 117)}...` : line;
      throw new BenchError("ERR_TRACE_FORMAT", `${source}:${lineNo}: ${why} (line: ${shown})`, { line: lineNo, cause });
    };
    let value: unknown;
    try {
      value = parseJson(line);
    } catch (e) {
      fail("not valid JSON", e);
    }
    const record = traceRecordOf(value, blockTokens, fail);
    if (record.timestampMs < previous) {
      fail(`\`timestamp\` ${record.timestampMs} is earlier than the previous record's ${previous}; traces are sorted by time`);
    }
    previous = record.timestampMs;
    records.push(record);
  }
  return records;
}

/**
 * One Mooncake record from its parsed JSON value, validated; `fail` throws with the reason.
 * @internal Shared with the advisor, which reads traces line by line.
 */
export function traceRecordOf(value: unknown, blockTokens: number, fail: (why: string) => never): TraceRecord {
  if (typeof value !== "object" || value === null || Array.isArray(value)) fail("expected a JSON object");
  const o = value as Record<string, unknown>;
  const timestamp = o["timestamp"];
  const input = o["input_length"];
  const output = o["output_length"];
  const ids = o["hash_ids"];
  if (typeof timestamp !== "number" || !Number.isFinite(timestamp) || timestamp < 0) {
    fail(`\`timestamp\` must be a number of milliseconds ≥ 0, got ${JSON.stringify(timestamp)}`);
  }
  if (!isIntAtLeast(input, 1)) fail(`\`input_length\` must be an integer ≥ 1, got ${JSON.stringify(input)}`);
  if (!isIntAtLeast(output, 0)) fail(`\`output_length\` must be an integer ≥ 0, got ${JSON.stringify(output)}`);
  if (!Array.isArray(ids) || ids.length === 0) fail(`\`hash_ids\` must be a non-empty array, got ${JSON.stringify(ids)}`);
  const hashIds = ids as unknown[];
  for (const id of hashIds) {
    if (!isIntAtLeast(id, 0)) fail(`\`hash_ids\` must hold integers ≥ 0, got ${JSON.stringify(id)}`);
  }
  const expected = Math.ceil((input as number) / blockTokens);
  if (hashIds.length !== expected) {
    fail(
      `\`input_length\` ${input as number} needs ⌈${input as number}/${blockTokens}⌉ = ${expected} hash ids, got ${hashIds.length}`,
    );
  }
  return {
    timestampMs: timestamp as number,
    inputTokens: input as number,
    outputTokens: output as number,
    hashIds: hashIds as number[],
  };
}

/**
 * Reads and parses a Mooncake JSONL file (see {@link parseTrace}).
 *
 * @throws {BenchError} `ERR_TRACE_READ` if the file cannot be read, `ERR_TRACE_FORMAT` on a bad line
 */
export async function loadTrace(path: string, options: Omit<TraceParseOptions, "source"> = {}): Promise<TraceRecord[]> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (e) {
    throw new BenchError("ERR_TRACE_READ", `Cannot read trace file ${path}: ${(e as Error).message}`, { cause: e });
  }
  return parseTrace(text, { ...options, source: path });
}

function isIntAtLeast(v: unknown, min: number): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= min;
}

/** Options of {@link traceWorkload}. */
export interface TraceWorkloadOptions {
  /** Workload name in result rows. @default "trace" */
  name?: string;
  /** Tokens per hash id. @default 512 */
  blockTokens?: number;
}

/**
 * A workload that replays `records`. Each hash id becomes `blockTokens` tokens of synthetic text
 * unique to that id (the final block of a request is a prefix of its id's text), so two requests
 * share exactly the prompt prefix their `hash_ids` say they share, and text-reading routers see
 * that sharing. The rate multiplier compresses time (timestamps are divided by it); the duration
 * cuts the replay. Same seed → same text.
 *
 * @example
 * const workload = traceWorkload(await loadTrace("trace.jsonl"));
 */
export function traceWorkload(records: readonly TraceRecord[], options: TraceWorkloadOptions = {}): Workload {
  const name = options.name ?? "trace";
  const blockTokens = options.blockTokens ?? MOONCAKE_BLOCK_TOKENS;
  const last = records.length === 0 ? 0 : records[records.length - 1]!.timestampMs;
  let blocks = 0;
  for (const r of records) blocks += r.hashIds.length;
  return {
    name,
    description: `trace replay: ${records.length} requests over ${(last / 60_000).toFixed(1)} min, ${blocks} blocks of ${blockTokens} tokens`,
    defaultDurationMs: Math.floor(last) + 1,
    parameters: { requests: records.length, blockTokens },
    *requests(s) {
      const text = traceText(s.seed);
      for (let i = 0; i < records.length; i++) {
        const r = records[i]!;
        const arrivalMs = r.timestampMs / s.rateMultiplier;
        if (arrivalMs >= s.durationMs) return;
        yield traceRequest(r, `${name}-${i}`, arrivalMs, text, blockTokens);
      }
    },
  };
}

/** @internal The synthetic text of a trace replay under `seed` (one per replay). */
export function traceText(seed: number): TextSource {
  return new TextSource(seed, 48 * 1024 * 1024);
}

/**
 * @internal The benchmark request of one trace record: each hash id becomes `blockTokens` tokens
 * of text unique to the id (a final partial block is a prefix of its id's text).
 */
export function traceRequest(r: TraceRecord, id: string, arrivalMs: number, text: TextSource, blockTokens: number): BenchRequest {
  const parts: string[] = [];
  const n = r.hashIds.length;
  for (let b = 0; b < n; b++) {
    const block = text.cached(NS_TRACE_BLOCK, r.hashIds[b]!, blockTokens);
    const tokens = b < n - 1 ? blockTokens : r.inputTokens - blockTokens * (n - 1);
    parts.push(tokens === blockTokens ? block : block.slice(0, tokens * CHARS_PER_TOKEN));
  }
  const out = Math.max(1, r.outputTokens);
  return { id, arrivalMs, outputTokens: out, body: { model: BENCH_MODEL, messages: [{ role: "user", content: parts.join("") }], max_tokens: out } };
}

/** Text namespace of trace blocks (distinct from every built-in workload's namespaces). */
const NS_TRACE_BLOCK = 0x7ace;
