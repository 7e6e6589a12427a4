/**
 * `prefix-router bench --engine llama|emulated[,…]`: the strategies side by side on real engines
 * ({@link runEngineBench}), in real time. Prints the table and the checks; `--json` writes the
 * rows and every request's record, `--report` an HTML page.
 */
import { writeFile } from "node:fs/promises";
import { BenchError } from "../../common/errors.js";
import { parseCommandLine, parseDuration, parseNumbers, splitList } from "../../common/cli.js";
import { parseSeeds } from "../options.js";
import { importOptional } from "../../common/optional.js";
import { STRATEGIES } from "prefix-router";
import { VARIANT_NAMES, isVariant } from "../variants.js";
import { ENGINE_KINDS, type EngineBenchResult, type EngineKind, type EngineStrategy, runEngineBench } from "./run.js";
import { ENGINE_WORKLOAD_NAMES, type EngineWorkloadName, engineWorkload } from "./workloads.js";
import { type EngineRow, engineChecks, engineRows, emulatorCheck, formatEngineReport, renderEngineHtml } from "./report.js";
import { compareEngineSeeds, engineSeedsReport, referenceStrategy, summarizeEngineSeeds } from "./seeds.js";

/** Where the command writes. */
export interface EngineCliIo {
  out(line: string): void;
  err(line: string): void;
}

/** The strategies a real-engine run compares by default. */
export const ENGINE_DEFAULT_STRATEGIES: readonly EngineStrategy[] = ["random", "least-outstanding", "prefix-aware", "longest-prefix"];

/** Help text of `prefix-router bench --engine`. */
export const ENGINE_BENCH_USAGE = `Usage: prefix-router bench --engine llama|emulated[,...] [options]

Runs the strategies side by side on real engines, in real time: each strategy gets its own
cold fleet and plays the same sessions through the router and the openai client, streaming.
llama: llama.cpp processes with slot caches (needs node-llama-cpp: npm run engines:llama).
emulated: the emulated fleet configured alike (slots, context, timing fitted to the llama run).

Options:
  --engine LIST          llama, emulated (both: the emulator checked against llama.cpp)
  --workload NAME        ${ENGINE_WORKLOAD_NAMES.join(", ")} (default: short-prompts)
  --strategies LIST      default: ${ENGINE_DEFAULT_STRATEGIES.join(",")}; also precise-prefix
                         (its engines publish KV events; every router process subscribes)
  --instances N          engines per fleet (default: 4)
  --slots N              slots per engine (default: 4)
  --context-size N       tokens per slot (default: 8192)
  --concurrency N        sessions in flight (default: 4)
  --routers LIST         application processes in front of the engines, each with its own
                         router; each turn through one drawn from the seed; a run per
                         number, e.g. 1,4 (default: 1, the bench's own process)
  --sessions N           sessions per strategy (default: the workload's, 160 or 48)
  --max-tokens N         output tokens per request (default: 16)
  --prefix-length N      the router's prefixLength (default: the router's)
  --seed LIST            workload, router and model seeds or ranges, e.g. 1-5 (default: 1); a
                         whole run per seed, then means with 95% intervals and each strategy
                         paired by seed with prefix-aware (else the first strategy)
  --time-limit T         stop starting rounds after T per engine kind, e.g. 20m
  --no-checks            print the checks without failing the run (exit code 0) when one is missed
  --json FILE            write rows, checks and every request's record
  --report FILE.html     write an HTML report (needs vega and vega-lite)
  -q, --quiet            no progress lines
  -h, --help             this help

Strategies take turns by rounds of 4 × concurrency sessions each ("round 1/3"), so a busy
machine slows every strategy alike. Exit code 1 when a printed check is missed (unless
--no-checks). The columns and checks: docs/real-engines.md#benchmark-on-real-engines.

Example:
  prefix-router bench --engine llama,emulated --workload short-prompts --json llama.json`;

function integer(v: unknown, option: string, min: number, max: number): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (typeof v !== "string" || v === "" || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new BenchError("ERR_BENCH_OPTION", `Expected \`${option}\` to be an integer from ${min} to ${max}, got "${String(v)}"`);
  }
  return n;
}

