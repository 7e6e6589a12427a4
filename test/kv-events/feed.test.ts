/**
 * The feed against the vLLM-exact publisher over real ZeroMQ sockets on loopback: late join,
 * dropped batches, publisher restart, replay endpoint down, hostile frames, a replay storm,
 * the data-parallel rank's port, bad configuration.
 *
 * Each published batch stores one block whose hash is a marker; the sink keeps the set of markers
 * it holds, as an index would. The assertion is always the same: once the feed says it is in
 * sync, the sink holds exactly what the engine published since it (re)started, or, after a loss
 * it could not repair, nothing older than the loss.
 */
import { freePort, waitFor } from "./support.js";
import { afterEach, describe, expect, it } from "vitest";
import { Router } from "zeromq";
import type { KvEventBatch, KvEventSink } from "../../src/kv-events/events.js";
import { KvEventFeed, type KvEventFeedOptions } from "../../src/kv-events/feed.js";
import { KvEventFeeds } from "../../src/kv-events/feeds.js";
import { TEST_TIMERS } from "../../src/internal/timers.js";
import { encodeMsgpack, Float64 } from "../../tools/fleet/kv-events/msgpack.js";
import { KvEventPublisher, wireSeq, type KvEventPublisherOptions, type WireEvent } from "../../tools/fleet/kv-events/publisher.js";

class MarkerSink implements KvEventSink {
  readonly held = new Set<bigint>();
  readonly log: string[] = [];
  lastBatch: KvEventBatch | undefined;
  apply(engine: string, batch: KvEventBatch): void {
    expect(engine).toBe("e1");
    this.lastBatch = batch;
    for (const e of batch.events) {
      if (e.type === "BlockStored") for (const h of e.blockHashes) this.held.add(h);
      if (e.type === "BlockRemoved") for (const h of e.blockHashes) this.held.delete(h);
      if (e.type === "AllBlocksCleared") this.held.clear();
    }
    this.log.push("apply");
  }
  clear(engine: string): void {
    expect(engine).toBe("e1");
    this.held.clear();
    this.log.push("clear");
  }
  markers(): number[] {
    return [...this.held].map(Number).sort((a, b) => a - b);
  }
}

const store = (marker: number): WireEvent => ({
  type: "BlockStored",
  block_hashes: [BigInt(marker)],
  parent_block_hash: null,
  token_ids: [marker],
  block_size: 1,
  lora_id: null,
  medium: "GPU",
  lora_name: null,
});

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  while (open.length > 0) await open.pop()!.close();
});

async function publisher(options: KvEventPublisherOptions): Promise<KvEventPublisher> {
  const p = await KvEventPublisher.open(options);
  open.push(p);
  return p;
}

async function feed(options: Partial<KvEventFeedOptions> & Pick<KvEventFeedOptions, "endpoint" | "sink">): Promise<KvEventFeed> {
  const f = await KvEventFeed.open({ engine: "e1", minReplayIntervalMs: 0, replayTimeoutMs: 500, ...options });
  open.push(f);
  return f;
}

/**
 * Publishes stores of `next()` until the feed has applied one live batch (a SUB socket misses
 * what is published before its subscription reaches the publisher); returns the markers sent.
 */
async function prime(pub: KvEventPublisher, f: KvEventFeed, next: () => number): Promise<number[]> {
  const sent: number[] = [];
  const start = Date.now();
  while (!f.inSync()) {
    if (Date.now() - start > 5000) throw new Error("the feed never synced");
    const m = next();
    sent.push(m);
    await pub.publish([store(m)]);
    await new Promise((r) => setTimeout(r, 20));
  }
  return sent;
}

function counter(from = 0): () => number {
  let n = from;
  return () => n++;
}

