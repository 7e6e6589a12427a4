/**
 * `prefix-router bench`: runs {@link runBenchmark} from the command line, prints the result
 * table, and writes `--json` rows and an `--report` HTML file. A progress bar (cli-progress,
 * optional) appears on a terminal once a run has taken more than two seconds.
 */
import { writeFile } from "node:fs/promises";
import { BenchError, isBenchError } from "../common/errors.js";
import { parseBenchArgs } from "./options.js";
import { renderHtmlReport } from "./report.js";
import { progressBar } from "../common/progress.js";
import { BENCH_STRATEGIES } from "./registry.js";
import { runBenchmark } from "./run.js";
import type { BenchOptions, BenchProgress } from "./run.js";
import { formatReport } from "./table.js";
import { loadTrace, traceWorkload } from "./trace.js";
import { WORKLOAD_NAMES } from "./workloads.js";
import { LOAD_VIEW_NAMES, type LoadViewName } from "./load-views.js";
import type { WorkloadName } from "./workloads.js";
import type { Workload } from "./workload.js";
import { importOptional } from "../common/optional.js";
import { isRouterError } from "prefix-router";
import { runEngineBenchCommand } from "./engines/cli.js";

/** Output of the command: line writers for stdout and stderr. */
export interface BenchCliIo {
  out(line: string): void;
  err(line: string): void;
}

/** Help text of `prefix-router bench`. */
export const BENCH_USAGE = `Usage: prefix-router bench [options]

Replays deterministic workloads on the emulated virtual-time fleet with every routing strategy
(the same request sequence for each) and reports TTFT, hit rate vs ideal, shares and spillover.
Every option taking a list accepts comma-separated values or repeats; each value is one row.

Options:
  --workload LIST        ${WORKLOAD_NAMES.join(",")} (default: all; with --trace: none)
  --trace FILE           replay a Mooncake JSONL trace (workload "trace")
  --strategies LIST      ${BENCH_STRATEGIES.join(",")} (default: all; peer:* are models of other routers),
                         or precise-prefix (only when named: routes on the fleet's KV events)
  --kv-lag T             precise-prefix: an event's delay from the engine to the routers, in
                         virtual time (default: 50ms)
  --instances LIST       instances at the start (default: 7)
  --prefix-length LIST   routing prefix in characters, 1024-65536 (default: the workload's, else 4096)
  --threshold LIST       concurrency threshold, 1-1024 (default: 32)
  --capacity LIST        KV cache per instance in tokens: 1.2M, 600k, 300000 (default: 1.2M)
  --rate LIST            arrival-rate multiplier (default: 1)
  --duration LIST        simulated time: 90s, 30m, 1h, 1h30m (default: the workload's)
  --seed LIST            seeds or ranges, e.g. 1-5 (default: 1); with several, means with
                         95% intervals and paired comparisons with longest-prefix
  --routers LIST         independent router processes, each request through a random one
                         (application replicas that each embed the router; default: 1)
  --load-view LIST       local,engine,engine-requests,redis: how each router process sees the
                         fleet's load (default: local), modelled in virtual time; engine reads
                         request and queued-uncached-token gauges, engine-requests only requests
  --engine-poll LIST     engine view: /metrics poll interval, e.g. 100ms,250ms (default: 100ms)
  --redis-rtt T          redis view: round trip to Redis (default: 0.5ms)
  --redis-refresh T      redis view: reads between writes while a process has requests in
                         flight (default: 5ms; with none in flight: max(100ms, T))
  --scale-at T:+N|T:-N   add or remove N instances at time T (repeatable), e.g. 30m:+1
  --restart-at T:I[:D]   restart instance I at time T, its cache emptied, down for D first
                         (repeatable), e.g. 10m:i3 or 10m:i3:1m; each strategy also runs
                         without restarts, to measure the recovery
  --engine LIST          run on real engines in real time instead: llama, emulated
                         (\`prefix-router bench --engine llama --help\` for its options)
  --shadow STRATEGY      run STRATEGY as a shadow beside each of prefix-router's strategies:
                         its picks are computed, never acted on; prints its agreement and
                         predicted hit rate beside the run
  --shadow-placement P   own or live: whether the shadow's state follows its own picks
                         (what a switch would yield) or the live placement (default: own)
  --json FILE|-          write the rows as a JSON array ("-": stdout, the table goes to stderr)
  --report FILE.html     write an HTML report with charts (needs vega and vega-lite)
  -q, --quiet            no progress bar
  -h, --help             this help

Example:
  prefix-router bench --workload long-context --duration 1h --json results.json --report report.html`;

/**
 * Runs `prefix-router bench` with `argv` (the arguments after `bench`).
 * @returns the exit code: 0 on success, 2 on a usage error, 1 on any other failure
 */
