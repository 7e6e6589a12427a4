/**
 * `--load-view`: shared views modelled in virtual time. Deterministic; the default (local) rows
 * are what they were without the option; the shared views take back the spillover that
 * independent processes lose.
 */
import { runBenchmark } from "prefix-router/bench";
import type { BenchRow } from "prefix-router/bench";
import { describe, expect, it } from "vitest";
import { formatTable } from "../../../tools/bench/table.js";
import { parseBenchArgs } from "../../../tools/bench/options.js";

const simulated = (rows: readonly BenchRow[]) => JSON.stringify(rows.map(({ wall: _wall, ...rest }) => rest));
const options = { workloads: ["hot-prefix" as const], strategies: ["prefix-aware", "random"], durationsMs: [30_000], routers: [8] };

describe("bench --load-view", () => {
  it("local rows are unchanged by the option; engine and redis rows are deterministic and labelled", async () => {
    const plain = await runBenchmark(options);
    const rows = await runBenchmark({ ...options, loadViews: ["local", "engine", "redis"], enginePollIntervalsMs: [100, 1000] });
    const again = await runBenchmark({ ...options, loadViews: ["local", "engine", "redis"], enginePollIntervalsMs: [100, 1000] });
    expect(simulated(rows)).toBe(simulated(again));
    // random reads no load: one (local) row; prefix-aware: local, engine ×2 polls, redis.
    expect(rows.map((r) => [r.strategy, r.loadView ?? "local", r.loadViewModel ?? null])).toEqual([
      ["prefix-aware", "local", null],
      ["prefix-aware", "engine", { enginePollMs: 100 }],
      ["prefix-aware", "engine", { enginePollMs: 1000 }],
      ["prefix-aware", "redis", { redisRttMs: 0.5, redisRefreshMs: 5, redisIdleRefreshMs: 100 }],
      ["random", "local", null],
    ]);
    expect(simulated(rows.filter((r) => r.loadView === undefined))).toBe(simulated(plain));
    expect(formatTable(rows)).toContain("prefix-aware ×8 engine 100ms");
    // Eight processes on their local views rarely see a full target; the shared views do.
    const [local, engine, , redis] = rows;
    expect(engine!.spilloverRate).toBeGreaterThan(local!.spilloverRate);
    expect(redis!.spilloverRate).toBeGreaterThan(local!.spilloverRate);
    expect(redis!.maxShare).toBeLessThan(local!.maxShare);
  });

  it("parses --load-view, --engine-poll and --redis-rtt", () => {
    const args = parseBenchArgs(["--load-view", "local,redis", "--engine-poll", "50ms,1s", "--redis-rtt", "2ms"]);
    expect(args).toMatchObject({ loadViews: ["local", "redis"], enginePollIntervalsMs: [50, 1000], redisRttMs: 2 });
    expect(parseBenchArgs(["--load-view", "engine,engine-requests"])).toMatchObject({ loadViews: ["engine", "engine-requests"] });
  });

  it("rejects an unknown view", async () => {
    await expect(runBenchmark({ ...options, loadViews: ["gossip" as never] })).rejects.toThrow("loadViews");
  });
});
