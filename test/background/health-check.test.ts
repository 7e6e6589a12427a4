/**
 * Active health checks against the live emulated fleet: a target whose /health fails is taken
 * out (as an ejection: still picked when nothing else is left) and comes back once it passes.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Router, createRouter, isRouterError } from "prefix-router";
import { type LiveFleet, startFleet } from "prefix-router/fleet";
import { ManualTimers, withTimers } from "../load-view/manual-timers.js";
import { eventually } from "../load-view/redis-server.js";

interface Target {
  id: string;
  baseURL: string;
}
const body = { messages: [{ role: "system", content: "One shared prompt. ".repeat(100) }] };

describe("active health checks", () => {
  let fleet: LiveFleet;
  let targets: Target[];
  beforeAll(async () => {
    fleet = await startFleet({ instances: 3 });
    targets = fleet.instances.map((i) => ({ id: i.id, baseURL: `${i.url}/v1` }));
  });
  afterAll(() => fleet?.stop());

  it("takes a target out while /health fails and brings it back when it passes", async () => {
    const timers = new ManualTimers();
    const warnings: unknown[] = [];
    const logger = { debug() {}, info() {}, warn: (_m: string, f: object) => warnings.push(f), error() {} };
    const r = await createRouter<Target>({ targets, healthCheck: withTimers({ failuresBeforeDown: 2 }, timers), logger });
    const first = r.rank({ body }).targets[0]!.id;
    const failing = () => r.stats().targets.find((t) => t.id === first)!.failingHealthCheck;
    await eventually(() => timers.size === 1); // the first round of checks passed
    await fleet.instance(first).setFaults({ notReady: true });
    timers.fire();
    // One failure is not enough (failuresBeforeDown: 2): wait for the second check's verdict.
    await eventually(() => timers.size === 1);
    expect(r.route({ body }).target.id).toBe(first);
    timers.fire();
    await eventually(failing);
    expect(warnings.at(-1)).toMatchObject({ target: first, reason: "HTTP 503" });
    const moved = r.route({ body });
    expect(moved.target.id).not.toBe(first);
    // Like an ejection, still the last resort when nothing else is left.
    expect(r.route({ body }, { exclude: targets.filter((t) => t.id !== first).map((t) => t.id) }).target.id).toBe(first);
    await fleet.instance(first).setFaults({ notReady: false });
    timers.fire();
    await eventually(() => !failing());
    expect(r.route({ body }).target.id).toBe(first);
    await r.close();
    expect(timers.size).toBe(0);
  });

  it("does not follow a redirect: a /health that answers 302 to another host fails, and that host gets nothing", async () => {
    let elsewhere = 0;
    const other = createServer((_req, res) => {
      elsewhere++;
      res.end("ok");
    }).listen(0, "127.0.0.1");
    await new Promise((resolve) => other.once("listening", resolve));
    const otherURL = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    const redirecting = createServer((_req, res) => {
      res.writeHead(302, { location: `${otherURL}/health` }).end();
    }).listen(0, "127.0.0.1");
    await new Promise((resolve) => redirecting.once("listening", resolve));
    const id = "redirecting";
    const r = await createRouter<Target>({
      targets: [{ id, baseURL: `http://127.0.0.1:${(redirecting.address() as AddressInfo).port}/v1` }, targets[0]!],
      healthCheck: withTimers({ failuresBeforeDown: 1 }, new ManualTimers()),
    });
    try {
      await eventually(() => r.stats().targets.find((t) => t.id === id)!.failingHealthCheck);
      expect(elsewhere).toBe(0);
    } finally {
      await r.close();
      other.close();
      redirecting.close();
    }
  });

  it("needs a health URL for every target (a TypeError), and takes `true` for the defaults", async () => {
    const err = await createRouter({ targets: [{ id: "x" }], healthCheck: true }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TypeError);
    const err2 = await createRouter({ targets, healthCheck: { path: "health" } }).catch((e: unknown) => e);
    expect(err2).toBeInstanceOf(RangeError);
    const timers = new ManualTimers();
    const r = await createRouter({ targets: [{ id: "y", healthURL: `${fleet.urls[0]}/health` }], healthCheck: withTimers({}, timers) });
    await r.close();
  });
});
