/**
 * The spill-storm warning names why picks spill, from the router's state when the storm starts:
 * targets at the concurrency threshold, ejected after failures, failing health checks, retries
 * that excluded the targets they tried — and, when none of these holds, says so instead of
 * naming a reason that is not there.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { type Logger, type RoutingStrategy, createRouter } from "prefix-router";
import { ManualTimers, withTimers } from "../load-view/manual-timers.js";
import { eventually } from "../load-view/redis-server.js";
import { FakeClock } from "../support.js";

/** A logger that keeps every line. */
function recorder(): Logger & { lines: { level: string; message: string; fields: Record<string, unknown> }[] } {
  const lines: { level: string; message: string; fields: Record<string, unknown> }[] = [];
  const at = (level: string) => (message: string, fields?: unknown) => lines.push({ level, message, fields: fields as Record<string, unknown> });
  return { lines, debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

const abc = [{ id: "a" }, { id: "b" }, { id: "c" }];
const body = { messages: [{ role: "user", content: "one hot prefix" }] };
const storms = (log: ReturnType<typeof recorder>) => log.lines.filter((l) => l.fields?.["event"] === "spill_storm_start");

describe("the spill-storm warning", () => {
  it("names the targets at the concurrency threshold", async () => {
    const log = recorder();
    const router = await createRouter({ targets: abc, logger: log, concurrencyThreshold: 1 });
    const held = Array.from({ length: 80 }, () => router.route({ body }));
    expect(storms(log)).toHaveLength(1);
    expect(storms(log)[0]!.message).toMatch(
      /^prefix-router: spill storm — \d+% of the last ~64 picks missed their first choice; at the concurrency threshold \(1 in flight\): a, b, c$/,
    );
    expect(storms(log)[0]!.fields).toMatchObject({ fullTargets: ["a", "b", "c"], ejectedTargets: [], failingHealthCheckTargets: [], quotaTargets: [] });
    for (const lease of held) lease.release();
  });

  it("names an ejected first choice, and no target at the threshold", async () => {
    const log = recorder();
    const router = await createRouter({ targets: abc, logger: log, clock: new FakeClock(), ejection: { consecutiveFailures: 1 } });
    const first = router.rank({ body }).targets[0]!.id;
    router.route({ body }).release("connect-error");
    for (let i = 0; i < 80; i++) router.route({ body }).release("success");
    const [storm] = storms(log);
    expect(storm!.message).toMatch(new RegExp(`missed their first choice; ejected after failures: ${first}$`));
    expect(storm!.fields).toMatchObject({ fullTargets: [], ejectedTargets: [first] });
  });

  it("names a target failing its health checks", async () => {
    const failing = createServer((_req, res) => res.writeHead(503).end()).listen(0, "127.0.0.1");
    const healthy = createServer((_req, res) => res.end("ok")).listen(0, "127.0.0.1");
    await Promise.all([failing, healthy].map((s) => new Promise((resolve) => s.once("listening", resolve))));
    const url = (s: typeof failing) => `http://127.0.0.1:${(s.address() as AddressInfo).port}/v1`;
    const log = recorder();
    // The body's first choice gets the server whose /health answers 503.
    const [first, second] = (await createRouter({ targets: [{ id: "r0" }, { id: "r1" }] })).rank({ body }).targets.map((t) => t.id);
    const targets = [
      { id: first!, baseURL: url(failing) },
      { id: second!, baseURL: url(healthy) },
    ];
    const router = await createRouter({ targets, logger: log, healthCheck: withTimers({ failuresBeforeDown: 1 }, new ManualTimers()) });
    try {
      await eventually(() => router.stats().targets.find((t) => t.id === first)!.failingHealthCheck);
      for (let i = 0; i < 80; i++) router.route({ body }).release();
      const [storm] = storms(log);
      expect(storm!.message).toMatch(new RegExp(`missed their first choice; failing health checks: ${first}$`));
      expect(storm!.fields).toMatchObject({ failingHealthCheckTargets: [first], ejectedTargets: [], fullTargets: [] });
    } finally {
      await router.close();
      failing.close();
      healthy.close();
    }
  });

  it("names retries that excluded the targets they had tried", async () => {
    const log = recorder();
    const router = await createRouter({ targets: abc, logger: log });
    const first = router.rank({ body }).targets[0]!.id;
    for (let i = 0; i < 80; i++) router.route({ body }, { exclude: [first], attempt: 2 }).release();
    const [storm] = storms(log);
    expect(storm!.message).toMatch(/missed their first choice; \d+% of the picks were retries that excluded the targets they had tried$/);
    expect(storm!.message).not.toMatch(/threshold|ejected|health/);
    expect(storm!.fields["retriedShare"]).toBeGreaterThan(0.5);
  });

  it("says that no target is full, ejected or failing health checks when none is, instead of naming a reason", async () => {
    const log = recorder();
    // A strategy that never takes its first choice: the spills are its own.
    const elsewhere: RoutingStrategy = { name: "elsewhere", pick: (ctx) => ({ index: ctx.candidates[1]!, kind: "spillover", rank: 1 }) };
    const router = await createRouter({ targets: abc, logger: log, strategy: elsewhere });
    for (let i = 0; i < 80; i++) router.route({ body }).release();
    const [storm] = storms(log);
    expect(storm!.message).toBe(
      "prefix-router: spill storm — 64% of the last ~64 picks missed their first choice; no target is at the concurrency threshold, ejected or failing " +
        "health checks, and the picks were not retries: the elsewhere strategy chose other targets by its own load rule, or the load that filled them has passed",
    );
    expect(storm!.message).not.toContain("ejected or excluded");
    expect(storm!.fields).toMatchObject({ fullTargets: [], ejectedTargets: [], failingHealthCheckTargets: [], quotaTargets: [], retriedShare: 0 });
  });
});
