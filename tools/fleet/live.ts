/**
 * Live mode: each emulated instance is an HTTP server on loopback (Node's `http`) that speaks
 * the OpenAI/vLLM and SageMaker Runtime protocols, in front of the same engine state machine
 * virtual.ts drives. Here the engine is advanced by timers: model time =
 * (wall-clock elapsed since start) / `timeScale`, and after every change the driver sets one
 * timer for the engine's next event, `(next − now) · timeScale` wall-clock ms away. Event times
 * come from the model, not from when a timer fires, so a late timer delays delivery but not
 * the times and cache accounting the engine reports.
 */

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import type { EngineConfig } from "./config.js";
import { Engine, type EngineCallbacks, type EngineTicket } from "./engine.js";
import { FleetError } from "./errors.js";
import { applyFaults, DEFAULT_FAULTS, type FaultKnobs } from "./faults.js";
import { loadEventStreamEncoder, sendJson, type GenerationSpec, type InstanceRuntime } from "./http-common.js";
import { renderLoads, renderMetrics } from "./metrics.js";
import { handleOpenAI } from "./openai-server.js";
import { ResponseStore, handleResponses } from "./responses-server.js";
import { createRandom, type RandomSource } from "../sim/random.js";
import { handleSageMaker } from "./sagemaker-server.js";
import { blockKeys, countTokens, emulatedTokens, tokenBlockKeys } from "./tokenizer.js";
import { KvEventPublisher, type WireEncoding } from "./kv-events/publisher.js";
import { KvEventRelay } from "./kv-events/relay.js";
import { cacheNamespace } from "./cache-salt.js";
import { defaultInstanceIds, toInstanceStats, type InstanceStats } from "./virtual.js";

/** The model served when `models` is not given. */
export const DEFAULT_MODEL = "meta-llama/Llama-3.1-70B-Instruct";

/** Options of {@link startFleet}. */
export interface StartFleetOptions {
  /** Number of instances (ids `i0`, `i1`, ...) or their ids. */
  instances: number | readonly string[];
  /**
   * Wall-clock ms per model ms: 1 is real time, 0.01 runs 100 times faster (tests, demos).
   * @default 1
   */
  timeScale?: number;
  /** Engine parameters for every instance; missing ones take `DEFAULT_ENGINE_CONFIG`. */
  engine?: Partial<EngineConfig>;
  /** Per-instance engine overrides, applied over `engine`. */
  instanceEngine?: Readonly<Record<string, Partial<EngineConfig>>>;
  /** Interface to listen on. @default "127.0.0.1" */
  host?: string;
  /** Port of the first instance; instance `i` listens on `port + i`. 0 = ephemeral ports. @default 0 */
  port?: number;
  /** Served model names; the first is the default. @default [DEFAULT_MODEL] */
  models?: readonly string[];
  /** Output tokens when a request sets no limit. @default 64 */
  defaultMaxTokens?: number;
  /** Seed of the fault draws (and `stepJitter`). @default 0 */
  seed?: number;
  /** SageMaker settings. */
  sagemaker?: {
    /** Production variants; the first answers requests without a target variant. @default ["AllTraffic"] */
    variants?: readonly string[];
    /** Inference component name → model it hosts. @default {} */
    inferenceComponents?: Readonly<Record<string, string>>;
  };
  /** Monotonic clock in ms driving model time. @default performance */
  clock?: { now(): number };
  /** Wall clock in ms for `created` timestamps. @default Date.now */
  wallClock?: () => number;
  /** `/metrics` names: vLLM's, or vLLM's and SGLang's load gauges (`"sglang"`). @default "vllm" */
  metricsFlavor?: "vllm" | "sglang";
  /**
   * Publish each instance's KV events as vLLM does (a ZeroMQ PUB socket with seq and topic, a
   * replay ROUTER; see docs/precise.md): instance `i` publishes on `tcp://host:(port + i)` and
   * answers replays on `replayPort + i`. Needs the optional package `zeromq`. The instances
   * then tokenize prompts with `tokenize`, so that their cache blocks are the events' blocks.
   * @default none
   */
  kvEvents?: {
    /** Base PUB port. */
    port: number;
    /** Base replay ROUTER port; no replay socket when absent. */
    replayPort?: number;
    /** The topic frame (vLLM's `topic`). @default "" */
    topic?: string;
    /** Payload layout. @default vLLM v0.26's: events as maps, the batch an array */
    encoding?: WireEncoding;
    /** Batches kept for replay (vLLM's `buffer_steps`). @default 10000 */
    bufferSteps?: number;
  };
  /**
   * How instances tokenize prompts when they publish KV events: the token ids go into
   * `BlockStored`, their count is the prompt's length and the cache's blocks are hashed over
   * them. The router must tokenize the same way (pass it the same function).
   * @default emulatedTokens (the 4-characters-per-token model, as ids) with `kvEvents`; without, the 4-characters-per-token model
   */
  tokenize?: (text: string) => readonly number[];
}

