/**
 * Finding and loading `node-llama-cpp`, llama.cpp's Node.js binding, which prefix-router does not
 * depend on: it is installed on demand (about 83 MB with only this platform's CPU binaries), into
 * its own folder so that installing it changes nothing else in the project (an in-place
 * `npm install --omit=optional` would also remove every other package's optional platform
 * binaries, esbuild's among them). See docs/real-engines.md.
 *
 * Where it is looked for, first found wins: the folder named by `PREFIX_ROUTER_LLAMA_DIR`; the
 * default folder `node_modules/.cache/prefix-router-llama` under the working directory, then
 * under prefix-router's own folder (where `npm run engines:llama` and `.ci/llama.sh` install it
 * in a clone); then Node's own resolution from this package (an application that has
 * `node-llama-cpp` among its dependencies).
 *
 * Only the part of its API the engine uses is typed here, so that type-checking needs no
 * installed copy.
 */

import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { RouterError } from "prefix-router";

/** The `node-llama-cpp` version the engine is built and tested against (pin it exactly). */
export const NODE_LLAMA_CPP_VERSION = "3.21.1";

/** The folder, relative to the working directory, where `npm run engines:llama` installs it. */
export const DEFAULT_LLAMA_DIR = join("node_modules", ".cache", "prefix-router-llama");

/** The environment variable naming another folder to look in. */
export const LLAMA_DIR_ENV = "PREFIX_ROUTER_LLAMA_DIR";

/** node-llama-cpp's package of prebuilt CPU binaries for this platform (`@node-llama-cpp/linux-x64` here). */
export function llamaBinaryPackage(platform: string = process.platform, arch: string = process.arch): string {
  const os = platform === "darwin" ? "mac" : platform === "win32" ? "win" : platform;
  return `@node-llama-cpp/${os}-${arch}${platform === "darwin" && arch === "arm64" ? "-metal" : ""}`;
}

/** The command that installs the pinned `node-llama-cpp` into `dir` with this platform's binaries only. */
export function llamaInstallCommand(dir: string = DEFAULT_LLAMA_DIR): string {
  return `npm install --prefix ${dir} -E node-llama-cpp@${NODE_LLAMA_CPP_VERSION} ${llamaBinaryPackage()}@${NODE_LLAMA_CPP_VERSION} --omit=optional`;
}

/**
 * The path of `node-llama-cpp`'s entry module (see the file header for where it is looked for),
 * or `undefined` when it is not installed.
 */
export function resolveNodeLlamaCpp(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): string | undefined {
  const own = packageRoot();
  const dirs = [env[LLAMA_DIR_ENV], join(cwd, DEFAULT_LLAMA_DIR), own === undefined ? undefined : join(own, DEFAULT_LLAMA_DIR)].filter(
    (d): d is string => typeof d === "string" && d.length > 0,
  );
  for (const dir of dirs) {
    const manifest = join(resolve(cwd, dir), "package.json");
    if (!existsSync(manifest)) continue;
    try {
      return createRequire(manifest).resolve("node-llama-cpp");
    } catch {
      // Not in this folder: try the next one.
    }
  }
  try {
    return createRequire(import.meta.url).resolve("node-llama-cpp");
  } catch {
    return undefined;
  }
}

/** prefix-router's own folder: the nearest one above this module whose package.json is prefix-router's. */
function packageRoot(): string | undefined {
  for (let dir = dirname(fileURLToPath(import.meta.url)), up = 0; up < 5; up++, dir = dirname(dir)) {
    try {
      if ((JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name?: unknown }).name === "prefix-router") return dir;
    } catch {
      // No package.json here: go up.
    }
  }
  return undefined;
}

/**
 * The error for a missing `node-llama-cpp`: `ERR_MISSING_PEER`, with the command that installs it.
 */
export function missingLlamaError(): RouterError {
  return new RouterError(
    "ERR_MISSING_PEER",
    `The llama.cpp engine needs node-llama-cpp ${NODE_LLAMA_CPP_VERSION}, which is not installed: ${llamaInstallCommand()} (or npm run engines:llama in a clone of prefix-router)`,
  );
}

/** A token id. */
export type Token = number;

/** The part of `node-llama-cpp`'s module the engine uses. */
export interface NodeLlamaCpp {
  getLlama(options: {
    gpu: false;
    build: "never";
    skipDownload: true;
    usePrebuiltBinaries: true;
    progressLogs: false;
    logLevel: "disabled" | "fatal" | "error" | "warn" | "info" | "log" | "debug";
    logger?: (level: string, message: string) => void;
    maxThreads: number;
  }): Promise<Llama>;
}

/** A loaded llama.cpp runtime. */
export interface Llama {
  loadModel(options: { modelPath: string; gpuLayers: 0; useMmap?: boolean }): Promise<LlamaModel>;
  dispose(): Promise<void>;
}

/** A loaded model. */
export interface LlamaModel {
  /** llama.cpp's tokenizer; `specialTokens: false` reads special-token texts as plain text. */
  tokenize(text: string, specialTokens?: boolean): Token[];
  /** llama.cpp's detokenizer; `specialTokens: false` drops control tokens. */
  detokenize(tokens: readonly Token[], specialTokens?: boolean): string;
  createContext(options: { sequences: number; contextSize: number; threads: number; batchSize?: number; flashAttention?: boolean }): Promise<LlamaContext>;
  isEogToken(token: Token): boolean;
  dispose(): Promise<void>;
}

/** A llama.cpp context: the KV cache of every sequence. */
export interface LlamaContext {
  /** Tokens per sequence. */
  readonly contextSize: number;
  getSequence(): LlamaContextSequence;
  dispose(): Promise<void>;
}

/** One sequence of a context (a llama-server slot). */
export interface LlamaContextSequence {
  /** The tokens whose keys and values the sequence holds, in order. */
  readonly contextTokens: Token[];
  /** Position of the next token (the number of tokens held). */
  readonly nextTokenIndex: number;
  eraseContextTokenRanges(ranges: { start: number; end: number }[]): Promise<void>;
  /**
   * Evaluates `tokens` after what the sequence holds, then yields one sampled token at a time,
   * each evaluated before the next is sampled; ends on an end-of-generation token.
   */
  evaluate(tokens: Token[], options: { temperature: number }): AsyncGenerator<Token, void, void | Token | Token[]>;
}

/**
 * Imports `node-llama-cpp` from `entry` (see {@link resolveNodeLlamaCpp}).
 * @throws RouterError `ERR_MISSING_PEER` when it is not installed
 */
export async function loadNodeLlamaCpp(entry: string | undefined = resolveNodeLlamaCpp()): Promise<NodeLlamaCpp> {
  if (entry === undefined) throw missingLlamaError();
  return (await import(pathToFileURL(entry).href)) as NodeLlamaCpp;
}
