/**
 * One engine's KV-event feed: a ZeroMQ SUB socket on the engine's publisher, a DEALER on its
 * replay ROUTER when it has one, the wire decoder, and the sequence logic that keeps a
 * {@link KvEventSink} exact or, when it cannot be, empty.
 *
 * Follows the subscriber side of vLLM's `ZmqEventPublisher` (`vllm/distributed/kv_events.py`)
 * and its example subscriber (`examples/online_serving/kv_events_subscriber.py`): frames
 * `[topic, seq, payload]`, `seq` from 0 per publisher process, a replay request `["", start_seq]`
 * answered by every buffered batch from `start_seq` and an end marker with seq −1.
 *
 * The rules, per message of seq S (L = the last seq accounted for):
 * - **join** (the first message, or the first after the connection dropped): clear the sink,
 *   replay `[0, S)` from the engine's buffer, apply S. A reconnection is treated as a join
 *   because a publisher that restarted while we were away may already be past L: its seqs
 *   would look contiguous while its cache is not the one we indexed.
 * - **in order** (S = L + 1): apply.
 * - **gap** (S > L + 1; the PUB socket's high-water mark dropped messages): replay `[L + 1, S)`;
 *   if the replies are contiguous, apply them and S, nothing cleared; if the buffer no longer
 *   holds them, the replay fails or times out, or it is refused because the last one started
 *   less than `minReplayIntervalMs` ago (many routers, one engine: no replay storm), clear the
 *   sink and resume from S.
 * - **publisher restart** (S ≤ L, typically back to 0): clear, replay `[0, S)`, apply S.
 * - **undecodable payload** with a readable seq: its content is lost for good (a replay returns
 *   the same bytes), so clear and resume after it; a message without a readable seq is counted
 *   and ignored (gap detection catches a real loss).
 *
 * Bounded memory: the SUB socket's receive high-water mark caps what waits while a replay runs
 * (ZeroMQ drops beyond it, which the next message shows as a gap); a replay reads at most
 * `maxReplayBatches` replies, each within `replayTimeoutMs`, and applies them as they come.
 * `inSync()` is false until the first message after a join or a clear is applied, and while a
 * replay runs: a strategy routes approximately for that engine meanwhile.
 *
 * The options and their checks are in `feed-options.ts`, the replay round trip in `replay.ts`.
 */
import { importPeer } from "../internal/optional-peer.js";
import { log } from "../logger.js";
import type { KvEventBatch } from "./events.js";
import { type FeedConfig, checkOptions, type KvEventFeedOptions } from "./feed-options.js";
import { KvReplayClient } from "./replay.js";
import { KvWireDecoder } from "./wire.js";

export { DEFAULT_KV_MAX_REPLAY_BATCHES, DEFAULT_KV_MIN_REPLAY_INTERVAL_MS, DEFAULT_KV_RECEIVE_HIGH_WATER_MARK, DEFAULT_KV_REPLAY_TIMEOUT_MS, type KvEventFeedOptions, kvEndpoint } from "./feed-options.js";

/** What a feed has done; counters since it opened. */
export interface KvEventFeedStats {
  readonly engine: string;
  /** The SUB endpoint after the rank offset. */
  readonly endpoint: string;
  readonly inSync: boolean;
  /** The last seq accounted for, if any. */
  readonly lastSeq: bigint | undefined;
  /** Batches applied (live and replayed). */
  readonly batches: number;
  /** Events applied. */
  readonly events: number;
  /** Events applied per second over the last 10 s. */
  readonly eventsPerSecond: number;
  /** Now − the `ts` of the last live batch applied, in ms (`undefined` before one). */
  readonly lagMs: number | undefined;
  /** Jumps forward in seq. */
  readonly gaps: number;
  /** Seq going backwards (a publisher restart). */
  readonly restarts: number;
  /** Replays requested. */
  readonly replays: number;
  /** Replays that failed (a timeout, an error, too many replies) or were refused as too soon after the last one. */
  readonly replayFailures: number;
  /** Batches recovered through replays. */
  readonly replayedBatches: number;
  /** Times the sink was cleared. */
  readonly clears: number;
  /** Messages or replies that could not be decoded. */
  readonly decodeErrors: number;
  /** Events skipped by the decoder (unknown types, stores without usable tokens). */
  readonly skippedEvents: number;
  /** Batches known lost: seqs neither received nor replayed, and undecodable payloads. */
  readonly dropped: number;
  /** Times the sink threw (the feed carries on). */
  readonly sinkErrors: number;
}

