/**
 * The entry point of one llama.cpp engine process, started by `startLlamaFleet` (index.ts) with
 * an IPC channel and its {@link EngineProcessConfig} as JSON in `argv[2]`.
 *
 * It loads node-llama-cpp (CPU only, prebuilt binaries only: nothing is built or downloaded),
 * the model, a context of `slots` sequences of `contextSize` tokens each, one thread; listens;
 * and reports `{ type: "ready", port }` (or `{ type: "error", message }`) to its parent. It
 * exits when its parent closes the channel or dies, so no engine outlives the fleet. With
 * `kvEvents`, it publishes its slots' KV-cache events (kv-events.ts): on a ZeroMQ socket, and/or
 * to its parent as `{ type: "kv-events", batch }` messages (the channel's serialization is
 * "advanced": block hashes are bigints).
 */

import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import { LlamaEngine } from "./engine.js";
import { tinyLlamaVocabularySize } from "./gguf.js";
import { fanOut, ipcPublisher, openZmqKvPublisher, type KvEventBatch, type KvPublisher } from "./kv-events.js";
import { loadNodeLlamaCpp } from "./runtime.js";
import { createLlamaServer } from "./server.js";

/** What an engine process is told to be. */
export interface EngineProcessConfig {
  readonly id: string;
  readonly host: string;
  /** 0 for an ephemeral port. */
  readonly port: number;
  readonly modelPath: string;
  readonly modelName: string;
  readonly slots: number;
  readonly contextSize: number;
  readonly threads: number;
  readonly slotPromptSimilarity: number;
  readonly defaultMaxTokens: number;
  /** node-llama-cpp's entry module, as the parent resolved it. */
  readonly nodeLlamaCpp: string;
  /** Where to publish KV events; none when absent. */
  readonly kvEvents?: {
    /** The ZeroMQ PUB socket's endpoint (`tcp://host:port`), if any. */
    readonly endpoint?: string;
    /** The replay ROUTER socket's endpoint, if any. */
    readonly replayEndpoint?: string;
    /** Whether to send every batch to the parent too. */
    readonly toParent: boolean;
  };
}

/** A message from an engine process to its parent. */
export type EngineProcessMessage = { type: "ready"; port: number } | { type: "error"; message: string } | { type: "kv-events"; batch: KvEventBatch };

function send(message: EngineProcessMessage): Promise<void> {
  return new Promise((resolve) => {
    if (process.send === undefined || !process.connected) return resolve();
    process.send(message, undefined, {}, () => resolve());
  });
}

async function main(): Promise<void> {
  // First of all: the parent gone (closed channel, or dead) ends this process.
  process.on("disconnect", () => process.exit(0));
  if (process.send === undefined || !process.connected) {
    process.stderr.write("prefix-router llama engine: start it through startLlamaFleet (it needs an IPC channel to its parent)\n");
    process.exit(2);
  }
  const config = JSON.parse(process.argv[2] ?? "{}") as EngineProcessConfig;
  try {
    const mod = await loadNodeLlamaCpp(config.nodeLlamaCpp);
    const llama = await mod.getLlama({
      gpu: false,
      build: "never",
      skipDownload: true,
      usePrebuiltBinaries: true,
      progressLogs: false,
      logLevel: "error",
      logger: (level, message) => process.stderr.write(`[llama.cpp ${level}] ${message}\n`),
      maxThreads: config.threads,
    });
    const model = await llama.loadModel({ modelPath: config.modelPath, gpuLayers: 0 });
    const context = await model.createContext({ sequences: config.slots, contextSize: config.contextSize, threads: config.threads });
    const publishers: KvPublisher[] = [];
    if (config.kvEvents?.endpoint !== undefined) publishers.push(await openZmqKvPublisher({ endpoint: config.kvEvents.endpoint, replayEndpoint: config.kvEvents.replayEndpoint }));
    if (config.kvEvents?.toParent === true) {
      publishers.push(
        ipcPublisher((batch) => {
          if (process.connected) process.send!({ type: "kv-events", batch } satisfies EngineProcessMessage);
        }),
      );
    }
    const engine = new LlamaEngine({
      model,
      context,
      slots: config.slots,
      slotPromptSimilarity: config.slotPromptSimilarity,
      clock: performance,
      vocabularySize: tinyLlamaVocabularySize(),
      ...(publishers.length > 0 && { kvEvents: fanOut(publishers) }),
    });
    const server = createLlamaServer({ id: config.id, modelName: config.modelName, engine, defaultMaxTokens: config.defaultMaxTokens, wallClock: Date.now });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(config.port, config.host, () => resolve());
    });
    await send({ type: "ready", port: (server.address() as AddressInfo).port });
  } catch (err) {
    await send({ type: "error", message: err instanceof Error ? err.message : String(err) });
    process.exit(1);
  }
}

void main();
