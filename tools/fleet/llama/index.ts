/**
 * A fleet of real llama.cpp engines on loopback: `startLlamaFleet` generates the tiny model
 * (gguf.ts), starts one engine process per instance (engine-process.ts), each serving the
 * OpenAI/vLLM protocol (server.ts) with llama-server's slots (slots.ts), and returns the targets
 * to put a router in front of. See docs/real-engines.md.
 *
 * KV events (`kvEvents`): each engine publishes what its slots hold as vLLM's block events
 * (kv-events.ts), on a ZeroMQ socket per engine (`port + i`) and/or to `onBatch` in this process.
 *
 * Process lifetime: every engine is a child process of the caller with an IPC channel; it exits
 * when the channel closes, so it dies with its parent (even a killed one). `close()` stops them
 * (SIGTERM, then SIGKILL after {@link ENGINE_STOP_GRACE_MS}).
 */

import { spawn, type ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CACHE_DIR, cachedFile, processScript } from "../../common/process-script.js";
import { FleetError } from "../errors.js";
import { defaultInstanceIds } from "../virtual.js";
import type { EngineProcessConfig, EngineProcessMessage } from "./engine-process.js";
import { DEFAULT_TINY_LLAMA, tinyLlamaGguf, type TinyLlamaOptions } from "./gguf.js";
import type { KvEventBatch } from "./kv-events.js";
import { tinyLlamaTokenizerFiles } from "./tokenizer-files.js";
import { missingLlamaError, resolveNodeLlamaCpp } from "./runtime.js";
import { DEFAULT_SLOT_PROMPT_SIMILARITY, checkSimilarity } from "./slots.js";

/** Engine processes when `instances` is not given (3–4 suit a 2-core machine). */
export const DEFAULT_LLAMA_INSTANCES = 4;
/** Slots (context sequences) per engine when `slots` is not given. */
export const DEFAULT_LLAMA_SLOTS = 4;
/** Tokens per slot when `contextSize` is not given: the tiny model's context length. */
export const DEFAULT_LLAMA_CONTEXT_SIZE = DEFAULT_TINY_LLAMA.contextLength;
/** Output tokens when a request sets no limit. */
export const DEFAULT_LLAMA_MAX_TOKENS = 16;
/** The served model name when `modelName` is not given. */
export const DEFAULT_LLAMA_MODEL = "prefix-router/tiny-llama";
/** How long an engine gets to load and listen before `startLlamaFleet` gives up. */
export const DEFAULT_ENGINE_START_TIMEOUT_MS = 120_000;
/** How long `close()` waits after SIGTERM before SIGKILL. */
export const ENGINE_STOP_GRACE_MS = 5_000;

/** Options of {@link startLlamaFleet}. */
export interface LlamaFleetOptions {
  /** Engine processes (ids `i0`, `i1`, ...). @default DEFAULT_LLAMA_INSTANCES (4) */
  instances?: number;
  /** Slots per engine: requests it runs at once, each with its own KV cache. @default DEFAULT_LLAMA_SLOTS (4) */
  slots?: number;
  /** Tokens per slot (prompt and output). @default DEFAULT_LLAMA_CONTEXT_SIZE (8192) */
  contextSize?: number;
  /** Seed of the tiny model's weights. @default 0 */
  seed?: number;
  /** The tiny model's shape (see gguf.ts); its context length grows to `contextSize` if needed. @default DEFAULT_TINY_LLAMA */
  model?: Omit<TinyLlamaOptions, "seed">;
  /** llama-server's `--slot-prompt-similarity`; 0 picks by LRU only. @default DEFAULT_SLOT_PROMPT_SIMILARITY (0.1) */
  slotPromptSimilarity?: number;
  /** Output tokens when a request sets no limit. @default DEFAULT_LLAMA_MAX_TOKENS (16) */
  defaultMaxTokens?: number;
  /** The served model name. @default DEFAULT_LLAMA_MODEL */
  modelName?: string;
  /** Interface to listen on. @default "127.0.0.1" */
  host?: string;
  /** Port of the first engine; engine `i` listens on `port + i`. 0 = ephemeral ports. @default 0 */
  port?: number;
  /** How long each engine gets to start. @default DEFAULT_ENGINE_START_TIMEOUT_MS (120 s) */
  startTimeoutMs?: number;
  /** Publish each engine's KV-cache events (vLLM's block events, 16-token blocks); none when absent. @default undefined */
  kvEvents?: LlamaKvEventsOptions;
}