const RATE_WINDOW_S = 10;

/**
 * One engine's KV-event feed; see the file header for its rules.
 *
 * @example
 * const feed = await KvEventFeed.open({
 *   engine: "http://10.0.0.7:8000",
 *   endpoint: "tcp://10.0.0.7:5557",
 *   replayEndpoint: "tcp://10.0.0.7:5558",
 *   topic: "kv-events",
 *   sink: index,
 * });
 * feed.inSync(); // false until the first batch is applied
 * await feed.close();
 */
export class KvEventFeed {
  /** The target id this feed reports for. */
  readonly engine: string;
  private readonly cfg: FeedConfig;
  private joined = false;
  private synced = false;
  private replaying = false;
  private closed = false;
  private lastSeq: bigint | undefined;
  private lastReplayAt = Number.NEGATIVE_INFINITY;
  private lagMs: number | undefined;
  private readonly rate = new Float64Array(RATE_WINDOW_S);
  private rateSecond = 0;
  private readonly counts = {
    batches: 0,
    events: 0,
    gaps: 0,
    restarts: 0,
    replays: 0,
    replayFailures: 0,
    replayedBatches: 0,
    clears: 0,
    decodeErrors: 0,
    skippedEvents: 0,
    dropped: 0,
    sinkErrors: 0,
  };
  private readonly loop: Promise<void>;
  private readonly replayClient: KvReplayClient;

  private constructor(
    cfg: FeedConfig,
    zmq: typeof import("zeromq"),
    private readonly wire: KvWireDecoder,
    private readonly sub: import("zeromq").Subscriber,
  ) {
    this.cfg = cfg;
    this.engine = cfg.engine;
    this.replayClient = new KvReplayClient(zmq, wire, cfg, this.counts);
    sub.events.on("disconnect", () => {
      // The next message is a join: the publisher on the other side may be a new one.
      this.joined = false;
      this.synced = false;
    });
    this.loop = this.run();
  }

  /**
   * Validates `options`, loads `zeromq` and `@msgpack/msgpack`, and connects.
   * @throws TypeError / RangeError for an invalid option (the message names it)
   * @throws RouterError `ERR_MISSING_PEER` when `zeromq` or `@msgpack/msgpack` is not installed
   */
  static async open(options: KvEventFeedOptions): Promise<KvEventFeed> {
    const cfg = checkOptions(options);
    const wire = await KvWireDecoder.load(options.limits);
    const zmq = await importPeer("zeromq", "The KV-event feed", () => import("zeromq"));
    const sub = new zmq.Subscriber({ receiveHighWaterMark: cfg.receiveHighWaterMark, linger: 0 });
    try {
      sub.connect(cfg.endpoint);
      sub.subscribe(cfg.topic);
    } catch (error) {
      sub.close();
      throw error;
    }
    return new KvEventFeed(cfg, zmq, wire, sub);
  }

  /**
   * True when the sink holds what the engine published, up to the last message: false before the
   * first message, after a clear until the next batch is applied, and while a replay runs.
   */
  inSync(): boolean {
    return this.synced && !this.replaying && !this.closed;
  }

  /** Counters and state; see {@link KvEventFeedStats}. */
  stats(): KvEventFeedStats {
    const now = this.cfg.clock.now();
    this.advanceRate(now);
    let sum = 0;
    for (const r of this.rate) sum += r;
    return {
      engine: this.engine,
      endpoint: this.cfg.endpoint,
      inSync: this.inSync(),
      lastSeq: this.lastSeq,
      ...this.counts,
      eventsPerSecond: sum / RATE_WINDOW_S,
      lagMs: this.lagMs,
    };
  }