/** The parsed options of a real-engine run. */
export interface EngineArgs {
  help: boolean;
  engines: EngineKind[];
  workload: EngineWorkloadName;
  strategies: EngineStrategy[];
  instances: number;
  slots: number;
  contextSize: number;
  concurrency: number;
  /** Router processes, a run per number. */
  routers: number[];
  sessions: number | undefined;
  maxTokens: number;
  prefixLength: number | undefined;
  /** A whole run per seed. */
  seeds: number[];
  timeLimitMs: number | undefined;
  json: string | undefined;
  report: string | undefined;
  quiet: boolean;
  /** Whether a missed check fails the run (exit code 1); `--no-checks` turns it off. */
  checks: boolean;
}

/**
 * Parses the command line of `prefix-router bench --engine …`.
 * @throws {BenchError} `ERR_BENCH_OPTION` naming the option and the value
 */
export function parseEngineArgs(argv: readonly string[]): EngineArgs {
  const { values: v } = parseCommandLine(argv, false, {
    engine: { type: "string", multiple: true },
    workload: { type: "string" },
    strategies: { type: "string", multiple: true },
    instances: { type: "string" },
    slots: { type: "string" },
    "context-size": { type: "string" },
    concurrency: { type: "string" },
    routers: { type: "string", multiple: true },
    sessions: { type: "string" },
    "max-tokens": { type: "string" },
    "prefix-length": { type: "string" },
    seed: { type: "string", multiple: true },
    "time-limit": { type: "string" },
    json: { type: "string" },
    report: { type: "string" },
    quiet: { type: "boolean", short: "q" },
    "no-checks": { type: "boolean" },
    help: { type: "boolean", short: "h" },
  });
  const engines = splitList(v.engine as string[] | undefined) ?? [];
  for (const e of engines) {
    if (!(ENGINE_KINDS as readonly string[]).includes(e)) throw new BenchError("ERR_BENCH_OPTION", `Unknown engine \`${e}\`; expected one of ${ENGINE_KINDS.join(", ")}`);
  }
  const workload = (v.workload as string | undefined) ?? "short-prompts";
  if (!(ENGINE_WORKLOAD_NAMES as readonly string[]).includes(workload)) {
    throw new BenchError("ERR_BENCH_OPTION", `Unknown workload \`${workload}\` for real engines; expected one of ${ENGINE_WORKLOAD_NAMES.join(", ")}`);
  }
  const strategies = splitList(v.strategies as string[] | undefined) ?? [...ENGINE_DEFAULT_STRATEGIES];
  for (const s of strategies) {
    if (!(STRATEGIES as readonly string[]).includes(s) && !isVariant(s) && s !== "precise-prefix") {
      throw new BenchError("ERR_BENCH_OPTION", `Unknown strategy \`${s}\`; expected one of ${[...STRATEGIES, ...VARIANT_NAMES, "precise-prefix"].join(", ")}`);
    }
  }
  const timeLimit = v["time-limit"] as string | undefined;
  const seeds = [...new Set(parseSeeds(v.seed as string[] | undefined) ?? [1])];
  for (const n of seeds) {
    if (n > 2 ** 31 - 1) throw new BenchError("ERR_BENCH_OPTION", `Expected \`--seed\` to hold integers from 0 to ${2 ** 31 - 1}, got ${n}`);
  }
  if (seeds.length > 1 && v.report !== undefined) throw new BenchError("ERR_BENCH_OPTION", "`--report` draws one run: give it one `--seed`");
  const routers = parseNumbers(v.routers as string[] | undefined, "--routers", true) ?? [1];
  for (const n of routers) {
    if (n < 1 || n > 64) throw new BenchError("ERR_BENCH_OPTION", `Expected \`--routers\` to be integers from 1 to 64, got ${n}`);
  }
  return {
    help: v.help === true,
    engines: [...new Set(engines)] as EngineKind[],
    workload: workload as EngineWorkloadName,
    strategies: [...new Set(strategies)] as EngineStrategy[],
    instances: integer(v.instances, "--instances", 1, 16) ?? 4,
    slots: integer(v.slots, "--slots", 1, 64) ?? 4,
    contextSize: integer(v["context-size"], "--context-size", 256, 131_072) ?? 8192,
    concurrency: integer(v.concurrency, "--concurrency", 1, 256) ?? 4,
    routers: [...new Set(routers)],
    sessions: integer(v.sessions, "--sessions", 1, 100_000),
    maxTokens: integer(v["max-tokens"], "--max-tokens", 1, 4096) ?? 16,
    prefixLength: integer(v["prefix-length"], "--prefix-length", 1024, 65_536),
    seeds,
    timeLimitMs: timeLimit === undefined ? undefined : parseDuration(timeLimit, "--time-limit"),
    json: v.json as string | undefined,
    report: v.report as string | undefined,
    quiet: v.quiet === true,
    checks: v["no-checks"] !== true,
  };
}

