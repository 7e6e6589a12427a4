/**
 * The replay side of a KV-event feed: a DEALER on the engine's replay ROUTER, one round trip per
 * replay — `["", start_seq]` out, every buffered batch from `start_seq` back, then an end marker
 * with seq −1 (vLLM's `ZmqEventPublisher`). Each reply within `replayTimeoutMs`, at most
 * `maxReplayBatches` of them.
 */
import { type RouterError, isRouterError } from "../errors.js";
import { log } from "../logger.js";
import type { KvEventBatch } from "./events.js";
import type { FeedConfig } from "./feed-options.js";
import { type KvWireDecoder, seqFrame } from "./wire.js";

type ZmqModule = typeof import("zeromq");

const EMPTY = new Uint8Array(0);

/** The feed's counters a replay adds to. */
export interface ReplayCounts {
  skippedEvents: number;
  decodeErrors: number;
}

/** One feed's replay client: at most one replay at a time (the feed's), closed with the feed. */
export class KvReplayClient {
  private dealer: import("zeromq").Dealer | undefined;
  private closed = false;

  constructor(
    private readonly zmq: ZmqModule,
    private readonly wire: KvWireDecoder,
    private readonly cfg: FeedConfig,
    private readonly counts: ReplayCounts,
  ) {}

  private get engine(): string {
    return this.cfg.engine;
  }

  /** Closes the replay under way, if any (the feed is closing: its failure is not reported). */
  close(): void {
    this.closed = true;
    this.dealer?.close();
  }

  /** One replay round trip; `false` when it failed (the caller clears what is missing). */
  async replay(from: bigint, onBatch: (seq: bigint, batch: KvEventBatch) => void): Promise<boolean> {
    const dealer = new this.zmq.Dealer({ linger: 0, receiveHighWaterMark: Math.min(this.cfg.maxReplayBatches + 1, 100_000) });
    this.dealer = dealer;
    let timer: unknown;
    let timedOut = false;
    const arm = () => {
      if (timer !== undefined) this.cfg.timers.clearTimeout(timer);
      timer = this.cfg.timers.setTimeout(() => {
        timedOut = true;
        dealer.close();
      }, this.cfg.replayTimeoutMs);
    };
    try {
      arm();
      dealer.connect(this.cfg.replayEndpoint!);
      await dealer.send([EMPTY, seqFrame(from)]);
      for (let replies = 0; ; replies++) {
        if (replies > this.cfg.maxReplayBatches) {
          log(this.cfg.logger, "warn", `KV-event feed of ${this.engine}: replay sent more than ${this.cfg.maxReplayBatches} batches, abandoned`, { engine: this.engine });
          return false;
        }
        const frames = await dealer.receive();
        arm();
        const reply = this.wire.decodeReplayReply(frames);
        if (reply.end) return true;
        this.counts.skippedEvents += reply.skippedEvents;
        onBatch(reply.seq, reply.batch);
      }
    } catch (error) {
      if (isRouterError(error) && (error as RouterError).code === "ERR_KV_EVENT_DECODE") this.counts.decodeErrors++;
      if (!this.closed) {
        const why = timedOut ? `no reply within ${this.cfg.replayTimeoutMs} ms` : error instanceof Error ? error.message : String(error);
        log(this.cfg.logger, "warn", `KV-event feed of ${this.engine}: replay from ${from} failed (${why}); the engine's blocks are forgotten until it publishes again`, {
          engine: this.engine,
        });
      }
      return false;
    } finally {
      if (timer !== undefined) this.cfg.timers.clearTimeout(timer);
      dealer.close();
      if (this.dealer === dealer) this.dealer = undefined;
    }
  }
}
