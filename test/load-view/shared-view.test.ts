/**
 * What decisions do with a shared load view, fed here by a custom LoadView object: other
 * routers' load counts toward the threshold, spillover and fallback spread by two choices over
 * the key's next three targets, headroom is split between peers, and the local view is used
 * whenever the view says its figures are not fresh. Also: option validation.
 */
import { describe, expect, it } from "vitest";
import { type LoadView, type TargetSpec, createRouter, isRouterError } from "prefix-router";
import type { LoadViewStats } from "../../src/load-view/view.js";
import { Rng } from "../../tools/sim/random.js";

/** A view whose figures the test sets. */
class FixedView implements LoadView {
  readonly source = "fixed";
  version = 0;
  fresh = true;
  figures: Record<string, number> = {};
  own: Record<string, number> = {};
  processes = 1;
  position: number | undefined;
  set(figures: Record<string, number>): void {
    this.figures = figures;
    this.version++;
  }
  shared(): boolean {
    return this.fresh;
  }
  others(id: string): number {
    return this.figures[id] ?? 0;
  }
  ownAtRefresh(id: string): number {
    return this.own[id] ?? 0;
  }
  peers(): number {
    return this.processes;
  }
  peerIndex(): number {
    return this.position ?? 0;
  }
  setTargets(): void {}
  acquire(): void {}
  release(): void {}
  stats(): LoadViewStats {
    return { source: this.source, healthy: this.fresh, lastRefreshAtMs: null, errors: 0, refreshes: this.version, lastError: null, others: { ...this.figures } };
  }
  async close(): Promise<void> {}
}

const targets: TargetSpec[] = Array.from({ length: 7 }, (_, i) => ({ id: `t${i}` }));
const body = { messages: [{ role: "system", content: "The same long system prompt for everyone. ".repeat(50) }] };

describe("shared load view in decisions", () => {
  it("other routers' load fills the first choice; spills spread by two choices over the next three open targets", async () => {
    const view = new FixedView();
    const rng = new Rng(7);
    const r = await createRouter({ targets, concurrencyThreshold: 4, loadView: view, random: () => rng.next() });
    const order = r.rank({ body }).targets.map((t) => t.id);
    view.set({ [order[0]!]: 4 });
    const counts = new Map<string, number>();
    for (let k = 0; k < 300; k++) {
      const lease = r.route({ body });
      expect(lease.kind).toBe("spillover");
      counts.set(lease.target.id, (counts.get(lease.target.id) ?? 0) + 1);
      lease.release();
    }
    // Equal load: the better-ranked of the two drawn wins, so ranks 1, 2, 3 get about 2/3, 1/3, 0.
    expect([...counts.keys()].sort()).toEqual([order[1], order[2]].sort());
    expect(counts.get(order[1]!)! / 300).toBeGreaterThan(0.55);
    expect(r.stats().loadView).toMatchObject({ source: "fixed", healthy: true });
    // A local router sends every spill to the next one in the ranking.
    const local = await createRouter({ targets, concurrencyThreshold: 4 });
    const held = Array.from({ length: 4 }, () => local.route({ body }));
    expect(local.route({ body }).target.id).toBe(order[1]);
    for (const l of held) l.release();
  });

  it("everything full: the fallback draws two among the key's first three, less loaded wins", async () => {
    const view = new FixedView();
    const rng = new Rng(3);
    const r = await createRouter({ targets, concurrencyThreshold: 4, loadView: view, random: () => rng.next() });
    const order = r.rank({ body }).targets.map((t) => t.id);
    view.set(Object.fromEntries(order.map((id, k) => [id, k === 2 ? 4 : 9])));
    const seen = new Set<string>();
    for (let k = 0; k < 100; k++) {
      const lease = r.route({ body });
      expect(lease.kind).toBe("fallback");
      seen.add(lease.target.id);
      lease.release();
    }
    // order[2] is the least loaded of the three; order[0] wins only when drawn with order[1].
    expect([...seen].sort()).toEqual([order[0], order[2]].sort());
  });

  it("peers split a target's headroom: with 4 peers and room for 2, positions 0-1 (rotated per target) get one each", async () => {
    const opened: number[] = [];
    for (let position = 0; position < 4; position++) {
      const view = new FixedView();
      view.processes = 4;
      view.position = position;
      const r = await createRouter({ targets, concurrencyThreshold: 4, loadView: view });
      const first = r.rank({ body }).targets[0]!.id;
      view.set({ [first]: 2 });
      let n = 0;
      while (r.route({ body }).target.id === first) n++;
      opened.push(n);
    }
    expect(opened.reduce((a, b) => a + b, 0)).toBe(2);
    expect(opened.every((n) => n <= 1)).toBe(true);
  });

  it("a view whose figures are not fresh leaves the router on its local view", async () => {
    const view = new FixedView();
    const r = await createRouter({ targets, concurrencyThreshold: 4, loadView: view });
    const first = r.rank({ body }).targets[0]!.id;
    view.set({ [first]: 100 });
    expect(r.route({ body }).target.id).not.toBe(first);
    view.fresh = false;
    view.version++;
    expect(r.route({ body }).target.id).toBe(first);
  });

  it("rejects bad options with a TypeError or RangeError, naming the option", async () => {
    const cases: [unknown, string][] = [
      ["memcached", "loadView"],
      [{ source: "redis", url: "http://x" }, "loadView.url"],
      [{ source: "redis", leaseTtlMs: 10 }, "loadView.leaseTtlMs"],
      [{ source: "engine", intervalMs: 0 }, "loadView.intervalMs"],
      [{ source: "engine", metrics: { running: [] } }, "loadView.metrics.running"],
      [{ source: "engine", metricsURL: "http://x" }, "loadView.metricsURL"],
      [{ source: "custom", shared: () => true }, "loadView."],
    ];
    for (const [loadView, name] of cases) {
      const err = await createRouter({ targets: [{ id: "a", baseURL: "http://127.0.0.1:1/v1" } as TargetSpec], loadView: loadView as never }).catch((e: unknown) => e);
      expect(err instanceof TypeError || err instanceof RangeError, String(name)).toBe(true);
      expect((err as Error).message).toContain(`\`${name}`);
    }
    const err = await createRouter({ targets, logger: { warn() {} } as never }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TypeError);
    const local = await createRouter({ targets, loadView: "local" });
    expect(local.stats().loadView).toBeUndefined();
  });
});