/**
 * Runs `prefix-router bench --engine …` with `argv` (the arguments after `bench`).
 * @returns the exit code: 0 on success, 1 when a printed check was missed (0 with `--no-checks`), 2 on a usage error; other failures are thrown to the caller
 */
export async function runEngineBenchCommand(argv: readonly string[], io: EngineCliIo): Promise<number> {
  const args = parseEngineArgs(argv);
  if (args.help) {
    io.out(ENGINE_BENCH_USAGE);
    return 0;
  }
  if (args.engines.length === 0) throw new BenchError("ERR_BENCH_OPTION", "Expected `--engine` to name llama or emulated");
  if (args.report !== undefined) {
    await importOptional("vega", () => import("vega"));
    await importOptional("vega-lite", () => import("vega-lite"));
  }
  const several = args.seeds.length > 1;
  const perSeed: { seed: number; result: EngineBenchResult; rows: EngineRow[] }[] = [];
  for (const seed of args.seeds) {
    const workload = engineWorkload(args.workload, seed, args.sessions === undefined ? {} : { sessions: args.sessions });
    const started = performance.now();
    const result = await runEngineBench({
      engines: args.engines,
      workload,
      strategies: args.strategies,
      instances: args.instances,
      slots: args.slots,
      contextSize: args.contextSize,
      concurrency: args.concurrency,
      routers: args.routers,
      maxTokens: args.maxTokens,
      seed,
      ...(args.timeLimitMs !== undefined && { timeLimitMs: args.timeLimitMs }),
      ...(args.prefixLength !== undefined && { router: { prefixLength: args.prefixLength } }),
      ...(!args.quiet && {
        onProgress: (p: { engine: EngineKind; routers: number; round: number; rounds: number }) =>
          io.err(`${several ? `seed ${seed}: ` : ""}${p.engine}${args.routers.length > 1 || p.routers > 1 ? ` ×${p.routers} routers` : ""}: round ${p.round}/${p.rounds} (strategies take turns, up to ${4 * args.concurrency} sessions each a round), ${((performance.now() - started) / 1000).toFixed(0)} s`),
      }),
    });
    const rows = engineRows(result);
    if (several) io.out(`Seed ${seed}:`);
    io.out(formatEngineReport(result, rows, args.checks));
    io.out(`${args.instances} engines × ${args.slots} slots, ${args.concurrency} sessions in flight, ${((performance.now() - started) / 1000).toFixed(0)} s wall time; Node.js ${process.version}`);
    if (several) io.out("");
    perSeed.push({ seed, result, rows });
  }
  if (several) io.out(engineSeedsReport(perSeed, args.strategies).join("\n"));
  if (args.json !== undefined) {
    const options = { ...args, json: undefined, report: undefined };
    const one = (s: (typeof perSeed)[number]) => ({ timing: s.result.timing, rows: s.rows, checks: engineChecks(s.rows), emulator: emulatorCheck(s.rows), runs: s.result.runs });
    const reference = referenceStrategy(args.strategies);
    const json = several
      ? {
          options,
          seeds: perSeed.map((s) => ({ seed: s.seed, ...one(s) })),
          acrossSeeds: { summaries: summarizeEngineSeeds(perSeed), reference, paired: reference === undefined ? [] : compareEngineSeeds(perSeed, reference) },
        }
      : { options, ...one(perSeed[0]!) };
    await writeFile(args.json, `${JSON.stringify(json, null, 2)}\n`);
    io.err(`Wrote ${args.json}`);
  }
  if (args.report !== undefined) {
    const { result, rows } = perSeed[0]!;
    await writeFile(args.report, await renderEngineHtml(result, rows));
    io.err(`Wrote ${args.report}`);
  }
  return args.checks && perSeed.some((s) => engineChecks(s.rows).some((c) => !c.met)) ? 1 : 0;
}
