/**
 * `prefix-router advise LOG.jsonl`: reads a request log (streamed, several passes), prints the
 * reuse ceilings, the drift findings, what each strategy gets on the virtual fleet and a
 * recommendation; writes `--json` and an `--report` HTML file. A progress bar (cli-progress,
 * optional) appears on a terminal once the work has taken two seconds.
 */
import { writeFile } from "node:fs/promises";
import type { BenchCliIo } from "../bench/cli.js";
import { progressBar } from "../common/progress.js";
import { BenchError, isBenchError } from "../common/errors.js";
import { parseCommandLine, parseNumbers, parseTokenCount, splitList } from "../common/cli.js";
import { importOptional } from "../common/optional.js";
import { ADVISE_PREFIX_LENGTHS, ADVISE_STRATEGIES, type AdviseOptions, type AdviseProgress, adviseLog } from "./advise.js";
import { formatAdvice } from "./format.js";
import { checkMaxLineBytes } from "./lines.js";
import { renderAdviceHtml } from "./report.js";

/** Help text of `prefix-router advise`. */
export const ADVISE_USAGE = `Usage: prefix-router advise LOG.jsonl [options]

Reads a request log — one JSON object a line: OpenAI chat or Responses bodies, SageMaker
payloads, or a Mooncake trace; optional "timestamp" — and reports the reuse its prompts allow,
where requests that should share a prefix diverge (drift) and what that costs, what each
routing strategy gets on it on the virtual fleet, and the settings to use.

Options:
  --instances N              replicas of your fleet (default: 7)
  --capacity TOKENS          KV cache per replica: 1.2M, 600k (default: 1.2M)
  --strategies LIST          strategies to compare (default: ${ADVISE_STRATEGIES.join(",")})
  --prefix-length LIST       prefix lengths for prefix-aware (default: ${ADVISE_PREFIX_LENGTHS.join(",")})
  --threshold LIST           concurrency thresholds (default: 32)
  --requests-per-second R    arrival rate of a log without timestamps (default: 1 per replica)
  --rate X                   multiply the arrival rate; timestamps are compressed by X (default: 1)
  --output-tokens N          answer length of requests that do not say (default: 200)
  --limit N                  read at most N requests
  --max-line-bytes N         longest line read, bytes (default: 67108864)
  --skip-bad-lines           count bad lines (no request, too deep, too long) instead of stopping
  --routers N                independent router processes (default: 1)
  --seed N                   seed of the replay (default: 1)
  --drift-only               skip the replay on the virtual fleet (fast)
  --json FILE|-              write the report as JSON ("-": stdout, the summary goes to stderr)
  --report FILE.html         write an HTML report with charts (needs vega and vega-lite)
  -q, --quiet                no progress bar
  -h, --help                 this help

Example:
  prefix-router advise requests.jsonl --instances 4 --report advice.html`;

const STAGES: readonly AdviseProgress["stage"][] = ["reading", "pricing drifts", "replaying", "replaying with fixes"];

/**
 * Runs `prefix-router advise` with `argv` (the arguments after `advise`).
 * @returns the exit code: 0 on success, 2 on a usage error, 1 on any other failure
 */
export async function runAdviseCommand(argv: readonly string[], io: BenchCliIo): Promise<number> {
  try {
    const { path, options, json, report, quiet, help } = parseAdviseArgs(argv);
    if (help) {
      io.out(ADVISE_USAGE);
      return 0;
    }
    if (report !== undefined) {
      // Fail before a long run, not after it.
      await importOptional("vega", () => import("vega"));
      await importOptional("vega-lite", () => import("vega-lite"));
    }
    const bar = quiet || !process.stderr.isTTY ? undefined : await progressBar(io, "advise");
    let advice;
    try {
      advice = await adviseLog(path, {
        ...options,
        ...(bar && { onProgress: (p: AdviseProgress) => bar.update({ run: STAGES.indexOf(p.stage), runs: STAGES.length, label: p.stage, fraction: p.fraction }) }),
      });
    } finally {
      bar?.stop();
    }
    const text = formatAdvice(advice);
    const serialized = JSON.stringify(advice, null, 2);
    if (json === "-") {
      io.err(text);
      io.out(serialized);
    } else {
      io.out(text);
      if (json !== undefined) {
        await writeFile(json, `${serialized}\n`);
        io.err(`Wrote ${json}`);
      }
    }
    if (report !== undefined) {
      await writeFile(report, await renderAdviceHtml(advice));
      io.err(`Wrote ${report}`);
    }
    return 0;
  } catch (e) {
    if (isBenchError(e)) {
      io.err(`prefix-router advise: ${e.message}`);
      if (e.code === "ERR_BENCH_OPTION") io.err("Run `prefix-router advise --help` for the options.");
      return e.code === "ERR_BENCH_OPTION" ? 2 : 1;
    }
    throw e;
  }
}

