/**
 * The `engine` load view against real HTTP servers on loopback: Prometheus text from a tiny
 * server whose figures the test sets, and the live emulated fleet's own `/metrics` (vLLM and
 * SGLang names, true values).
 */
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { DEFAULTS, type Router, createRouter, isRouterError } from "prefix-router";
import { DEFAULT_MODEL, startFleet } from "prefix-router/fleet";
import { ManualTimers, withTimers } from "./manual-timers.js";
import { eventually } from "./redis-server.js";

interface Target {
  id: string;
  baseURL: string;
}

interface Figures {
  running: number;
  waiting: number;
  status: number;
  /** The `vllm:approximate_uncached_tokens_waiting` sample's value as written (any text), or none. */
  tokens?: string;
}

/** The engine view's `stats().loadView`. */
interface EngineStats {
  healthy: boolean;
  others: Record<string, number | null>;
  waitingUncachedTokens: Record<string, number | null>;
  cache: Record<string, { blockSize: number; capacityTokens: number } | null>;
}

/** One fake engine per target: serves `vllm:` gauges with the values in `figures`, or fails. */
class Engines {
  readonly figures = new Map<string, Figures>();
  private readonly servers: Server[] = [];
  targets: Target[] = [];

  async start(ids: string[]): Promise<void> {
    for (const id of ids) {
      this.figures.set(id, { running: 0, waiting: 0, status: 200 });
      const server = createServer((req, res) => {
        const f = this.figures.get(id)!;
        if (req.url !== "/metrics" || f.status !== 200) {
          res.writeHead(f.status === 200 ? 404 : f.status).end();
          return;
        }
        res.writeHead(200, { "content-type": "text/plain; version=0.0.4" });
        res.end(
          [
            "# TYPE vllm:num_requests_running gauge",
            `vllm:num_requests_running{model_name="m",engine="0"} ${f.running}.0`,
            "# TYPE vllm:num_requests_waiting gauge",
            `vllm:num_requests_waiting{model_name="m",engine="0"} ${f.waiting}.0`,
            "# TYPE vllm:kv_cache_usage_perc gauge",
            `vllm:kv_cache_usage_perc{model_name="m",engine="0"} 0.25`,
            ...(f.tokens === undefined
              ? []
              : ["# TYPE vllm:approximate_uncached_tokens_waiting gauge", `vllm:approximate_uncached_tokens_waiting{model_name="m",engine="0"} ${f.tokens}`]),
            "",
          ].join("\n"),
        );
      });
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
      this.servers.push(server);
      this.targets.push({ id, baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` });
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.servers.map((s) => new Promise((r) => s.close(r))));
  }
}

/** `n` streaming requests from a client that is not a router, each with its own prompt, held open until `stop()`. */
function hold(url: string, n: number, prompt: (k: number) => string): { stop(): Promise<void> } {
  const abort = new AbortController();
  const sent = Array.from({ length: n }, (_, k) =>
    fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: DEFAULT_MODEL, messages: [{ role: "user", content: prompt(k) }], stream: true, max_tokens: 4000 }),
      signal: abort.signal,
    }).catch(() => undefined),
  );
  return {
    async stop() {
      abort.abort();
      for (const res of await Promise.all(sent)) await res?.body?.cancel().catch(() => undefined);
    },
  };
}

const body = { model: "m", messages: [{ role: "system", content: "A long shared system prompt about one product. ".repeat(40) }] };

describe("engine load view", () => {
  const engines = new Engines();
  const routers: Router<Target>[] = [];
  beforeAll(() => engines.start(["a", "b", "c", "d"]));
  afterAll(() => engines.stop());
  afterEach(async () => {
    for (const r of routers.splice(0)) await r.close();
    for (const f of engines.figures.values()) Object.assign(f, { running: 0, waiting: 0, status: 200, tokens: undefined });
  });

  async function engineRouter(extra: Record<string, unknown> = {}, options: Record<string, unknown> = {}): Promise<Router<Target>> {
    const r = await createRouter<Target>({
      targets: engines.targets,
      concurrencyThreshold: 4,
      random: () => 0.5,
      loadView: { source: "engine", intervalMs: 10, ...extra },
      ...options,
    });
    routers.push(r);
    return r;
  }

  it("reads running + waiting from /metrics at the origin of baseURL, and spills off a target other routers filled", async () => {
    const r = await engineRouter();
    const first = r.rank({ body }).targets[0]!.id;
    engines.figures.get(first)!.running = 3;
    engines.figures.get(first)!.waiting = 1;
    await eventually(() => r.stats().loadView?.others[first] === 4);
    expect(r.stats().loadView).toMatchObject({ source: "engine", healthy: true, errors: 0 });
    const lease = r.route({ body });
    expect(lease.kind).toBe("spillover");
    expect(lease.target.id).not.toBe(first);
    lease.release();
    // Closed, the router is back on its local view at once: the first choice again.
    await r.close();
    expect(r.stats().loadView?.healthy).toBe(false);
    expect(r.route({ body }).target.id).toBe(first);
  });

  it("createRouter resolves with the first scrape done: the very first decision sees other routers' load", async () => {
    const first = (await engineRouter()).rank({ body }).targets[0]!.id;
    engines.figures.get(first)!.running = 4;
    const r = await engineRouter({ intervalMs: 60_000 });
    expect(r.stats().loadView?.healthy).toBe(true);
    expect(r.route({ body }).target.id).not.toBe(first);
  });

  it("with `peers`, a router opens only its share of a target's headroom until the next poll", async () => {
    const timers = new ManualTimers();
    const r = await engineRouter(withTimers({ peers: 2 }, timers));
    const first = r.rank({ body }).targets[0]!.id;
    engines.figures.get(first)!.running = 2; // room for 2 more: 1 each for 2 routers
    await r.close();
    const shared = await engineRouter(withTimers({ peers: 2 }, new ManualTimers()));
    const one = shared.route({ body });
    expect(one.target.id).toBe(first);
    const two = shared.route({ body });
    expect(two.kind).toBe("spillover");
    // Without peers, the router takes all of the headroom.
    const alone = await engineRouter(withTimers({}, new ManualTimers()));
    expect([alone.route({ body }), alone.route({ body })].map((l) => l.target.id)).toEqual([first, first]);
  });

  it("subtracts this router's own leases at the scrape: they are not counted twice", async () => {
    const r = await engineRouter();
    const first = r.rank({ body }).targets[0]!.id;
    const held = [r.route({ body }), r.route({ body })];
    expect(held.every((l) => l.target.id === first)).toBe(true);
    engines.figures.get(first)!.running = 2; // the engine sees exactly this router's two
    await eventually(() => r.stats().loadView?.others[first] === 0);
    // 2 own + 0 others < 4: still the first choice.
    const third = r.route({ body });
    expect(third.target.id).toBe(first);
    for (const l of [...held, third]) l.release();
  });

  it("a target whose /metrics fails goes stale: its load is this router's own, with a warning, until it answers again", async () => {
    const warnings: string[] = [];
    const infos: string[] = [];
    const logger = { debug() {}, info: (m: string) => infos.push(m), warn: (m: string) => warnings.push(m), error() {} };
    const r = await engineRouter({ staleAfterMs: 30 }, { logger });
    const first = r.rank({ body }).targets[0]!.id;
    engines.figures.get(first)!.running = 10;
    await eventually(() => r.stats().loadView?.others[first] === 10);
    engines.figures.get(first)!.status = 503;
    // Stale by age (a tick) and failed (a scrape): each target on its own, in either order.
    await eventually(() => r.stats().loadView?.others[first] === null && r.stats().loadView!.errors > 0);
    expect(r.stats().loadView!.healthy).toBe(false);
    expect(warnings.some((w) => w.includes("no fresh engine metrics"))).toBe(true);
    // Without a fresh figure the first choice is open again (local view for that target).
    const lease = r.route({ body });
    expect(lease.target.id).toBe(first);
    lease.release();
    engines.figures.get(first)!.status = 200;
    await eventually(() => r.stats().loadView?.healthy === true);
    expect(infos.some((m) => m.includes("fresh again"))).toBe(true);
  });

  it("a target without a metrics URL is a TypeError, at createRouter and at setTargets", async () => {
    const err = await createRouter({ targets: [{ id: "x" }], loadView: "engine" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TypeError);
    expect((err as Error).message).toContain('Expected `metricsURL` of target "x"');
    const r = await engineRouter();
    let thrown: unknown;
    try {
      r.setTargets([...engines.targets, { id: "y", baseURL: "ftp://nowhere" }]);
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(TypeError);
    expect(r.targets()).toHaveLength(4);
    const custom = await engineRouter({ metricsURL: (t: Target) => new URL("/metrics", t.baseURL) });
    await eventually(() => custom.stats().loadView?.healthy === true);
  });

  it("close() ends the poll loop's timer", async () => {
    const timers = new ManualTimers();
    const r = await engineRouter(withTimers({}, timers));
    await eventually(() => timers.size === 1 && r.stats().loadView?.healthy === true);
    timers.fire();
    await eventually(() => timers.size === 1);
    await r.close();
    expect(timers.size).toBe(0);
  });

  describe("queued uncached tokens and longest-prefix", () => {
    const saturated: Record<string, number> = { a: 4, b: 9, c: 5, d: 6 };

    async function lpRouter(): Promise<Router<Target>> {
      return engineRouter({}, { strategy: "longest-prefix" });
    }

    it("at saturation, longest-prefix takes the target with the fewest queued uncached tokens, whatever its request count", async () => {
      const r = await lpRouter();
      // Every target at or past the threshold (4): the pick is the fallback, by queued prefill.
      const tokens: Record<string, string> = { a: "50000", b: "0", c: "40000", d: "30000.0" };
      for (const [id, f] of engines.figures) Object.assign(f, { running: saturated[id], tokens: tokens[id] });
      await eventually(() => r.stats().loadView?.others["b"] === 9 && (r.stats().loadView as unknown as EngineStats).waitingUncachedTokens["b"] === 0);
      expect((r.stats().loadView as unknown as EngineStats).waitingUncachedTokens).toEqual({ a: 50000, b: 0, c: 40000, d: 30000 });
      // b has the most requests in flight, and the least prefill waiting.
      const one = r.route({ body });
      expect([one.kind, one.target.id]).toEqual(["fallback", "b"]);
      one.release();
      // The figures move: d's queue empties, b's fills.
      engines.figures.get("b")!.tokens = "60000";
      engines.figures.get("d")!.tokens = "0";
      await eventually(() => (r.stats().loadView as unknown as EngineStats).waitingUncachedTokens["d"] === 0);
      const two = r.route({ body });
      expect([two.kind, two.target.id]).toEqual(["fallback", "d"]);
      two.release();
    });

    it("without the token gauge, the same saturated fleet falls back by this router's own queue: the ranking's first", async () => {
      const r = await lpRouter();
      for (const [id, f] of engines.figures) f.running = saturated[id]!;
      await eventually(() => r.stats().loadView?.others["b"] === 9);
      expect((r.stats().loadView as unknown as EngineStats).waitingUncachedTokens).toEqual({ a: null, b: null, c: null, d: null });
      const lease = r.route({ body });
      expect([lease.kind, lease.target.id]).toEqual(["fallback", r.rank({ body }).targets[0]!.id]);
      lease.release();
    });

    it(`polled less often than every ${DEFAULTS.loadView.engineTokensMaxIntervalMs} ms (the default 100 ms), the token figure is reported but does not place requests`, async () => {
      const r = await engineRouter({ intervalMs: 100 }, { strategy: "longest-prefix" });
      const tokens: Record<string, string> = { a: "50000", b: "50000", c: "50000", d: "50000" };
      const first = r.rank({ body }).targets[0]!.id;
      tokens[first] = "90000";
      for (const [id, f] of engines.figures) Object.assign(f, { running: saturated[id], tokens: tokens[id] });
      await eventually(() => (r.stats().loadView as unknown as EngineStats).waitingUncachedTokens[first] === 90000 && r.stats().loadView?.others["b"] === 9);
      const lease = r.route({ body });
      expect([lease.kind, lease.target.id]).toEqual(["fallback", first]);
      lease.release();
    });

    it.each(["NaN", "-5", "+Inf", "1e13", "-Inf"])("a token value of %s is not a count: that target's token figure is unknown, its request figure still counts", async (hostile) => {
      const r = await lpRouter();
      const tokens: Record<string, string> = { a: "50000", b: hostile, c: "40000", d: "30000" };
      for (const [id, f] of engines.figures) Object.assign(f, { running: saturated[id], tokens: tokens[id] });
      await eventually(() => r.stats().loadView?.others["b"] === 9 && (r.stats().loadView as unknown as EngineStats).waitingUncachedTokens["d"] === 30000);
      const stats = r.stats().loadView as unknown as EngineStats;
      expect(stats.waitingUncachedTokens["b"]).toBeNull();
      expect(stats.healthy).toBe(true);
      // b counts only this router's queue (none): the least of all, as on a view without tokens.
      const lease = r.route({ body });
      expect(lease.target.id).toBe("b");
      lease.release();
    });
  });

  it("reads the live fleet's true figures, by SGLang's names too", async () => {
    const fleet = await startFleet({ instances: 2, timeScale: 0.2, metricsFlavor: "sglang" });
    try {
      const targets = fleet.instances.map((i) => ({ id: i.id, baseURL: `${i.url}/v1` }));
      const r = await createRouter({
        targets,
        loadView: { source: "engine", intervalMs: 10, metrics: { running: ["sglang:num_running_reqs"], waiting: ["sglang:num_queue_reqs"] } },
      });
      routers.push(r);
      await eventually(() => r.stats().loadView?.healthy === true);
      expect(r.stats().loadView!.others).toEqual({ i0: 0, i1: 0 });
      // A request another client sent to i0 (not through this router), held open mid-stream.
      const res = await fetch(`${fleet.urls[0]}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ ...body, model: DEFAULT_MODEL, stream: true, max_tokens: 2000 }),
      });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      await reader.read();
      await eventually(() => {
        const truth = fleet.instance("i0").stats();
        return truth.running + truth.waiting === 1;
      });
      await eventually(() => r.stats().loadView?.others["i0"] === 1);
      await reader.cancel();
    } finally {
      await fleet.stop();
    }
  });

  it("reads the live fleet's queued uncached tokens and KV cache config (vLLM's names), equal to the engine's truth", async () => {
    // One sequence at a time: a second and third request wait behind the first, uncached.
    const fleet = await startFleet({ instances: 2, timeScale: 0.2, engine: { maxNumSeqs: 1 } });
    try {
      const targets = fleet.instances.map((i) => ({ id: i.id, baseURL: `${i.url}/v1` }));
      const r = await createRouter({ targets, loadView: { source: "engine", intervalMs: 10 } });
      routers.push(r);
      await eventually(() => r.stats().loadView?.healthy === true);
      const stats = () => r.stats().loadView as unknown as EngineStats;
      expect(stats().waitingUncachedTokens).toEqual({ i0: 0, i1: 0 });
      const { blockSizeTokens, numGpuBlocks } = fleet.instance("i0").engine.config;
      expect(stats().cache["i0"]).toEqual({ blockSize: blockSizeTokens, capacityTokens: blockSizeTokens * numGpuBlocks });
      // Three requests from another client, each with its own prompt: the first runs, two wait.
      const held = hold(fleet.urls[0]!, 3, (k) => `Question ${k}: ${"words of a long document ".repeat(60)}`);
      // The two waiting ones: the engine's figure, as the view reads it.
      await eventually(() => {
        const truth = fleet.instance("i0").stats();
        return truth.running === 1 && truth.waiting === 2 && stats().waitingUncachedTokens["i0"] === truth.waitingUncachedTokens;
      });
      expect(stats().waitingUncachedTokens["i0"]).toBeGreaterThan(300);
      expect(stats().waitingUncachedTokens["i1"]).toBe(0);
      await held.stop();
      await eventually(() => stats().waitingUncachedTokens["i0"] === 0);
    } finally {
      await fleet.stop();
    }
  });

  it("reads SGLang's /v1/loads?format=prometheus: requests and queued uncached tokens", async () => {
    const fleet = await startFleet({ instances: 1, timeScale: 0.2, metricsFlavor: "sglang", engine: { maxNumSeqs: 1 } });
    try {
      const targets = fleet.instances.map((i) => ({ id: i.id, baseURL: `${i.url}/v1` }));
      const r = await createRouter({
        targets,
        loadView: { source: "engine", intervalMs: 10, metricsURL: (t: Target) => new URL("/v1/loads?format=prometheus", t.baseURL).href },
      });
      routers.push(r);
      await eventually(() => r.stats().loadView?.healthy === true);
      const stats = () => r.stats().loadView as unknown as EngineStats;
      const held = hold(fleet.urls[0]!, 2, (k) => `Topic ${k}: ${"another long text ".repeat(80)}`);
      await eventually(() => {
        const truth = fleet.instance("i0").stats();
        return truth.running === 1 && truth.waiting === 1 && stats().others["i0"] === 2 && stats().waitingUncachedTokens["i0"] === truth.waitingUncachedTokens;
      });
      expect(stats().waitingUncachedTokens["i0"]).toBeGreaterThan(300);
      // /v1/loads carries no cache config info.
      expect(stats().cache["i0"]).toBeNull();
      await held.stop();
    } finally {
      await fleet.stop();
    }
  });
});
