/**
 * The `prefix-router fleet` subcommand: starts a live emulated fleet for trying the SDK by
 * hand and prints one line per instance. Runs until SIGINT/SIGTERM.
 */

import { parseArgs } from "node:util";
import type { EngineConfig } from "./config.js";
import { FAULT_OPTIONS, FAULT_USAGE, applyFaultPlan, parseFaults } from "./cli-faults.js";
import { isFleetError } from "./errors.js";
import { DEFAULT_MODEL, startFleet, type LiveFleet } from "./live.js";
import { DEFAULT_LLAMA_INSTANCES, DEFAULT_LLAMA_MODEL, startLlamaFleet } from "./llama/index.js";

/** Where a CLI command writes, and how it waits for the signal to stop (injected for tests). */
export interface CliIo {
  out(line: string): void;
  err(line: string): void;
  /** Resolves when the process should shut down. */
  untilStopped(): Promise<void>;
}

/** Help text of `prefix-router fleet`. */
export const FLEET_USAGE = `Usage: prefix-router fleet [options]

Starts emulated vLLM-like instances (OpenAI and SageMaker Runtime protocols) on loopback, or,
with --engine llama, real llama.cpp engines serving a tiny generated model (docs/real-engines.md).

Options:
  --engine <name>           emulated (default) or llama
  --instances <n>           number of instances (default 7; 4 with --engine llama)
  --port <p>                port of the first instance, the next ones follow; 0 = ephemeral (default 8000)
  --host <addr>             interface to listen on (default 127.0.0.1)
  --time-scale <x>          wall-clock ms per model ms; 0.1 runs 10x faster (default 1)
  --model <name>            served model, repeatable; the first is the default (default ${DEFAULT_MODEL})
  --num-gpu-blocks <n>      KV-cache capacity per instance in 16-token blocks (default 75000)
  --max-num-seqs <n>        running sequences per instance (default 256)
  --default-max-tokens <n>  output tokens when a request sets no limit (default 64)
  --step-jitter <x>         relative noise on each engine step, 0 to below 1, drawn from the seed (default 0)
  --cache <kind>            paged (vLLM's shared cache, default) or slots (llama.cpp's slots, docs/fleet.md)
  --slots <n>               with --cache slots: slots per instance (default 4)
  --seed <n>                seed of the fault draws: the same seed fails the same requests (default 0);
                            with --engine llama, seed of the model's weights
  -h, --help                show this help

With --engine llama (needs node-llama-cpp: npm run engines:llama), also:
  --slots <n>               slots per engine, each with its own KV cache (default 4)
  --context-size <n>        tokens per slot (default 8192)
  --kv-events-port <n>      publish each engine's KV-cache events in vLLM's format on a ZeroMQ
                            PUB socket, engine i on port n + i (llama-server publishes none)
  (--instances, --port, --host, --model (one name), --default-max-tokens (default 16) and --seed
  apply; the options of the emulated engine and the faults do not)

${FAULT_USAGE}`;

function intOption(values: Record<string, unknown>, name: string): number | undefined {
  const v = values[name];
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new Error(`--${name} expects a number, got ${String(v)}`);
  return n;
}