/** One running instance. */
export interface LiveInstance {
  /** Instance id (also in the `x-prefix-router-instance` response header). */
  readonly id: string;
  /** Base URL, `http://127.0.0.1:PORT` (the OpenAI client's `baseURL` is this + `/v1`). */
  readonly url: string;
  /** Listening port. */
  readonly port: number;
  /** Current fault knobs. */
  readonly faults: Readonly<FaultKnobs>;
  /** Changes fault knobs; resolves once `down` took effect (server closed or listening again). */
  setFaults(patch: Partial<FaultKnobs>): Promise<void>;
  /**
   * Restarts the engine now: its prefix cache is emptied; requests in flight finish; the server
   * keeps listening on the same port (combine with `setFaults({ down: true })` for a restart that
   * refuses connections for a while). `POST /reset_prefix_cache` (vLLM's endpoint) does the same
   * from outside.
   */
  restart(): void;
  /** Counters of this instance. */
  stats(): InstanceStats;
  /** Prometheus text, as served on `/metrics`. */
  metrics(): string;
  /** The engine behind the server (read-only use). */
  readonly engine: Engine;
  /** Where this instance publishes KV events, when the fleet was started with `kvEvents`. */
  readonly kvEvents: { readonly endpoint: string; readonly replayEndpoint: string | undefined } | undefined;
  /**
   * W3C `traceparent` headers of the requests received, oldest first (the last
   * {@link TRACE_CONTEXTS_KEPT}): what an engine's own tracing would join.
   */
  traceparents(): readonly string[];
}

/** `traceparent` headers an instance keeps. */
export const TRACE_CONTEXTS_KEPT = 1000;

/** A running fleet. */
export interface LiveFleet {
  /** The instances, in id order given. */
  readonly instances: readonly LiveInstance[];
  /** Base URLs of the instances. */
  readonly urls: readonly string[];
  /** The instance with this id. @throws FleetError `UNKNOWN_INSTANCE` */
  instance(id: string): LiveInstance;
  /** Counters per instance. */
  stats(): Record<string, InstanceStats>;
  /** Closes every server and connection; pending requests are dropped. */
  stop(): Promise<void>;
}

/** Drives one engine from timers (see the file header). */
class TimerDriver {
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private stopped = false;

  constructor(
    private readonly engine: Engine,
    private readonly timeScale: number,
    private readonly clock: { now(): number },
    private readonly startMs: number,
  ) {}

  modelNow(): number {
    return (this.clock.now() - this.startMs) / this.timeScale;
  }

  submit(req: Parameters<Engine["enqueue"]>[0], cb: EngineCallbacks): { ticket: EngineTicket; arrivalMs: number } {
    const now = this.modelNow();
    this.engine.advanceTo(now);
    const arrivalMs = Math.max(now, this.engine.now);
    const inner = this.engine.enqueue(req, cb, arrivalMs);
    this.schedule();
    return {
      arrivalMs,
      ticket: {
        cancel: () => {
          const was = inner.cancel();
          this.schedule();
          return was;
        },
      },
    };
  }

  private schedule(): void {
    if (this.stopped) return;
    const next = this.engine.nextEventMs();
    if (next === this.timerAt) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = next;
    if (next === Infinity) return;
    const delay = Math.max(0, (next - this.modelNow()) * this.timeScale);
    this.timer = setTimeout(() => this.tick(), delay);
  }

