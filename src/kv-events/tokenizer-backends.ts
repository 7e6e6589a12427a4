/**
 * Where a `PromptTokenizer`'s segments are tokenized off the event loop: in this thread
 * (one batch per macrotask), in a worker thread, or by an engine's `POST /tokenize`.
 */
import { createRequire } from "node:module";
import { join } from "node:path";
import type { TokenizerBackend } from "./tokenizer-types.js";

/** Tokenizes in this thread, one batch per macrotask (when no worker can start). */
export class InThreadBackend implements TokenizerBackend {
  constructor(private readonly encodeOne: (text: string) => Uint32Array) {}
  encode(texts: readonly string[]): Promise<Uint32Array[]> {
    return new Promise((resolve, reject) =>
      setImmediate(() => {
        try {
          resolve(texts.map(this.encodeOne));
        } catch (e) {
          reject(e);
        }
      }),
    );
  }
  async close(): Promise<void> {}
}

/** The worker's script (CommonJS, evaluated): loads the tokenizer from the same files' content. */
const WORKER_SCRIPT = `
const { parentPort, workerData } = require("node:worker_threads");
const { Tokenizer } = require(workerData.modulePath);
const tok = new Tokenizer(workerData.json, workerData.config);
parentPort.postMessage({ ready: true });
parentPort.on("message", (m) => {
  try {
    const out = m.texts.map((t) => Uint32Array.from(tok.encode(t, { add_special_tokens: false }).ids));
    parentPort.postMessage({ id: m.id, out }, out.map((a) => a.buffer));
  } catch (e) {
    parentPort.postMessage({ id: m.id, error: String(e && e.message || e) });
  }
});
`;

/**
 * Tokenizes in a worker thread, started by {@link WorkerBackend.started} (the tokenizer's load
 * awaits it, so that the first prompts do not wait for a thread to start and load the
 * tokenizer) or else on first use. The worker keeps the process alive only while it starts or a
 * batch waits for it: an idle one never holds a process that has nothing else to do, and one
 * that is tokenizing is not abandoned by a process whose only pending work is that answer (a
 * script awaiting its first request). If the worker cannot start, batches are tokenized in this
 * thread, one per macrotask.
 */
export class WorkerBackend implements TokenizerBackend {
  private worker: import("node:worker_threads").Worker | undefined;
  private starting: Promise<import("node:worker_threads").Worker | undefined> | undefined;
  private next = 0;
  private answered = false;
  private closed = false;
  private readonly waiting = new Map<number, { resolve(v: Uint32Array[]): void; reject(e: Error): void }>();
  private readonly fallback: InThreadBackend;

  constructor(
    private readonly json: object,
    private readonly config: object,
    encodeHere: (texts: readonly string[]) => Uint32Array[],
  ) {
    this.fallback = new InThreadBackend((t) => encodeHere([t])[0] as Uint32Array);
  }

  /** Starts the worker if it is not started; resolves when it has loaded the tokenizer (true) or could not (false: batches run in this thread). */
  async started(): Promise<boolean> {
    return (await (this.starting ??= this.start())) !== undefined;
  }

  async encode(texts: readonly string[]): Promise<Uint32Array[]> {
    const w = await (this.starting ??= this.start());
    if (w === undefined) return this.fallback.encode(texts);
    const id = this.next++;
    return new Promise((resolve, reject) => {
      if (this.waiting.size === 0) w.ref();
      this.waiting.set(id, { resolve, reject });
      w.postMessage({ id, texts });
    });
  }

  private async start(): Promise<import("node:worker_threads").Worker | undefined> {
    let w: import("node:worker_threads").Worker;
    try {
      const { Worker } = await import("node:worker_threads");
      const modulePath = createRequire(join(process.cwd(), "package.json")).resolve("@huggingface/tokenizers");
      w = new Worker(WORKER_SCRIPT, { eval: true, workerData: { modulePath, json: this.json, config: this.config } });
      this.worker = w;
    } catch {
      return undefined;
    }
    // Ready once it has loaded the tokenizer; a worker that fails before (its module could not
    // load there) is never used, and later batches are tokenized in this thread.
    return new Promise((resolve) => {
      w.on("message", (m: { ready?: true; id: number; out?: Uint32Array[]; error?: string }) => {
        if (m.ready === true) {
          this.answered = true;
          if (this.waiting.size === 0) w.unref();
          return resolve(w);
        }
        const p = this.waiting.get(m.id);
        this.waiting.delete(m.id);
        if (this.waiting.size === 0) w.unref();
        if (m.out !== undefined) p?.resolve(m.out);
        else p?.reject(new Error(m.error ?? "tokenizer worker failed"));
      });
      w.on("error", (e) => this.failAll(e));
      w.on("exit", () => {
        this.failAll(new Error("tokenizer worker exited"));
        this.worker = undefined;
        // One that never loaded the tokenizer is not started again; one that did is, on next use.
        this.starting = this.answered && !this.closed ? undefined : Promise.resolve(undefined);
        resolve(undefined);
      });
      // Held while it starts: a script awaiting the tokenizer's load has nothing else pending.
      w.ref();
    });
  }

  private failAll(e: Error): void {
    for (const p of this.waiting.values()) p.reject(e);
    this.waiting.clear();
    this.worker?.unref();
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.closed = true;
    this.worker = undefined;
    this.starting = Promise.resolve(undefined);
    if (w !== undefined) await w.terminate();
  }
}

/** vLLM's (and SGLang's) `POST /tokenize`: one request per segment, at most 4 in flight. */
export class EndpointBackend implements TokenizerBackend {
  constructor(
    private readonly baseUrl: string,
    private readonly model: string | undefined,
    private readonly timeoutMs: number,
  ) {}

  async encode(texts: readonly string[]): Promise<Uint32Array[]> {
    const out: Uint32Array[] = new Array(texts.length);
    let next = 0;
    const run = async (): Promise<void> => {
      while (next < texts.length) {
        const k = next++;
        out[k] = Uint32Array.from(await this.post({ prompt: texts[k], add_special_tokens: false }));
      }
    };
    await Promise.all(Array.from({ length: Math.min(4, texts.length) }, run));
    return out;
  }

  /** `POST /tokenize` with `body` (and the model); the `tokens` of the answer. */
  async post(body: Record<string, unknown>): Promise<number[]> {
    const url = new URL("tokenize", this.baseUrl.endsWith("/") ? this.baseUrl : `${this.baseUrl}/`);
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(this.model === undefined ? body : { model: this.model, ...body }),
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`POST ${url.href} answered ${res.status}: ${text.slice(0, 200)}`);
    const parsed = JSON.parse(text) as { tokens?: unknown };
    if (!Array.isArray(parsed.tokens) || !parsed.tokens.every((t) => Number.isInteger(t) && (t as number) >= 0)) {
      throw new Error(`POST ${url.href} answered without a \`tokens\` array of non-negative integers`);
    }
    return parsed.tokens as number[];
  }

  async close(): Promise<void> {}
}