/** Runs `prefix-router fleet` with `argv` (the arguments after `fleet`); returns the exit code. */
export async function runFleetCommand(argv: readonly string[], io: CliIo): Promise<number> {
  let fleet: LiveFleet;
  let stopFaults: () => void;
  let models: readonly string[];
  try {
    const { values } = parseArgs({
      args: [...argv],
      options: {
        instances: { type: "string" },
        port: { type: "string" },
        host: { type: "string" },
        "time-scale": { type: "string" },
        model: { type: "string", multiple: true },
        "num-gpu-blocks": { type: "string" },
        "max-num-seqs": { type: "string" },
        "default-max-tokens": { type: "string" },
        "step-jitter": { type: "string" },
        seed: { type: "string" },
        engine: { type: "string" },
        slots: { type: "string" },
        cache: { type: "string" },
        "context-size": { type: "string" },
        "kv-events-port": { type: "string" },
        ...FAULT_OPTIONS,
        help: { type: "boolean", short: "h" },
      },
      strict: true,
      allowPositionals: false,
    });
    if (values.help) {
      io.out(FLEET_USAGE);
      return 0;
    }
    const engineName = values.engine ?? "emulated";
    if (engineName === "llama") return await runLlamaFleet(values, io);
    if (engineName !== "emulated") throw new Error(`--engine expects emulated or llama, got ${engineName}`);
    if (values["context-size"] !== undefined) throw new Error("--context-size applies to --engine llama only");
    if (values["kv-events-port"] !== undefined) throw new Error("--kv-events-port applies to --engine llama only");
    const cache = values.cache ?? "paged";
    if (cache !== "paged" && cache !== "slots") throw new Error(`--cache expects paged or slots, got ${cache}`);
    if (cache === "paged" && values.slots !== undefined) throw new Error("--slots applies to --cache slots or --engine llama");
    const engine: Partial<EngineConfig> = {};
    if (cache === "slots") engine.slots = intOption(values, "slots") ?? 4;
    const blocks = intOption(values, "num-gpu-blocks");
    if (blocks !== undefined) engine.numGpuBlocks = blocks;
    const seqs = intOption(values, "max-num-seqs");
    if (seqs !== undefined) engine.maxNumSeqs = seqs;
    const jitter = intOption(values, "step-jitter");
    if (jitter !== undefined) engine.stepJitter = jitter;
    const seed = intOption(values, "seed") ?? 0;
    if (!Number.isSafeInteger(seed) || seed < 0) throw new Error(`--seed expects an integer >= 0, got ${String(values.seed)}`);
    const faults = parseFaults(values);
    models = values.model ?? [DEFAULT_MODEL];
    fleet = await startFleet({
      instances: intOption(values, "instances") ?? 7,
      port: intOption(values, "port") ?? 8000,
      host: values.host ?? "127.0.0.1",
      timeScale: intOption(values, "time-scale") ?? 1,
      models,
      defaultMaxTokens: intOption(values, "default-max-tokens") ?? 64,
      seed,
      engine,
    });
    try {
      stopFaults = await applyFaultPlan(fleet, faults, io.out);
    } catch (e) {
      await fleet.stop();
      throw e;
    }
  } catch (e) {
    io.err(`prefix-router fleet: ${isFleetError(e) || e instanceof Error ? e.message : String(e)}`);
    io.err("Run `prefix-router fleet --help` for the options.");
    return 2;
  }
  for (const inst of fleet.instances) io.out(`${inst.id}\t${inst.url}`);
  io.out(servedModels(models));
  io.out(`OpenAI baseURL: <url>/v1   SageMaker endpoint: <url>   metrics: <url>/metrics   (Ctrl-C stops)`);
  await io.untilStopped();
  stopFaults();
  await fleet.stop();
  return 0;
}

/** Options of the emulated engine, refused with `--engine llama`. */
const EMULATED_ONLY = ["cache", "time-scale", "num-gpu-blocks", "max-num-seqs", "step-jitter", "error-rate", "error-status", "slow", "kill"] as const;

/** `prefix-router fleet --engine llama`: real llama.cpp engines until stopped. */
async function runLlamaFleet(values: Record<string, unknown>, io: CliIo): Promise<number> {
  for (const flag of EMULATED_ONLY) {
    if (values[flag] !== undefined) throw new Error(`--${flag} applies to the emulated engine only`);
  }
  const models = values.model as string[] | undefined;
  if (models !== undefined && models.length > 1) throw new Error("--engine llama serves one model: give --model once");
  const fleet = await startLlamaFleet({
    instances: intOption(values, "instances") ?? DEFAULT_LLAMA_INSTANCES,
    slots: intOption(values, "slots"),
    contextSize: intOption(values, "context-size"),
    seed: intOption(values, "seed"),
    port: intOption(values, "port") ?? 8000,
    host: (values.host as string | undefined) ?? "127.0.0.1",
    modelName: models?.[0],
    defaultMaxTokens: intOption(values, "default-max-tokens"),
    ...(values["kv-events-port"] !== undefined && { kvEvents: { port: intOption(values, "kv-events-port") } }),
  });
  for (const t of fleet.targets) io.out(`${t.id}\t${t.url}${t.kvEvents === undefined ? "" : `\tkv events ${t.kvEvents.endpoint}`}`);
  io.out(servedModels([models?.[0] ?? DEFAULT_LLAMA_MODEL]));
  io.out(`tokenizer: ${fleet.tokenizerDir} (tokenizer.json, tokenizer_config.json)`);
  io.out(`OpenAI baseURL: <url>/v1   metrics: <url>/metrics   llama.cpp engines, pids ${fleet.targets.map((t) => t.pid).join(" ")}   (Ctrl-C stops)`);
  await io.untilStopped();
  await fleet.close();
  return 0;
}

/** The models the fleet serves, one line: a request names one of them (none: the first), any other name is a 404. */
function servedModels(models: readonly string[]): string {
  return models.length === 1 ? `model: ${models[0]}` : `models: ${models[0]} (the default), ${models.slice(1).join(", ")}`;
}
