/**
 * The feeds of a fleet, by engine: what a strategy asks `inSync(engine)` of, and what follows the
 * target set (a feed opened for each engine that joins, closed for each that leaves).
 */
import type { KvEventFeedOptions, KvEventFeedStats } from "./feed.js";
import { KvEventFeed } from "./feed.js";

/**
 * One {@link KvEventFeed} per engine, keyed by the target id (`engine`).
 *
 * @example
 * const feeds = new KvEventFeeds();
 * await feeds.add({ engine: "a", endpoint: "tcp://10.0.0.7:5557", sink: index });
 * feeds.inSync("a"); // false until a's first batch is applied
 * await feeds.close();
 */
export class KvEventFeeds {
  private readonly byEngine = new Map<string, KvEventFeed>();
  private closed = false;

  /**
   * Opens a feed for `options.engine`, replacing (and closing) the one it had.
   * @throws as {@link KvEventFeed.open}; `Error` after {@link close}
   */
  async add(options: KvEventFeedOptions): Promise<KvEventFeed> {
    if (this.closed) throw new Error("KvEventFeeds: closed");
    const feed = await KvEventFeed.open(options);
    if (this.closed) {
      await feed.close();
      throw new Error("KvEventFeeds: closed");
    }
    const previous = this.byEngine.get(feed.engine);
    this.byEngine.set(feed.engine, feed);
    await previous?.close();
    return feed;
  }

  /** Closes and forgets `engine`'s feed (its sink is not cleared: the caller drops that engine). */
  async remove(engine: string): Promise<void> {
    const feed = this.byEngine.get(engine);
    this.byEngine.delete(engine);
    await feed?.close();
  }

  /** True when `engine` has a feed and it is in sync; false for an engine without one. */
  inSync(engine: string): boolean {
    return this.byEngine.get(engine)?.inSync() ?? false;
  }

  /** `engine`'s feed, if any. */
  get(engine: string): KvEventFeed | undefined {
    return this.byEngine.get(engine);
  }

  /** Every feed's stats, in the order the feeds were added. */
  stats(): KvEventFeedStats[] {
    return [...this.byEngine.values()].map((f) => f.stats());
  }

  /** Closes every feed. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    const feeds = [...this.byEngine.values()];
    this.byEngine.clear();
    await Promise.all(feeds.map((f) => f.close()));
  }
}
