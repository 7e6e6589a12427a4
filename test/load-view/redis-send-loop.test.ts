/**
 * The redis view's send loop under steady traffic, against a fake ioredis client whose calls the
 * test answers one by one (a slow Redis: every answer comes after new changes arrived). What
 * users rely on: the view's memory does not grow with the number of round trips — no chain of
 * pending calls or promises builds up while changes keep arriving before Redis answers — and
 * `refresh()` settles after its own round trip, whether or not traffic goes on.
 */
import { createHook } from "node:async_hooks";
import { describe, expect, it } from "vitest";
import { type RedisConfig, resolveLoadView } from "../../src/load-view/options.js";
import { RedisLoadView } from "../../src/load-view/redis.js";
import { silentLogger } from "../../src/logger.js";
import { ManualTimers, withTimers } from "./manual-timers.js";

type Reply = [number, string[], number, number];

/** The part of ioredis the view uses; every script call waits until the test answers it. */
class SlowRedis {
  static last: SlowRedis | undefined;
  status = "wait";
  readonly calls: { args: unknown[]; answer(reply: Reply): void; fail(e: Error): void }[] = [];
  private readonly listeners = new Map<string, ((...args: unknown[]) => void)[]>();

  constructor(_url: string, _options: Record<string, unknown>) {
    SlowRedis.last = this;
  }

  async connect(): Promise<void> {
    this.status = "ready";
    for (const f of this.listeners.get("ready") ?? []) f();
  }

  defineCommand(name: string): void {
    // `leave` (close()) is answered at once.
    (this as unknown as Record<string, unknown>)[name] = (...args: unknown[]) =>
      args[4] === "leave" ? Promise.resolve([1, [], 0, 0]) : new Promise<Reply>((answer, fail) => this.calls.push({ args, answer, fail }));
  }

  on(event: string, listener: (...args: unknown[]) => void): this {
    this.listeners.set(event, [...(this.listeners.get(event) ?? []), listener]);
    return this;
  }

  async quit(): Promise<void> {
    this.status = "end";
  }

  disconnect(): void {
    this.status = "end";
  }

  /** Answers the oldest call. */
  answer(reply: Reply = [1, [], 1, 0]): void {
    const call = this.calls.shift();
    if (call === undefined) throw new Error("no call to answer");
    call.answer(reply);
  }
}

/** Lets the view's continuations run (the answer's, then the next call). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function slowView(): { view: RedisLoadView<{ id: string }>; redis: SlowRedis } {
  const config = resolveLoadView(withTimers({ source: "redis", url: "redis://127.0.0.1:6379" }, new ManualTimers())) as RedisConfig;
  const view = new RedisLoadView<{ id: string }>(config, { clock: { now: () => 0 }, logger: silentLogger }, SlowRedis as never);
  return { view, redis: SlowRedis.last! };
}

/**
 * Promises created while `run` goes, and how many of them are still pending at its end
 * (async_hooks: `init` for each promise, `promiseResolve` when it settles).
 */
async function pendingPromisesAfter(run: () => Promise<void>): Promise<number> {
  const pending = new Set<number>();
  const hook = createHook({
    init(asyncId, type) {
      if (type === "PROMISE") pending.add(asyncId);
    },
    promiseResolve(asyncId) {
      pending.delete(asyncId);
    },
  });
  hook.enable();
  try {
    await run();
  } finally {
    hook.disable();
  }
  return pending.size;
}

describe("redis view: the send loop under steady traffic", () => {
  it("holds a bounded number of pending promises however many round trips a steady flow of changes keeps going", async () => {
    const { view, redis } = slowView();
    try {
      await settle();
      expect(redis.calls).toHaveLength(1);
      /** `n` round trips, each answered only after a lease opened and one closed while it was out. */
      const roundTrips = (n: number) => async () => {
        for (let i = 0; i < n; i++) {
          view.acquire(`t${i % 4}`);
          view.release(`t${(i + 2) % 4}`);
          redis.answer();
          await settle();
          // The changes that arrived during the call went out in the next one, at once.
          expect(redis.calls).toHaveLength(1);
        }
      };
      const after100 = await pendingPromisesAfter(roundTrips(100));
      const after1000 = await pendingPromisesAfter(roundTrips(1000));
      // A chain of one call per round trip would keep ≥ 1 pending promise per round trip: ≥ 1,000
      // here, ≥ 900 more than after 100. The hook also counts the process's other promises (the
      // test runner's, timers'), a few to a dozen on a loaded machine: the bounds leave room for those.
      expect(after1000).toBeLessThan(100);
      expect(after1000 - after100).toBeLessThan(50);
    } finally {
      await view.close();
    }
  });

  it("refresh() settles after its round trip while traffic goes on", async () => {
    const { view, redis } = slowView();
    try {
      await settle();
      redis.answer();
      await settle();
      expect(redis.calls).toHaveLength(0);
      let done = false;
      void view.refresh().then(() => (done = true));
      await settle();
      expect(redis.calls).toHaveLength(1);
      for (let i = 0; i < 50 && !done; i++) {
        view.acquire("a");
        redis.answer();
        await settle();
      }
      expect(done).toBe(true);
      expect(view.stats().refreshes).toBeLessThanOrEqual(3);
    } finally {
      await view.close();
    }
  });
});