describe("KvEventFeed over ZeroMQ", () => {
  it("a late joiner replays what the engine published before it came", async () => {
    const [port, replayPort] = [await freePort(), await freePort()];
    const pub = await publisher({ endpoint: `tcp://127.0.0.1:${port}`, replayEndpoint: `tcp://127.0.0.1:${replayPort}`, topic: "kv-events" });
    const next = counter();
    const early: number[] = [];
    for (let i = 0; i < 5; i++) {
      const m = next();
      early.push(m);
      await pub.publish([store(m)]);
    }
    const sink = new MarkerSink();
    const f = await feed({ endpoint: `tcp://127.0.0.1:${port}`, replayEndpoint: `tcp://127.0.0.1:${replayPort}`, topic: "kv-events", sink });
    expect(f.inSync()).toBe(false);
    const live = await prime(pub, f, next);
    await waitFor(() => sink.markers().length === early.length + live.length, "every batch");
    expect(sink.markers()).toEqual([...early, ...live]);
    expect(sink.log[0]).toBe("clear");
    const s = f.stats();
    expect(s.replays).toBeGreaterThanOrEqual(1);
    expect(s.replayedBatches).toBeGreaterThanOrEqual(5);
    expect(s.dropped).toBe(0);
    expect(s.inSync).toBe(true);
  });

  it("batches lost to the high-water mark are replayed, nothing cleared", async () => {
    const [port, replayPort] = [await freePort(), await freePort()];
    const pub = await publisher({ endpoint: `tcp://127.0.0.1:${port}`, replayEndpoint: `tcp://127.0.0.1:${replayPort}` });
    const sink = new MarkerSink();
    const clock = { now: () => 1_800_000_000_000 };
    const f = await feed({ endpoint: `tcp://127.0.0.1:${port}`, replayEndpoint: `tcp://127.0.0.1:${replayPort}`, sink, clock });
    const next = counter();
    const sent = await prime(pub, f, next);
    const clearsBefore = f.stats().clears;
    const lost = [next(), next(), next()];
    for (const m of lost) await pub.drop([store(m)]);
    const after = next();
    await pub.publish([store(after)], 1_799_999_999.5);
    await waitFor(() => sink.held.has(BigInt(after)), "the batch after the gap");
    expect(sink.markers()).toEqual([...sent, ...lost, after]);
    const s = f.stats();
    expect(s.gaps).toBe(1);
    expect(s.clears).toBe(clearsBefore);
    expect(s.dropped).toBe(0);
    expect(s.lagMs).toBe(500);
    expect(s.inSync).toBe(true);
  });

  it("the replay answers without the topic frame (vLLM before v0.26) work the same", async () => {
    const [port, replayPort] = [await freePort(), await freePort()];
    const pub = await publisher({ endpoint: `tcp://127.0.0.1:${port}`, replayEndpoint: `tcp://127.0.0.1:${replayPort}`, replayTopic: false, encoding: { events: "array" } });
    const sink = new MarkerSink();
    const f = await feed({ endpoint: `tcp://127.0.0.1:${port}`, replayEndpoint: `tcp://127.0.0.1:${replayPort}`, sink });
    const next = counter();
    const sent = await prime(pub, f, next);
    const lost = next();
    await pub.drop([store(lost)]);
    const after = next();
    await pub.publish([store(after)]);
    await waitFor(() => sink.held.has(BigInt(after)), "the batch after the gap");
    expect(sink.markers()).toEqual([...sent, lost, after]);
    expect(f.stats().gaps).toBe(1);
  });

  it("a restarted publisher (seq back to 0) clears what the old one held", async () => {
    const [port, replayPort] = [await freePort(), await freePort()];
    const endpoints = { endpoint: `tcp://127.0.0.1:${port}`, replayEndpoint: `tcp://127.0.0.1:${replayPort}` };
    const first = await publisher(endpoints);
    const sink = new MarkerSink();
    const f = await feed({ ...endpoints, sink });
    await prime(first, f, counter(100));
    expect(sink.markers().length).toBeGreaterThan(0);
    await first.close();
    const second = await publisher(endpoints);
    const next = counter(1000);
    const fresh: number[] = [];
    await waitFor(() => f.inSync() === false || sink.held.has(1000n), "the disconnect");
    const start = Date.now();
    // Publish until the new publisher's batches reach the sink.
    while (!fresh.some((m) => sink.held.has(BigInt(m)))) {
      if (Date.now() - start > 5000) throw new Error("the new publisher was never heard");
      const m = next();
      fresh.push(m);
      await second.publish([store(m)]);
      await new Promise((r) => setTimeout(r, 20));
    }
    await waitFor(() => sink.markers().length === fresh.length, "the new incarnation's batches");
    expect(sink.markers()).toEqual(fresh);
    expect(f.stats().clears).toBeGreaterThanOrEqual(2);
    expect(f.inSync()).toBe(true);
  });

  it("seq going back to 0 on a live connection is a restart: cleared, resumed", async () => {
    const port = await freePort();
    const pub = await publisher({ endpoint: `tcp://127.0.0.1:${port}` });
    const sink = new MarkerSink();
    const f = await feed({ endpoint: `tcp://127.0.0.1:${port}`, sink });
    await prime(pub, f, counter());
    await pub.publish([store(50)]);
    await waitFor(() => sink.held.has(50n), "a batch after the prime");
    const clears = f.stats().clears;
    // What a restarted publisher sends first, on a connection that did not drop.
    await pub.sendRaw([new Uint8Array(0), wireSeq(0n), pub.encode([store(77)])]);
    await waitFor(() => sink.held.has(77n), "the restarted publisher's batch");
    expect(sink.markers()).toEqual([77]);
    expect(f.stats()).toMatchObject({ restarts: 1, clears: clears + 1, lastSeq: 0n, inSync: true });
  });

  it("with the replay endpoint down, a gap clears and the feed resyncs from the live stream", async () => {
    const [port, deadPort] = [await freePort(), await freePort()];
    const pub = await publisher({ endpoint: `tcp://127.0.0.1:${port}` });
    const next = counter();
    await pub.publish([store(next())]); // before the feed: its join must replay, and cannot
    const sink = new MarkerSink();
    const f = await feed({ endpoint: `tcp://127.0.0.1:${port}`, replayEndpoint: `tcp://127.0.0.1:${deadPort}`, replayTimeoutMs: 150, sink });
    await prime(pub, f, next);
    const failuresBefore = f.stats().replayFailures;
    expect(failuresBefore).toBeGreaterThanOrEqual(1); // the join's replay found nobody
    await pub.drop([store(next())]);
    const after = next();
    await pub.publish([store(after)]);
    await waitFor(() => sink.held.has(BigInt(after)), "the batch after the gap");
    expect(sink.markers()).toEqual([after]);
    const s = f.stats();
    expect(s.replayFailures).toBe(failuresBefore + 1);
    expect(s.dropped).toBe(1);
    expect(s.inSync).toBe(true);
    const more = next();
    await pub.publish([store(more)]);
    await waitFor(() => sink.held.has(BigInt(more)), "the next batch");
    expect(sink.markers()).toEqual([after, more]);
  });

  it("the replay timeout runs on the injected timers: nothing waits on the wall clock", async () => {
    const [port, deadPort] = [await freePort(), await freePort()];
    const pub = await publisher({ endpoint: `tcp://127.0.0.1:${port}` });
    const due: (() => void)[] = [];
    const timers = { setTimeout: (fn: () => void) => due.push(fn), clearTimeout: () => {} };
    await pub.publish([store(0)]); // before the feed: its join must replay
    const sink = new MarkerSink();
    const f = await feed({ endpoint: `tcp://127.0.0.1:${port}`, replayEndpoint: `tcp://127.0.0.1:${deadPort}`, replayTimeoutMs: 600_000, [TEST_TIMERS]: timers, sink } as Omit<KvEventFeedOptions, "engine">);
    const next = counter(1);
    for (let i = 0; f.stats().replays === 0; i++) {
      if (i > 200) throw new Error("the join never replayed");
      await pub.publish([store(next())]);
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(f.inSync()).toBe(false); // replaying, against nobody, for as long as the timers say
    await new Promise((r) => setTimeout(r, 50));
    expect(f.inSync()).toBe(false);
    due.splice(0).forEach((fire) => fire());
    await waitFor(() => f.inSync(), "the resync after the timeout");
    expect(f.stats()).toMatchObject({ replays: 1, replayFailures: 1 });
  });

  it("without a replay endpoint, a gap clears at once", async () => {
    const port = await freePort();
    const pub = await publisher({ endpoint: `tcp://127.0.0.1:${port}` });
    const sink = new MarkerSink();
    const f = await feed({ endpoint: `tcp://127.0.0.1:${port}`, sink });
    const next = counter();
    await prime(pub, f, next);
    await pub.drop([store(next())]);
    const after = next();
    await pub.publish([store(after)]);
    await waitFor(() => sink.held.has(BigInt(after)), "the batch after the gap");
    expect(sink.markers()).toEqual([after]);
    expect(f.stats()).toMatchObject({ gaps: 1, replays: 0, dropped: 1 });
  });

  it("malformed and hostile frames are counted, never crash, and a lost payload clears", async () => {
    const [port, replayPort] = [await freePort(), await freePort()];
    const pub = await publisher({ endpoint: `tcp://127.0.0.1:${port}`, replayEndpoint: `tcp://127.0.0.1:${replayPort}` });
    const sink = new MarkerSink();
    const f = await feed({ endpoint: `tcp://127.0.0.1:${port}`, replayEndpoint: `tcp://127.0.0.1:${replayPort}`, sink });
    const next = counter();
    await prime(pub, f, next);
    const empty = new Uint8Array(0);
    // Without a readable seq: counted and ignored.
    await pub.sendRaw([empty, Uint8Array.from([0, 0, 0, 1]), encodeMsgpack([new Float64(1), []])]);
    await pub.sendRaw([empty, wireSeq(0n)]);
    await pub.sendRaw([empty, new Uint8Array(9), empty, empty]);
    // Unknown types and stores without tokens: skipped, not errors.
    await pub.publishPayload(encodeMsgpack([new Float64(1), [{ type: "BlockMoved" }, ["BlockStored", [9], null, [], 0, null, "CPU", null]]]));
    const kept = next();
    await pub.publish([store(kept)]);
    await waitFor(() => sink.held.has(BigInt(kept)), "the batch after the noise");
    expect(f.stats()).toMatchObject({ decodeErrors: 3, skippedEvents: 2, clears: 1 });
    // A batch of ours that cannot be read (huge declared array, bad tokens): its content is lost.
    await pub.publishPayload(Uint8Array.from([0x92, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0, 0xdd, 0xff, 0xff, 0xff, 0xff]));
    await pub.publishPayload(encodeMsgpack([new Float64(1), [["BlockStored", [1], null, [-1], 1, null, null, null]]]));
    const after = next();
    await pub.publish([store(after)]);
    await waitFor(() => sink.held.has(BigInt(after)), "the batch after the bad payloads");
    expect(sink.markers()).toEqual([after]);
    const s = f.stats();
    expect(s).toMatchObject({ decodeErrors: 5, gaps: 0, dropped: 2, inSync: true });
    expect(s.clears).toBe(3);
  });

  it("a replay storm is bounded: an endless replay is abandoned, and replays are spaced", async () => {
    const [port, replayPort] = [await freePort(), await freePort()];
    const pub = await publisher({ endpoint: `tcp://127.0.0.1:${port}` });
    // A replay endpoint that never sends the end marker and never stops.
    const storm = new Router({ linger: 0, sendHighWaterMark: 1_000_000 });
    await storm.bind(`tcp://127.0.0.1:${replayPort}`);
    let stopped = false;
    open.push({ close: async () => void ((stopped = true), storm.close()) });
    const payload = encodeMsgpack([new Float64(1), [["AllBlocksCleared"]]]);
    void (async () => {
      try {
        for await (const [id] of storm) {
          for (let seq = 0n; !stopped && seq < 20_000n; seq++) await storm.send([id!, new Uint8Array(0), wireSeq(seq), payload]);
        }
      } catch {
        // Closed.
      }
    })();
    const next = counter();
    await pub.publish([store(next())]); // before the feed: its join replays
    let now = 1_800_000_000_000;
    const sink = new MarkerSink();
    const f = await feed({
      endpoint: `tcp://127.0.0.1:${port}`,
      replayEndpoint: `tcp://127.0.0.1:${replayPort}`,
      sink,
      maxReplayBatches: 50,
      minReplayIntervalMs: 60_000,
      clock: { now: () => now },
    });
    await prime(pub, f, next);
    const s1 = f.stats();
    expect(s1.replays).toBe(1);
    expect(s1.replayFailures).toBe(1);
    expect(s1.replayedBatches).toBeLessThanOrEqual(50);
    // A gap within a minute of that replay: no second replay, a clear.
    await pub.drop([store(next())]);
    const after = next();
    await pub.publish([store(after)]);
    await waitFor(() => sink.held.has(BigInt(after)), "the batch after the gap");
    expect(f.stats()).toMatchObject({ replays: 1, replayFailures: 2, gaps: 1 });
    expect(sink.markers()).toEqual([after]);
    // A minute later, a gap may replay again.
    now += 60_000;
    await pub.drop([store(next())]);
    await pub.publish([store(next())]);
    await waitFor(() => f.stats().replays === 2 && f.inSync(), "the second replay");
  });

  it("subscribes to the data-parallel rank's port", async () => {
    const base = await freePort();
    const pub = await publisher({ endpoint: `tcp://127.0.0.1:${base}`, dataParallelRank: 1 });
    expect(pub.endpoint).toBe(`tcp://127.0.0.1:${base + 1}`);
    const sink = new MarkerSink();
    const f = await feed({ endpoint: `tcp://127.0.0.1:${base}`, dataParallelRank: 1, sink });
    expect(f.stats().endpoint).toBe(`tcp://127.0.0.1:${base + 1}`);
    await prime(pub, f, counter());
    expect(sink.lastBatch?.dataParallelRank).toBe(1);
  });

  it("close() releases the sockets, twice is harmless, and nothing is applied after it", async () => {
    const port = await freePort();
    const pub = await publisher({ endpoint: `tcp://127.0.0.1:${port}` });
    const sink = new MarkerSink();
    const f = await KvEventFeed.open({ engine: "e1", endpoint: `tcp://127.0.0.1:${port}`, sink });
    await prime(pub, f, counter());
    await f.close();
    await f.close();
    expect(f.inSync()).toBe(false);
    const applied = sink.log.length;
    await pub.publish([store(999)]);
    await new Promise((r) => setTimeout(r, 50));
    expect(sink.log.length).toBe(applied);
  });
});

describe("KvEventFeeds", () => {
  it("answers inSync per engine, follows additions and removals, and closes them all", async () => {
    const [pa, pb] = [await freePort(), await freePort()];
    const a = await publisher({ endpoint: `tcp://127.0.0.1:${pa}` });
    const b = await publisher({ endpoint: `tcp://127.0.0.1:${pb}` });
    const seen = new Map<string, number>();
    const sink: KvEventSink = { apply: (engine) => void seen.set(engine, (seen.get(engine) ?? 0) + 1), clear() {} };
    const feeds = new KvEventFeeds();
    open.push(feeds);
    await feeds.add({ engine: "a", endpoint: `tcp://127.0.0.1:${pa}`, sink });
    await feeds.add({ engine: "b", endpoint: `tcp://127.0.0.1:${pb}`, sink });
    expect(feeds.inSync("a")).toBe(false);
    expect(feeds.inSync("nobody")).toBe(false);
    await prime(a, feeds.get("a")!, counter());
    expect(feeds.inSync("a")).toBe(true);
    expect(feeds.inSync("b")).toBe(false);
    await prime(b, feeds.get("b")!, counter());
    expect(feeds.stats().map((s) => [s.engine, s.inSync])).toEqual([["a", true], ["b", true]]);
    await feeds.remove("a");
    expect(feeds.inSync("a")).toBe(false);
    expect(feeds.get("a")).toBeUndefined();
    await feeds.close();
    expect(feeds.inSync("b")).toBe(false);
    await expect(feeds.add({ engine: "c", endpoint: `tcp://127.0.0.1:${pa}`, sink })).rejects.toThrow(/closed/);
  });
});

describe("KvEventFeed options", () => {
  const sink = new MarkerSink();
  const ok = { engine: "e1", endpoint: "tcp://10.0.0.7:5557", sink };
  it.each([
    ["no engine", { ...ok, engine: "" }, TypeError, /`engine`/],
    ["a wildcard host", { ...ok, endpoint: "tcp://*:5557" }, RangeError, /`endpoint`.*engine binds "\*"/],
    ["an http endpoint", { ...ok, endpoint: "http://10.0.0.7:5557" }, RangeError, /`endpoint`/],
    ["no endpoint", { ...ok, endpoint: undefined }, TypeError, /`endpoint`/],
    ["a replay endpoint without a port", { ...ok, replayEndpoint: "tcp://10.0.0.7" }, RangeError, /`replayEndpoint`/],
    ["a port past 65535 with the rank", { ...ok, endpoint: "tcp://h:65535", dataParallelRank: 1 }, RangeError, /65535/],
    ["a negative rank", { ...ok, dataParallelRank: -1 }, RangeError, /`dataParallelRank`/],
    ["no sink", { ...ok, sink: undefined }, TypeError, /`sink`/],
    ["a sink without clear", { ...ok, sink: { apply() {} } }, TypeError, /`sink`/],
    ["a zero replay timeout", { ...ok, replayTimeoutMs: 0 }, RangeError, /`replayTimeoutMs`/],
    ["a fractional replay bound", { ...ok, maxReplayBatches: 1.5 }, TypeError, /`maxReplayBatches`/],
    ["a zero high-water mark", { ...ok, receiveHighWaterMark: 0 }, RangeError, /`receiveHighWaterMark`/],
    ["a numeric topic", { ...ok, topic: 5 }, TypeError, /`topic`/],
    ["a clock without now", { ...ok, clock: {} }, TypeError, /`clock`/],
    ["a bad limit", { ...ok, limits: { maxTokensPerEvent: 0 } }, RangeError, /maxTokensPerEvent/],
  ])("%s", async (_, options, type, message) => {
    const attempt = KvEventFeed.open(options as unknown as KvEventFeedOptions);
    await expect(attempt).rejects.toBeInstanceOf(type);
    await expect(attempt).rejects.toThrow(message);
  });

  it("offsets an ipc endpoint by suffix, as vLLM does", async () => {
    const f = await KvEventFeed.open({ engine: "e1", endpoint: "ipc:///tmp/prefix-router-kv-test", dataParallelRank: 2, sink });
    expect(f.stats().endpoint).toBe("ipc:///tmp/prefix-router-kv-test_dp2");
    await f.close();
  });
});