export async function runBenchCommand(argv: readonly string[], io: BenchCliIo): Promise<number> {
  try {
    if (argv.some((a) => a === "--engine" || a.startsWith("--engine="))) return await engineCommand(argv, io);
    const args = parseBenchArgs(argv);
    if (args.help) {
      io.out(BENCH_USAGE);
      return 0;
    }
    const workloads: (Workload | WorkloadName)[] = [];
    const names = args.workloads ?? (args.traceFile === undefined ? [...WORKLOAD_NAMES] : []);
    for (const n of names) {
      if (!(WORKLOAD_NAMES as readonly string[]).includes(n)) {
        throw new BenchError("ERR_BENCH_OPTION", `Unknown workload \`${n}\`; expected one of ${WORKLOAD_NAMES.join(", ")}`);
      }
      workloads.push(n as WorkloadName);
    }
    if (args.traceFile !== undefined) workloads.push(traceWorkload(await loadTrace(args.traceFile)));
    if (args.report !== undefined) {
      // Fail before a long run, not after it.
      await importOptional("vega", () => import("vega"));
      await importOptional("vega-lite", () => import("vega-lite"));
    }
    const progress = args.quiet || !process.stderr.isTTY ? undefined : await progressBar(io, "bench");
    const options: BenchOptions = {
      workloads,
      ...(args.strategies && { strategies: args.strategies }),
      ...(args.instances && { instances: args.instances }),
      ...(args.prefixLengths && { prefixLengths: args.prefixLengths }),
      ...(args.concurrencyThresholds && { concurrencyThresholds: args.concurrencyThresholds }),
      ...(args.capacityTokens && { capacityTokens: args.capacityTokens }),
      ...(args.rateMultipliers && { rateMultipliers: args.rateMultipliers }),
      ...(args.durationsMs && { durationsMs: args.durationsMs }),
      ...(args.seeds && { seeds: args.seeds }),
      ...(args.routers && { routers: args.routers }),
      ...(args.kvLagMs !== undefined && { kvLagMs: args.kvLagMs }),
      ...(args.loadViews && { loadViews: checkLoadViews(args.loadViews) }),
      ...(args.enginePollIntervalsMs && { enginePollIntervalsMs: args.enginePollIntervalsMs }),
      ...(args.redisRttMs !== undefined && { redisRttMs: args.redisRttMs }),
      ...(args.redisRefreshMs !== undefined && { redisRefreshMs: args.redisRefreshMs }),
      ...(args.shadow !== undefined && { shadow: args.shadow }),
      ...(args.shadowPlacement !== undefined && { shadowPlacement: args.shadowPlacement as "own" | "live" }),
      scaleEvents: args.scaleEvents,
      restarts: args.restarts,
      ...(progress && { onProgress: progress.update }),
    };
    const started = performance.now();
    let rows;
    try {
      rows = await runBenchmark(options);
    } finally {
      progress?.stop();
    }
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    const text = `${formatReport(rows)}\n${rows.length} rows in ${seconds} s wall time.`;
    if (args.json === "-") {
      io.err(text);
      io.out(JSON.stringify(rows, null, 2));
    } else {
      io.out(text);
      if (args.json !== undefined) {
        await writeFile(args.json, `${JSON.stringify(rows, null, 2)}\n`);
        io.err(`Wrote ${args.json}`);
      }
    }
    if (args.report !== undefined) {
      await writeFile(args.report, await renderHtmlReport(rows));
      io.err(`Wrote ${args.report}`);
    }
    return 0;
  } catch (e) {
    if (isBenchError(e)) {
      io.err(`prefix-router bench: ${e.message}`);
      if (e.code === "ERR_BENCH_OPTION") io.err("Run `prefix-router bench --help` for the options.");
      return e.code === "ERR_BENCH_OPTION" ? 2 : 1;
    }
    throw e;
  }
}

/** `bench --engine …`: a missing node-llama-cpp is one line and exit code 1, like a missing chart package. */
async function engineCommand(argv: readonly string[], io: BenchCliIo): Promise<number> {
  try {
    return await runEngineBenchCommand(argv, io);
  } catch (e) {
    if (isRouterError(e) && e.code === "ERR_MISSING_PEER") {
      io.err(`prefix-router bench: ${e.message}`);
      return 1;
    }
    throw e;
  }
}

function checkLoadViews(names: readonly string[]): LoadViewName[] {
  for (const n of names) {
    if (!(LOAD_VIEW_NAMES as readonly string[]).includes(n)) {
      throw new BenchError("ERR_BENCH_OPTION", `Unknown load view \`${n}\`; expected one of ${LOAD_VIEW_NAMES.join(", ")}`);
    }
  }
  return names as LoadViewName[];
}