/**
 * Where the engines publish their KV-cache events (see kv-events.ts). llama-server publishes
 * none; these engines publish what each slot holds after each change.
 */
export interface LlamaKvEventsOptions {
  /**
   * Port of engine `i`'s ZeroMQ PUB socket: `port + i` on `host` (vLLM's default is 5557), in
   * vLLM's wire format; none when absent.
   * @default undefined
   */
  port?: number;
  /** Port of engine `i`'s replay ROUTER socket: `replayPort + i`; none when absent. @default undefined */
  replayPort?: number;
  /** Every batch, in this process too (over each engine's IPC channel), with the engine's id. @default undefined */
  onBatch?: (engine: string, batch: KvEventBatch) => void;
}

/** One engine of the fleet. */
export interface LlamaTarget {
  /** Instance id (also in the `x-prefix-router-instance` response header). */
  readonly id: string;
  /** The OpenAI client's base URL: `url` + `/v1`. */
  readonly baseURL: string;
  /** `http://127.0.0.1:PORT`: `/health` and `/metrics` are under it. */
  readonly url: string;
  /** Process id of the engine. */
  readonly pid: number;
  /** Its KV-event sockets, with `kvEvents.port` (and `replayPort`). */
  readonly kvEvents?: { readonly endpoint: string; readonly replayEndpoint: string | undefined };
}

/** A running fleet of llama.cpp engines. */
export interface LlamaFleet {
  readonly targets: readonly LlamaTarget[];
  /** The generated model file, in the shared cache folder `<tmpdir>/prefix-router-llama`. */
  readonly modelPath: string;
  /**
   * The model's tokenizer as Hugging Face files, `tokenizer.json` and `tokenizer_config.json`
   * (with its chat template), in a folder of the same cache (tokenizer-files.ts).
   */
  readonly tokenizerDir: string;
  /** Stops every engine process; safe to call more than once. */
  close(): Promise<void>;
}

function intOption(name: string, value: number, min: number, max: number): number {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new RangeError(`Expected \`${name}\` to be an integer from ${min} to ${max}, got ${String(value)}`);
  }
  return value;
}

/** `files` in a folder of the cache named by their hash, written once (aside, then renamed). */
async function cachedDir(files: Record<string, string>, name: string): Promise<string> {
  const hash = createHash("sha256");
  for (const [n, text] of Object.entries(files)) hash.update(n).update("\0").update(text).update("\0");
  const dir = join(CACHE_DIR, `${name}-${hash.digest("hex").slice(0, 16)}`);
  if (existsSync(dir)) return dir;
  const partial = `${dir}.${process.pid}.${randomBytes(4).toString("hex")}`;
  await mkdir(partial, { recursive: true });
  for (const [n, text] of Object.entries(files)) await writeFile(join(partial, n), text);
  try {
    await rename(partial, dir);
  } catch (err) {
    // Another fleet wrote the same folder first: keep it.
    if (!existsSync(dir)) throw err;
    await rm(partial, { recursive: true, force: true });
  }
  return dir;
}

/**
 * The script an engine process runs: the built package's `fleet/llama-engine.js`, or, in a
 * source checkout, engine-process.ts bundled into the cache folder (tools/common/process-script.ts).
 */
