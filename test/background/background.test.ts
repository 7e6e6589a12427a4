import { describe, expect, it } from "vitest";
import { createRouter, type LoadView, type Router } from "prefix-router";

/** A load view that counts queued work (as the redis view does) and shares no figures. */
function workCountingView(): LoadView & { work: Map<string, number> } {
  const work = new Map<string, number>();
  return {
    work,
    source: "work-counter",
    version: 0,
    shared: () => false,
    others: () => Number.NaN,
    addWork: (id, delta) => void work.set(id, (work.get(id) ?? 0) + delta),
    setTargets: () => {},
    acquire: () => {},
    release: () => {},
    stats: () => ({ source: "work-counter", healthy: false, lastRefreshAtMs: null, errors: 0, refreshes: 0, lastError: null, others: {} }),
    close: async () => {},
  };
}

const doc = (q: string) => ({ messages: [{ role: "user", content: `${"document ".repeat(900)}${q}` }] });
const serve = (router: Router, q: string, cached: number, exclude: string[] = []) => {
  const lease = router.route({ body: doc(q) }, { exclude });
  lease.firstByte();
  lease.release("success", { promptTokens: 2100, cachedTokens: cached });
  return lease;
};

describe("queued work under a load view that counts it", () => {
  it("passes the usage a release reports on to the strategy: the closed loop still forgets a target that misses", async () => {
    const view = workCountingView();
    const router = await createRouter({ targets: [{ id: "a" }, { id: "b" }], strategy: "longest-prefix", loadView: view });
    const home = serve(router, "first", 0).target.id;
    for (const q of ["x", "y", "z"]) serve(router, q, 0);
    const state = router.stats().targets.find((t) => t.id === home)!;
    expect(state).toMatchObject({ predictions: 3, predictionMisses: 3, indexResets: 1 });
    // The work each pick queued was counted, and returned.
    expect([...view.work.values()].every((w) => w === 0)).toBe(true);
    expect(view.work.size).toBeGreaterThan(0);
  });
});
