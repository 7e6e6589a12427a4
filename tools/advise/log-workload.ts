/**
 * A request log as a benchmark workload: its requests replayed in order on the virtual fleet,
 * read from the log again on every replay (constant memory). Arrivals are the log's timestamps
 * (offsets from the first, divided by the rate multiplier, never earlier than the previous
 * request) when every request has one, else a Poisson process at the given rate. Mooncake
 * records become the bench's trace requests (trace.ts).
 */
import { traceRequest, traceText } from "../bench/trace.js";
import type { BenchRequest, ChatBody, Workload } from "../bench/workload.js";
import { MOONCAKE_BLOCK_TOKENS } from "../bench/trace.js";
import { Rng, mix32 } from "../sim/random.js";
import type { LineSource } from "./lines.js";
import { type BadLines, type LogRequest, readEntryOr } from "./records.js";

/** How a log is replayed. */
export interface LogReplay {
  /** Workload name in result rows. */
  readonly name: string;
  /** Whether every request has a timestamp (then they set the arrivals). */
  readonly timestamps: boolean;
  /** The first request's timestamp, ms (with `timestamps`). */
  readonly firstMs: number;
  /** Simulated time the replay covers, ms. */
  readonly durationMs: number;
  /** Requests per second without timestamps. */
  readonly ratePerSecond: number;
  /** Answer length of requests that do not say. */
  readonly outputTokens: number;
  /** Replay at most this many requests. */
  readonly maxRequests: number;
  /** What a bad line does (pass 1 counted the skipped ones). */
  readonly badLines: BadLines;
  /** The body to send for a request (a fixed copy, for counterfactual replays). @default its own body */
  readonly bodyOf?: (request: LogRequest) => ChatBody;
}

/** The log `source` as a workload (see the file header). */
export function logWorkload(source: LineSource, replay: LogReplay): Workload {
  return {
    name: replay.name,
    description: `request log ${source.name}`,
    defaultDurationMs: replay.durationMs,
    parameters: { log: source.name, timestamps: String(replay.timestamps), ratePerSecond: replay.ratePerSecond },
    *requests(s) {
      const rng = new Rng(mix32(s.seed, 0xad715e));
      const text = traceText(s.seed);
      const meanGap = 1000 / (replay.ratePerSecond * s.rateMultiplier);
      let poisson = 0;
      let last = 0;
      let n = 0;
      for (const line of source.lines()) {
        if (n >= replay.maxRequests) return;
        const e = readEntryOr(replay.badLines, line, source.name, replay.outputTokens);
        if (e === undefined) continue;
        const stamp = e.kind === "trace" ? e.record.timestampMs : e.timestampMs;
        let arrivalMs: number;
        if (replay.timestamps) arrivalMs = Math.max(last, ((stamp ?? replay.firstMs) - replay.firstMs) / s.rateMultiplier);
        else arrivalMs = poisson += rng.exponential(meanGap);
        if (arrivalMs >= s.durationMs) return;
        last = arrivalMs;
        const id = `${replay.name}-${n++}`;
        if (e.kind === "trace") {
          yield traceRequest(e.record, id, arrivalMs, text, MOONCAKE_BLOCK_TOKENS);
          continue;
        }
        const request: BenchRequest = {
          id,
          arrivalMs,
          body: replay.bodyOf === undefined ? e.body : replay.bodyOf(e),
          outputTokens: e.outputTokens,
          ...(e.tenant === undefined ? {} : { tenant: e.tenant }),
        };
        yield request;
      }
    },
  };
}