  private tick(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    this.engine.advanceTo(this.modelNow());
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

class Instance implements LiveInstance, InstanceRuntime {
  readonly engine: Engine;
  readonly models: readonly string[];
  readonly maxModelLen: number;
  readonly defaultMaxTokens: number;
  readonly sagemaker: InstanceRuntime["sagemaker"];
  /** Stored Responses API responses, for `previous_response_id`. */
  readonly responses = new ResponseStore();
  port = 0;
  private knobs: FaultKnobs = { ...DEFAULT_FAULTS };
  private readonly server: Server;
  private readonly driver: TimerDriver;
  private readonly rng: RandomSource;
  private sequence = 0;
  private listening = false;
  private readonly received: string[] = [];

  constructor(
    readonly id: string,
    private readonly host: string,
    engine: Engine,
    driver: TimerDriver,
    rng: RandomSource,
    private readonly opts: {
      models: readonly string[];
      defaultMaxTokens: number;
      sagemaker: InstanceRuntime["sagemaker"];
      wallClock: () => number;
      metricsFlavor?: "vllm" | "sglang";
      tokenize?: (text: string) => readonly number[];
      relay?: KvEventRelay;
    },
  ) {
    this.engine = engine;
    this.driver = driver;
    this.rng = rng;
    this.models = opts.models;
    this.maxModelLen = engine.config.maxModelLen;
    this.defaultMaxTokens = opts.defaultMaxTokens;
    this.sagemaker = opts.sagemaker;
    this.server = createServer((req, res) => this.handle(req, res));
    this.server.keepAliveTimeout = 5_000;
  }

  get kvEvents(): LiveInstance["kvEvents"] {
    const p = this.opts.relay?.publisher;
    return p === undefined ? undefined : { endpoint: p.endpoint, replayEndpoint: p.replayEndpoint };
  }

  get url(): string {
    return `http://${this.host.includes(":") ? `[${this.host}]` : this.host}:${this.port}`;
  }

  get faults(): Readonly<FaultKnobs> {
    return { ...this.knobs };
  }

  async listen(port: number): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error): void => reject(err);
      this.server.once("error", onError);
      this.server.listen(port, this.host, () => {
        this.server.off("error", onError);
        resolve();
      });
    });
    this.port = (this.server.address() as AddressInfo).port;
    this.listening = true;
  }

  async close(): Promise<void> {
    if (!this.listening) return;
    this.listening = false;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
    // Let clients in this process see their connections closed before `down` takes effect, so
    // their next request connects anew and is refused, instead of being written to a pooled
    // socket the server already closed (which a client cannot tell from a reset after the write).
    for (let i = 0; i < 2; i++) await new Promise<void>((resolve) => setImmediate(resolve));
  }

  async setFaults(patch: Partial<FaultKnobs>): Promise<void> {
    const next = applyFaults(this.knobs, patch);
    this.engine.setSlowdown(next.slowdown);
    const wasDown = this.knobs.down;
    this.knobs = next;
    if (next.down && !wasDown) await this.close();
    else if (!next.down && wasDown) await this.listen(this.port);
  }

  restart(): void {
    // The engine is advanced first, so that work due before now is done with the old cache.
    this.engine.advanceTo(this.driver.modelNow());
    this.engine.restart();
  }

  stats(): InstanceStats {
    return toInstanceStats(this.engine.stats(), false);
  }

  metrics(): string {
    const { blockSizeTokens, numGpuBlocks } = this.engine.config;
    return renderMetrics({
      modelName: this.models[0]!,
      instanceId: this.id,
      stats: this.engine.stats(),
      ttft: this.engine.ttftHistogram(),
      flavor: this.opts.metricsFlavor,
      cache: { blockSizeTokens, numGpuBlocks },
    });
  }

  loadsText(): string | undefined {
    if (this.opts.metricsFlavor !== "sglang") return undefined;
    const { blockSizeTokens, numGpuBlocks } = this.engine.config;
    return renderLoads(this.engine.stats(), blockSizeTokens * numGpuBlocks);
  }

  // InstanceRuntime
  currentFaults(): Readonly<FaultKnobs> {
    return this.knobs;
  }

  random(): number {
    return this.rng();
  }

  nextSequence(): number {
    return ++this.sequence;
  }

  wallClockMs(): number {
    return this.opts.wallClock();
  }

  metricsText(): string {
    return this.metrics();
  }

  submit(spec: GenerationSpec, callbacks: EngineCallbacks): { ticket: EngineTicket; arrivalMs: number } {
    const namespace = cacheNamespace(spec.model, spec.cacheSalt);
    const tokenize = this.opts.tokenize;
    if (tokenize === undefined) {
      return this.driver.submit(
        {
          id: this.sequence,
          promptTokens: countTokens(spec.prompt),
          blockKeys: blockKeys(spec.prompt, this.engine.config.blockSizeTokens, namespace),
          outputTokens: spec.outputTokens,
        },
        callbacks,
      );
    }
    const tokenIds = tokenize(spec.prompt);
    return this.driver.submit(
      {
        id: this.sequence,
        promptTokens: Math.max(1, tokenIds.length),
        blockKeys: tokenBlockKeys(tokenIds, this.engine.config.blockSizeTokens, namespace),
        outputTokens: spec.outputTokens,
        tokenIds,
        cacheSalt: spec.cacheSalt,
        loraName: spec.model === this.models[0] ? undefined : spec.model,
      },
      callbacks,
    );
  }

  stopDriver(): void {
    this.driver.stop();
  }

  traceparents(): readonly string[] {
    return [...this.received];
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? "/").split("?")[0]!;
    const traceparent = req.headers.traceparent;
    if (typeof traceparent === "string") {
      this.received.push(traceparent);
      if (this.received.length > TRACE_CONTEXTS_KEPT) this.received.shift();
    }
    try {
      if (path === "/reset_prefix_cache" && req.method === "POST") {
        // vLLM's endpoint of the same name: the cache emptied, as by a restart, from outside.
        this.restart();
        sendJson(res, 200, { status: "ok" }, { "x-prefix-router-instance": this.id });
        return;
      }
      if (handleOpenAI(this, req, res, path)) return;
      if (handleResponses(this, req, res, path)) return;
      if (handleSageMaker(this, req, res, path)) return;
      sendJson(res, 404, { error: { message: `No route for ${req.method ?? "GET"} ${path}`, type: "NotFoundError", param: null, code: 404 } }, {
        "x-prefix-router-instance": this.id,
      });
    } catch (err) {
      if (!res.headersSent) sendJson(res, 500, { error: { message: String(err), type: "InternalServerError", param: null, code: 500 } });
      else res.destroy();
    }
  }
}

