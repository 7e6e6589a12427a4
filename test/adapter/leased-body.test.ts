/**
 * The leased body both adapters wrap responses in, with a real router's leases: every way a body
 * can end releases its lease exactly once, with the outcome the adapter's hooks give.
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { type Lease, type ReleaseInfo, type Router, createRouter } from "prefix-router";
import type { LeaseOutcome } from "../../src/types.js";
import {
  type BodySource,
  LeasedBody,
  type LeasedBodyHooks,
  iterableSource,
  newLeaseRegistry,
} from "../../src/adapter/leased-body.js";

interface Release {
  outcome: LeaseOutcome;
  info: ReleaseInfo | undefined;
  error: unknown;
}

/** A source the test feeds by hand; records how it was closed. */
function manualSource(): BodySource<string> & { push(v: string): void; end(): void; fail(e: unknown): void; closed: unknown[] } {
  const queue: ((r: { done: false; value: string } | { done: true } | Error) => void)[] = [];
  const ready: ({ done: false; value: string } | { done: true } | Error)[] = [];
  const deliver = (r: { done: false; value: string } | { done: true } | Error): void => {
    const waiting = queue.shift();
    if (waiting === undefined) ready.push(r);
    else waiting(r);
  };
  const closed: unknown[] = [];
  return {
    closed,
    push: (value) => deliver({ done: false, value }),
    end: () => deliver({ done: true }),
    fail: (e) => deliver(e as Error),
    async read() {
      const next = ready.shift() ?? (await new Promise<{ done: false; value: string } | { done: true } | Error>((r) => queue.push(r)));
      if (next instanceof Error) throw next;
      return next;
    },
    async close(reason) {
      closed.push(reason);
      deliver({ done: true });
    },
  };
}

async function setup(): Promise<{ router: Router; lease: Lease; releases: Release[]; chunks: string[]; aborts: unknown[]; hooks: LeasedBodyHooks<string> }> {
  const router = await createRouter({ targets: [{ id: "a" }], ejection: false });
  const lease = router.route({});
  const releases: Release[] = [];
  const chunks: string[] = [];
  const aborts: unknown[] = [];
  const hooks: LeasedBodyHooks<string> = {
    chunk: (v) => void chunks.push(v),
    end: () => ({ outcome: "success", info: { promptTokens: 10, cachedTokens: 4 } }),
    failed: () => "connect-error",
    released: (outcome, info, error) => void releases.push({ outcome, info, error }),
    aborted: (reason) => void aborts.push(reason),
  };
  return { router, lease, releases, chunks, aborts, hooks };
}