async function engineScript(): Promise<string> {
  try {
    return await processScript(import.meta.url, "engine-process.ts", join("fleet", "llama-engine.js"), "llama-engine");
  } catch (err) {
    throw new FleetError("ENGINE_FAILED", `Cannot find the engine entry: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

const TAIL_BYTES = 4096;

/** A started engine process. */
class EngineProcess {
  readonly exited: Promise<void>;
  private tail = "";
  private exitCode: number | null | undefined;

  constructor(readonly id: string, readonly child: ChildProcess) {
    const keep = (chunk: Buffer): void => {
      this.tail = (this.tail + chunk.toString("utf8")).slice(-TAIL_BYTES);
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    this.exited = new Promise((resolve) => {
      child.once("exit", (code) => {
        this.exitCode = code;
        resolve();
      });
    });
  }

  /** Resolves with the port once the engine listens; rejects with `ENGINE_FAILED` otherwise. */
  ready(timeoutMs: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const fail = (why: string): void => {
        cleanup();
        const output = this.tail.trim();
        reject(new FleetError("ENGINE_FAILED", `Engine ${this.id} ${why}${output ? `; its output:\n${output}` : ""}`));
      };
      const onMessage = (m: EngineProcessMessage): void => {
        if (m.type === "ready") {
          cleanup();
          resolve(m.port);
        } else if (m.type === "error") fail(`failed to start: ${m.message}`);
      };
      const onExit = (code: number | null, signal: NodeJS.Signals | null): void => fail(`exited while starting (${signal ?? `code ${code}`})`);
      const onError = (err: Error): void => fail(`could not be started: ${err.message}`);
      const timer = setTimeout(() => fail(`did not start within ${timeoutMs} ms`), timeoutMs);
      const cleanup = (): void => {
        clearTimeout(timer);
        this.child.off("message", onMessage);
        this.child.off("exit", onExit);
        this.child.off("error", onError);
      };
      this.child.on("message", onMessage);
      this.child.once("exit", onExit);
      this.child.once("error", onError);
    });
  }

  async stop(): Promise<void> {
    if (this.exitCode !== undefined || this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), ENGINE_STOP_GRACE_MS);
    await this.exited;
    clearTimeout(timer);
  }
}

/**
 * Starts `instances` llama.cpp engine processes on loopback, each with `slots` slots of
 * `contextSize` tokens, serving a tiny llama model generated from `seed` (see the file header
 * and docs/real-engines.md). Needs `node-llama-cpp` (see runtime.ts).
 * @throws RouterError `ERR_MISSING_PEER` when node-llama-cpp is not installed; RangeError for
 * options out of range; FleetError `ENGINE_FAILED` when an engine does not start
 * @example
 * const fleet = await startLlamaFleet({ instances: 3, slots: 2 });
 * const client = await routeOpenAI(new OpenAI({ apiKey: "unused" }), { targets: fleet.targets });
 * // ...
 * await fleet.close();
 */
export async function startLlamaFleet(options: LlamaFleetOptions = {}): Promise<LlamaFleet> {
  const instances = intOption("instances", options.instances ?? DEFAULT_LLAMA_INSTANCES, 1, 64);
  const slots = intOption("slots", options.slots ?? DEFAULT_LLAMA_SLOTS, 1, 64);
  const contextSize = intOption("contextSize", options.contextSize ?? DEFAULT_LLAMA_CONTEXT_SIZE, 64, 1 << 20);
  const seed = intOption("seed", options.seed ?? 0, 0, 0xffffffff);
  const defaultMaxTokens = intOption("defaultMaxTokens", options.defaultMaxTokens ?? DEFAULT_LLAMA_MAX_TOKENS, 1, 1 << 20);
  const port = intOption("port", options.port ?? 0, 0, 65535 - (instances - 1));
  const startTimeoutMs = intOption("startTimeoutMs", options.startTimeoutMs ?? DEFAULT_ENGINE_START_TIMEOUT_MS, 1, 3_600_000);
  const slotPromptSimilarity = checkSimilarity("slotPromptSimilarity", options.slotPromptSimilarity ?? DEFAULT_SLOT_PROMPT_SIMILARITY);
  const modelName = options.modelName ?? DEFAULT_LLAMA_MODEL;
  if (typeof modelName !== "string" || modelName.length === 0) throw new RangeError(`Expected \`modelName\` to be a non-empty string, got ${JSON.stringify(modelName)}`);
  const host = options.host ?? "127.0.0.1";
  const kv = options.kvEvents;
  if (kv !== undefined) {
    if (kv.port !== undefined) intOption("kvEvents.port", kv.port, 1, 65535 - (instances - 1));
    if (kv.replayPort !== undefined) {
      if (kv.port === undefined) throw new RangeError("Expected `kvEvents.port` with `kvEvents.replayPort`, got none");
      intOption("kvEvents.replayPort", kv.replayPort, 1, 65535 - (instances - 1));
    }
    if (kv.onBatch !== undefined && typeof kv.onBatch !== "function") throw new RangeError(`Expected \`kvEvents.onBatch\` to be a function, got ${typeof kv.onBatch}`);
  }
  const urlHost = host.includes(":") ? `[${host}]` : host;
  const kvEndpoints = (i: number) =>
    kv?.port === undefined ? undefined : { endpoint: `tcp://${urlHost}:${kv.port + i}`, replayEndpoint: kv.replayPort === undefined ? undefined : `tcp://${urlHost}:${kv.replayPort + i}` };
  const nodeLlamaCpp = resolveNodeLlamaCpp();
  if (nodeLlamaCpp === undefined) throw missingLlamaError();
  const bytes = tinyLlamaGguf({ ...options.model, seed, contextLength: Math.max(options.model?.contextLength ?? DEFAULT_TINY_LLAMA.contextLength, contextSize) });

  const modelPath = await cachedFile(bytes, "tiny-llama", ".gguf");
  const tokenizerDir = await cachedDir(tinyLlamaTokenizerFiles(), "tiny-llama-tokenizer");
  const script = await engineScript();
  const engines: EngineProcess[] = [];
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closed ??= (async () => {
      await Promise.all(engines.map((e) => e.stop()));
    })());
  try {
    const ids = defaultInstanceIds(instances);
    for (const [i, id] of ids.entries()) {
      const config: EngineProcessConfig = {
        id,
        host,
        port: port === 0 ? 0 : port + i,
        modelPath,
        modelName,
        slots,
        contextSize,
        threads: 1,
        slotPromptSimilarity,
        defaultMaxTokens,
        nodeLlamaCpp,
        ...(kv !== undefined && { kvEvents: { ...kvEndpoints(i), toParent: kv.onBatch !== undefined } }),
      };
      const child = spawn(process.execPath, [script, JSON.stringify(config)], {
        stdio: ["ignore", "pipe", "pipe", "ipc"],
        // Block hashes in KV events are bigints.
        serialization: "advanced",
        // node-llama-cpp: never build or download llama.cpp, never look for a GPU.
        env: { ...process.env, NODE_LLAMA_CPP_SKIP_DOWNLOAD: "true", NODE_LLAMA_CPP_GPU: "false" },
      });
      if (kv?.onBatch !== undefined) {
        const onBatch = kv.onBatch;
        child.on("message", (m: EngineProcessMessage) => {
          if (m.type === "kv-events") onBatch(id, m.batch);
        });
      }
      engines.push(new EngineProcess(id, child));
    }
    const ports = await Promise.all(engines.map((e) => e.ready(startTimeoutMs)));
    const targets = engines.map((e, i): LlamaTarget => {
      const url = `http://${urlHost}:${ports[i]!}`;
      const kvEvents = kvEndpoints(i);
      return { id: e.id, url, baseURL: `${url}/v1`, pid: e.child.pid!, ...(kvEvents !== undefined && { kvEvents }) };
    });
    return { targets, modelPath, tokenizerDir, close };
  } catch (err) {
    await close();
    throw err;
  }
}