  /** Closes the sockets; the sink hears nothing more. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.sub.close();
    this.replayClient.close();
    await this.loop;
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      let frames: Buffer[];
      try {
        frames = await this.sub.receive();
      } catch (error) {
        if (this.closed) return;
        log(this.cfg.logger, "warn", `KV-event feed of ${this.engine}: receive failed`, { engine: this.engine, error });
        continue;
      }
      try {
        await this.onMessage(frames);
      } catch (error) {
        // Never reached by design; a bug must not stop the feed.
        log(this.cfg.logger, "error", `KV-event feed of ${this.engine}: ${String(error)}`, { engine: this.engine, error });
      }
    }
  }

  private async onMessage(frames: readonly Uint8Array[]): Promise<void> {
    let message;
    try {
      message = this.wire.decodeMessage(frames);
    } catch (error) {
      this.counts.decodeErrors++;
      log(this.cfg.logger, "warn", `KV-event feed of ${this.engine}: ${error instanceof Error ? error.message : String(error)}`, { engine: this.engine });
      const seq = frames.length === 3 && frames[1]!.byteLength === 8 ? new DataView(frames[1]!.buffer, frames[1]!.byteOffset, 8).getBigUint64(0) : undefined;
      if (seq !== undefined && this.joined) {
        // A batch of ours whose content is lost: what the sink holds may now be wrong.
        this.counts.dropped++;
        this.clear();
        this.lastSeq = seq;
      }
      return;
    }
    const { seq, batch, skippedEvents } = message;
    this.counts.skippedEvents += skippedEvents;
    const last = this.lastSeq;
    if (!this.joined) {
      this.joined = true;
      this.clear();
      if (seq > 0n) await this.recover(0n, seq, { cleared: true, countLost: false });
    } else if (last !== undefined && seq <= last) {
      this.counts.restarts++;
      log(this.cfg.logger, "info", `KV-event feed of ${this.engine}: seq went back from ${last} to ${seq}, the publisher restarted`, { engine: this.engine });
      this.clear();
      if (seq > 0n) await this.recover(0n, seq, { cleared: true, countLost: true });
    } else if (last !== undefined && seq > last + 1n) {
      this.counts.gaps++;
      await this.recover(last + 1n, seq, { cleared: false, countLost: true });
    }
    if (this.closed) return;
    this.apply(batch);
    this.lastSeq = seq;
    this.synced = true;
    this.lagMs = this.cfg.clock.now() - batch.ts * 1000;
  }

  /**
   * Fills `[from, until)` from the replay socket, applying replies as they come. Anything it
   * cannot fill clears the sink unless it was just cleared (with `countLost`, the missing
   * batches count as dropped).
   */
  private async recover(from: bigint, until: bigint, opts: { cleared: boolean; countLost: boolean }): Promise<void> {
    const now = this.cfg.clock.now();
    let expected = from;
    let cleared = opts.cleared;
    const lose = (upTo: bigint) => {
      if (opts.countLost && upTo > expected) this.counts.dropped += Number(upTo - expected);
      if (!cleared) this.clear();
      cleared = true;
    };
    if (this.cfg.replayEndpoint === undefined || now - this.lastReplayAt < this.cfg.minReplayIntervalMs) {
      if (this.cfg.replayEndpoint !== undefined) this.counts.replayFailures++;
      lose(until);
      return;
    }
    this.lastReplayAt = now;
    this.counts.replays++;
    this.replaying = true;
    try {
      const ok = await this.replayClient.replay(from, (seq, batch) => {
        if (seq < expected || seq >= until) return;
        if (seq > expected) lose(seq);
        this.apply(batch);
        this.counts.replayedBatches++;
        expected = seq + 1n;
      });
      if (!ok) this.counts.replayFailures++;
      if (expected < until) lose(until);
    } finally {
      this.replaying = false;
    }
  }


  private clear(): void {
    this.synced = false;
    this.counts.clears++;
    try {
      this.cfg.sink.clear(this.engine);
    } catch (error) {
      this.counts.sinkErrors++;
      log(this.cfg.logger, "error", `KV-event feed of ${this.engine}: the sink's clear threw`, { engine: this.engine, error });
    }
  }

  private apply(batch: KvEventBatch): void {
    this.counts.batches++;
    this.counts.events += batch.events.length;
    this.advanceRate(this.cfg.clock.now());
    this.rate[this.rateSecond % RATE_WINDOW_S]! += batch.events.length;
    try {
      this.cfg.sink.apply(this.engine, batch);
    } catch (error) {
      this.counts.sinkErrors++;
      log(this.cfg.logger, "error", `KV-event feed of ${this.engine}: the sink's apply threw`, { engine: this.engine, error });
    }
  }

  /** Moves the events-per-second window to the second of `nowMs`, zeroing the seconds skipped. */
  private advanceRate(nowMs: number): void {
    const second = Math.floor(nowMs / 1000);
    if (this.rateSecond === 0) this.rateSecond = second;
    for (let s = this.rateSecond + 1; s <= second && s - this.rateSecond <= RATE_WINDOW_S; s++) this.rate[s % RATE_WINDOW_S] = 0;
    if (second > this.rateSecond) this.rateSecond = second;
  }
}