describe("LeasedBody", () => {
  it("passes chunks through and releases once with the end hook's outcome when the source ends", async () => {
    const { router, lease, releases, chunks, hooks } = await setup();
    const source = manualSource();
    const body = new LeasedBody(lease, source, hooks, newLeaseRegistry());
    body.attach({});
    source.push("a");
    source.push("b");
    source.end();
    expect(await body.read()).toEqual({ done: false, value: "a" });
    expect(await body.read()).toEqual({ done: false, value: "b" });
    expect(await body.read()).toEqual({ done: true, value: undefined });
    expect(await body.read()).toEqual({ done: true, value: undefined });
    await body.cancel("late");
    expect(chunks).toEqual(["a", "b"]);
    expect(releases).toEqual([{ outcome: "success", info: { promptTokens: 10, cachedTokens: 4 }, error: undefined }]);
    expect(router.stats().targets[0]).toMatchObject({ inflight: 0, promptTokens: 10, cachedTokens: 4 });
    expect(source.closed).toEqual([]);
  });

  it("releases with the failed hook's outcome and rethrows when a read fails", async () => {
    const { lease, releases, hooks } = await setup();
    const source = manualSource();
    const body = new LeasedBody(lease, source, hooks, newLeaseRegistry());
    const boom = new Error("reset");
    source.fail(boom);
    await expect(body.read()).rejects.toBe(boom);
    expect(releases).toEqual([{ outcome: "connect-error", info: undefined, error: boom }]);
    expect(lease.released).toBe(true);
  });

  it("a body that already completed ends as its end would when cancelled, aborted or reset after that", async () => {
    for (const how of ["cancel", "abort", "fail"] as const) {
      const { router, lease, releases, hooks } = await setup();
      const source = manualSource();
      let completed = false;
      const body = new LeasedBody(lease, source, { ...hooks, completed: () => completed }, newLeaseRegistry());
      const controller = new AbortController();
      body.attach({}, controller.signal);
      source.push("usage");
      await body.read();
      completed = true;
      if (how === "cancel") await body.cancel("enough");
      else if (how === "abort") controller.abort("enough");
      else {
        source.fail(new Error("reset"));
        await expect(body.read()).rejects.toThrow("reset");
      }
      expect(releases.map((r) => [r.outcome, r.info])).toEqual([["success", { promptTokens: 10, cachedTokens: 4 }]]);
      expect(router.stats().targets[0]).toMatchObject({ inflight: 0, cachedTokens: 4, failures: 0 });
    }
  });

  it("cancel releases as cancelled, closes the source with the reason, and ends a read that was pending", async () => {
    const { lease, releases, chunks, hooks } = await setup();
    const source = manualSource();
    const body = new LeasedBody(lease, source, hooks, newLeaseRegistry());
    const pending = body.read();
    await body.cancel("stop");
    expect(await pending).toEqual({ done: true, value: undefined });
    source.push("after");
    expect(await body.read()).toEqual({ done: true, value: undefined });
    expect(chunks).toEqual([]);
    expect(source.closed).toEqual(["stop"]);
    expect(releases).toEqual([{ outcome: "cancelled", info: undefined, error: "stop" }]);
  });

  it("an abort releases at once with the signal's reason, tells the owner and closes the source", async () => {
    const { lease, releases, aborts, hooks } = await setup();
    const source = manualSource();
    const body = new LeasedBody(lease, source, hooks, newLeaseRegistry());
    const controller = new AbortController();
    body.attach({}, controller.signal);
    const pending = body.read();
    controller.abort("user");
    expect(releases).toEqual([{ outcome: "cancelled", info: undefined, error: "user" }]);
    expect(aborts).toEqual(["user"]);
    expect(await pending).toEqual({ done: true, value: undefined });
    expect(source.closed).toEqual([undefined]);
  });

  it("a signal aborted before attach releases during attach; one that fires after the end changes nothing", async () => {
    const first = await setup();
    const body = new LeasedBody(first.lease, manualSource(), first.hooks, newLeaseRegistry());
    body.attach({}, AbortSignal.abort("early"));
    expect(first.releases.map((r) => r.outcome)).toEqual(["cancelled"]);
    expect(first.aborts).toHaveLength(1);

    const second = await setup();
    const source = manualSource();
    const ended = new LeasedBody(second.lease, source, second.hooks, newLeaseRegistry());
    const controller = new AbortController();
    ended.attach({}, controller.signal);
    source.end();
    await ended.read();
    controller.abort("too late");
    expect(second.releases.map((r) => r.outcome)).toEqual(["success"]);
    expect(second.aborts).toEqual([]);
  });

  it("end() releases a body known to be empty without reading it", async () => {
    const { lease, releases, hooks } = await setup();
    const body = new LeasedBody(lease, manualSource(), hooks, newLeaseRegistry());
    body.end();
    body.end();
    expect(body.released).toBe(true);
    expect(releases.map((r) => r.outcome)).toEqual(["success"]);
  });

  it("releases as cancelled and closes the source when its owner is garbage-collected unread", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const { router, lease, releases, hooks } = await setup();
    const source = manualSource();
    const registry = newLeaseRegistry();
    (() => {
      const owner = { name: "dropped" };
      new LeasedBody(lease, source, hooks, registry).attach(owner, new AbortController().signal);
    })();
    for (let i = 0; i < 50 && releases.length === 0; i++) {
      gc();
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(releases).toEqual([{ outcome: "cancelled", info: undefined, error: undefined }]);
    expect(source.closed).toEqual([undefined]);
    expect(router.stats().totals.inflight).toBe(0);
  });
});

describe("iterableSource", () => {
  it("opens the iterator on the first read only, and closes it through return()", async () => {
    let opened = 0;
    let returned = 0;
    const iterable: AsyncIterable<number> = {
      [Symbol.asyncIterator]() {
        opened++;
        let n = 0;
        return {
          next: async () => (n < 2 ? { done: false, value: n++ } : { done: true, value: undefined }),
          return: async () => {
            returned++;
            return { done: true, value: undefined };
          },
        };
      },
    };
    const unread = iterableSource(iterable);
    await unread.close();
    expect([opened, returned]).toEqual([0, 0]);

    const read = iterableSource(iterable);
    expect(await read.read()).toEqual({ done: false, value: 0 });
    await read.close();
    expect([opened, returned]).toEqual([1, 1]);
  });
});
