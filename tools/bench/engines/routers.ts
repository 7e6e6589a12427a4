/**
 * N application processes, each with its own router, in front of the same engines: the router
 * processes of `bench --engine … --routers N` (router-process.ts). Each is a child process with
 * an IPC channel (it dies with the bench); a request is sent to one of them and its outcome comes
 * back over the channel. Timings are the router process's own (client TTFT from its send).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { processScript } from "../../common/process-script.js";
import type { Message, RequestOutcome, RoutedClientOptions } from "./client.js";
import type { RouterProcessMessage, RouterProcessRequest } from "./router-process.js";

/** How long a router process gets to start. */
const START_TIMEOUT_MS = 60_000;

/** One router process. */
class RouterProcess {
  private nextId = 0;
  private readonly waiting = new Map<number, (o: RequestOutcome) => void>();
  private exited = false;

  constructor(private readonly child: ChildProcess) {
    child.on("message", (m: RouterProcessMessage) => {
      if (m.type !== "outcome") return;
      this.waiting.get(m.id)?.(m.outcome);
      this.waiting.delete(m.id);
    });
    child.once("exit", (code, signal) => {
      this.exited = true;
      for (const resolve of this.waiting.values()) resolve(failed(`the router process exited (${signal ?? `code ${code}`})`));
      this.waiting.clear();
    });
  }

  ready(): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`A router process did not start within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
      this.child.on("message", (m: RouterProcessMessage) => {
        if (m.type === "ready") {
          clearTimeout(timer);
          resolve();
        } else if (m.type === "error") {
          clearTimeout(timer);
          reject(new Error(`A router process failed to start: ${m.message}`));
        }
      });
      this.child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`A router process exited while starting (code ${code})`));
      });
    });
  }

  send(messages: readonly Message[], maxTokens: number): Promise<RequestOutcome> {
    if (this.exited) return Promise.resolve(failed("the router process has exited"));
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.child.send({ type: "request", id, messages: [...messages], maxTokens } satisfies RouterProcessRequest);
    });
  }

  async stop(): Promise<void> {
    if (this.exited || this.child.exitCode !== null) return;
    const done = new Promise<void>((resolve) => this.child.once("exit", () => resolve()));
    this.child.disconnect();
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 5_000);
    await done;
    clearTimeout(timer);
  }
}

function failed(error: string): RequestOutcome {
  return {
    target: undefined,
    predicted: undefined,
    ttftMs: Number.NaN,
    durationMs: 0,
    text: "",
    promptTokens: 0,
    cachedTokens: 0,
    completionTokens: 0,
    engineTtftMs: undefined,
    engineQueueMs: undefined,
    decisionMs: Number.NaN,
    error,
  };
}

/** N router processes; see the file header. */
export class RouterProcesses {
  private constructor(private readonly processes: RouterProcess[]) {}

  get size(): number {
    return this.processes.length;
  }

  /** Starts one process per entry of `configs` (each its own router) and waits until all are ready. */
  static async start(configs: readonly RoutedClientOptions[]): Promise<RouterProcesses> {
    // Every row's router processes run the same bundle (zeromq, a native addon, is imported from its own folder).
    const args = [await processScript(import.meta.url, "router-process.ts", join("bench", "router-process.js"), "bench-router")];
    const processes = configs.map(
      (c) => new RouterProcess(spawn(process.execPath, [...args, JSON.stringify(c)], { stdio: ["ignore", "ignore", "inherit", "ipc"], serialization: "advanced" })),
    );
    const all = new RouterProcesses(processes);
    try {
      await Promise.all(processes.map((p) => p.ready()));
    } catch (err) {
      await all.close();
      throw err;
    }
    return all;
  }

  /** Plays a request through router process `k`. */
  send(k: number, messages: readonly Message[], maxTokens: number): Promise<RequestOutcome> {
    return this.processes[k]!.send(messages, maxTokens);
  }

  /** Stops every process. */
  async close(): Promise<void> {
    await Promise.all(this.processes.map((p) => p.stop()));
  }
}