/**
 * Starts an emulated fleet: one HTTP server per instance on `host` (default 127.0.0.1), each
 * serving the OpenAI/vLLM and SageMaker Runtime APIs (see docs/fleet.md).
 * @example
 * const fleet = await startFleet({ instances: 3, timeScale: 0.01 });
 * const client = new OpenAI({ baseURL: `${fleet.urls[0]}/v1`, apiKey: "x" });
 * // ...
 * await fleet.stop();
 */
export async function startFleet(options: StartFleetOptions): Promise<LiveFleet> {
  const ids = typeof options.instances === "number" ? defaultInstanceIds(options.instances) : [...options.instances];
  if (ids.length === 0 || new Set(ids).size !== ids.length) {
    throw new FleetError("INVALID_ARGUMENT", "Expected `instances` to be a count or a list of distinct ids");
  }
  const timeScale = options.timeScale ?? 1;
  if (typeof timeScale !== "number" || !Number.isFinite(timeScale) || timeScale <= 0) {
    throw new FleetError("INVALID_ARGUMENT", `Expected \`timeScale\` to be a finite number > 0, got ${String(timeScale)}`);
  }
  const port = options.port ?? 0;
  if (!Number.isSafeInteger(port) || port < 0 || port + ids.length - 1 > 65535) {
    throw new FleetError("INVALID_ARGUMENT", `Expected \`port\` to be 0 or a port with room for ${ids.length} instances, got ${String(port)}`);
  }
  const models = options.models ?? [DEFAULT_MODEL];
  if (models.length === 0 || models.some((m) => typeof m !== "string" || m.length === 0)) {
    throw new FleetError("INVALID_ARGUMENT", "Expected `models` to be a non-empty list of names");
  }
  const defaultMaxTokens = options.defaultMaxTokens ?? 64;
  if (!Number.isSafeInteger(defaultMaxTokens) || defaultMaxTokens < 1) {
    throw new FleetError("INVALID_ARGUMENT", `Expected \`defaultMaxTokens\` to be an integer ≥ 1, got ${String(defaultMaxTokens)}`);
  }
  const variants = options.sagemaker?.variants ?? ["AllTraffic"];
  const inferenceComponents = options.sagemaker?.inferenceComponents ?? {};
  for (const [name, model] of Object.entries(inferenceComponents)) {
    if (!models.includes(model)) {
      throw new FleetError("INVALID_ARGUMENT", `Inference component \`${name}\` hosts \`${model}\`, which is not in \`models\``);
    }
  }
  if (variants.length === 0) throw new FleetError("INVALID_ARGUMENT", "Expected `sagemaker.variants` to name at least one variant");
  const host = options.host ?? "127.0.0.1";
  const clock = options.clock ?? performance;
  const wallClock = options.wallClock ?? Date.now;
  const seed = options.seed ?? 0;
  const eventStream = await loadEventStreamEncoder();
  const kv = options.kvEvents;
  const tokenize = options.tokenize ?? (kv === undefined ? undefined : emulatedTokens);
  if (tokenize !== undefined && typeof tokenize !== "function") throw new FleetError("INVALID_ARGUMENT", "Expected `tokenize` to be a function");
  const relays: KvEventRelay[] = [];
  if (kv !== undefined) {
    for (const [name, p] of [["kvEvents.port", kv.port], ["kvEvents.replayPort", kv.replayPort]] as const) {
      if (p !== undefined && (!Number.isSafeInteger(p) || p < 1 || p + ids.length - 1 > 65535)) {
        throw new FleetError("INVALID_ARGUMENT", `Expected \`${name}\` to be a port with room for ${ids.length} instances, got ${String(p)}`);
      }
    }
    try {
      for (let i = 0; i < ids.length; i++) {
        const publisher = await KvEventPublisher.open({
          endpoint: `tcp://${host}:${kv.port + i}`,
          replayEndpoint: kv.replayPort === undefined ? undefined : `tcp://${host}:${kv.replayPort + i}`,
          topic: kv.topic,
          encoding: kv.encoding,
          bufferSteps: kv.bufferSteps,
        });
        relays.push(new KvEventRelay(publisher, wallClock));
      }
    } catch (err) {
      await Promise.all(relays.map((r) => r.publisher.close()));
      throw err;
    }
  }
  const startMs = clock.now();
  const instances = ids.map((id, i) => {
    const engine = new Engine({
      id,
      config: { ...options.engine, ...options.instanceEngine?.[id] },
      random: createRandom((seed ^ Math.imul(i + 1, 0x9e3779b1)) >>> 0),
      kvEvents: relays[i]?.push,
    });
    const driver = new TimerDriver(engine, timeScale, clock, startMs);
    const rng = createRandom((seed ^ Math.imul(i + 1, 0x85ebca6b)) >>> 0);
    return new Instance(id, host, engine, driver, rng, {
      models,
      defaultMaxTokens,
      sagemaker: { variants, inferenceComponents, eventStream },
      wallClock,
      metricsFlavor: options.metricsFlavor,
      tokenize,
      relay: relays[i],
    });
  });
  const stop = async (): Promise<void> => {
    for (const inst of instances) inst.stopDriver();
    await Promise.all(instances.map((inst) => inst.close()));
    await Promise.all(relays.map(async (r) => (await r.drain(), await r.publisher.close())));
  };
  try {
    for (let i = 0; i < instances.length; i++) await instances[i]!.listen(port === 0 ? 0 : port + i);
  } catch (err) {
    await stop();
    throw err;
  }
  const byId = new Map(instances.map((inst) => [inst.id, inst]));
  return {
    instances,
    urls: instances.map((inst) => inst.url),
    instance(id) {
      const inst = byId.get(id);
      if (inst === undefined) throw new FleetError("UNKNOWN_INSTANCE", `No instance \`${id}\``);
      return inst;
    },
    stats() {
      const out: Record<string, InstanceStats> = {};
      for (const inst of instances) out[inst.id] = inst.stats();
      return out;
    },
    stop,
  };
}