/** The parsed command line of `prefix-router advise`. */
export interface AdviseArgs {
  readonly path: string;
  readonly options: AdviseOptions;
  readonly json: string | undefined;
  readonly report: string | undefined;
  readonly quiet: boolean;
  readonly help: boolean;
}

/**
 * Parses the arguments of `prefix-router advise`.
 * @throws {BenchError} `ERR_BENCH_OPTION` for unknown options, malformed values or a missing log
 */
export function parseAdviseArgs(argv: readonly string[]): AdviseArgs {
  const parsed = parseCommandLine(argv, true, {
    instances: { type: "string" },
    capacity: { type: "string" },
    strategies: { type: "string", multiple: true },
    "prefix-length": { type: "string", multiple: true },
    threshold: { type: "string", multiple: true },
    "requests-per-second": { type: "string" },
    rate: { type: "string" },
    "output-tokens": { type: "string" },
    limit: { type: "string" },
    "max-line-bytes": { type: "string" },
    "skip-bad-lines": { type: "boolean" },
    routers: { type: "string" },
    seed: { type: "string" },
    "drift-only": { type: "boolean" },
    json: { type: "string" },
    report: { type: "string" },
    quiet: { type: "boolean", short: "q" },
    help: { type: "boolean", short: "h" },
  });
  const v = parsed.values as Record<string, string | boolean | string[] | undefined>;
  const help = v["help"] === true;
  const path = parsed.positionals[0];
  if (!help && (path === undefined || parsed.positionals.length > 1)) {
    throw new BenchError("ERR_BENCH_OPTION", `Expected one request log file, got ${parsed.positionals.length === 0 ? "none" : parsed.positionals.join(" ")}`);
  }
  const one = (name: string, integer: boolean): number | undefined => parseNumbers(v[name] === undefined ? undefined : [v[name] as string], `--${name}`, integer)?.[0];
  const options: AdviseOptions = {
    ...(v["instances"] !== undefined && { instances: one("instances", true)! }),
    ...(v["capacity"] !== undefined && { capacityTokens: parseTokenCount(v["capacity"] as string, "--capacity") }),
    ...(v["strategies"] !== undefined && { strategies: splitList(v["strategies"] as string[])! }),
    ...(v["prefix-length"] !== undefined && { prefixLengths: parseNumbers(v["prefix-length"] as string[], "--prefix-length", true)! }),
    ...(v["threshold"] !== undefined && { concurrencyThresholds: parseNumbers(v["threshold"] as string[], "--threshold", true)! }),
    ...(v["requests-per-second"] !== undefined && { ratePerSecond: one("requests-per-second", false)! }),
    ...(v["rate"] !== undefined && { rateMultiplier: one("rate", false)! }),
    ...(v["output-tokens"] !== undefined && { outputTokens: one("output-tokens", true)! }),
    ...(v["limit"] !== undefined && { maxRequests: one("limit", true)! }),
    ...(v["max-line-bytes"] !== undefined && { maxLineBytes: checkMaxLineBytes(one("max-line-bytes", true), "--max-line-bytes") }),
    ...(v["skip-bad-lines"] === true && { badLines: "skip" as const }),
    ...(v["routers"] !== undefined && { routers: one("routers", true)! }),
    ...(v["seed"] !== undefined && { seed: one("seed", true)! }),
    ...(v["drift-only"] === true && { simulate: false }),
  };
  return { path: path ?? "", options, json: v["json"] as string | undefined, report: v["report"] as string | undefined, quiet: v["quiet"] === true, help };
}
