/**
 * The advisor on the Mooncake sample trace: its replay is the bench's trace replay, number for
 * number, and it recommends settings whose hit rate is within 2 points of the best row the bench
 * finds on the trace, peer models included.
 */
import { describe, expect, it } from "vitest";
import { adviseLog } from "prefix-router/advise";
import { loadTrace, runBenchmark, traceWorkload } from "prefix-router/bench";

const TRACE = "test/fixtures/mooncake_synthetic.jsonl";
const simulated = (rows: readonly { wall: unknown; workload: string }[]) => rows.map(({ wall: _w, workload: _n, ...r }) => r);

describe("advise on the Mooncake sample trace", () => {
  it("replays the trace as the bench does", async () => {
    const options = { strategies: ["random", "prefix-aware"], prefixLengths: [4096], durationsMs: [120_000] };
    const bench = await runBenchmark({ ...options, workloads: [traceWorkload(await loadTrace(TRACE))] });
    const advice = await adviseLog(TRACE, { strategies: options.strategies, prefixLengths: options.prefixLengths, maxRequests: bench[0]!.requests + bench[0]!.rejected });
    expect(advice.kind).toBe("trace");
    expect(simulated(advice.rows).map((r) => ({ ...r, durationMs: 0 }))).toEqual(simulated(bench).map((r) => ({ ...r, durationMs: 0 })));
  });

  it("recommends settings within 2 points of the best hit rate of every strategy and peer model", { timeout: 600_000 }, async () => {
    // The rows with the best hit rates of `prefix-router bench --trace` (docs/bench.md), and random.
    const strategies = ["random", "prefix-aware", "longest-prefix", "longest-prefix:exclusive", "peer:sglang-cache-aware"];
    const advice = await adviseLog(TRACE, { strategies, prefixLengths: [1024] });
    const best = Math.max(...advice.rows.map((r) => r.tokenHitRate));
    const rec = advice.recommendation!;
    expect(rec.row.strategy.startsWith("peer:")).toBe(false);
    expect(rec.row.tokenHitRate).toBeGreaterThanOrEqual(best - 0.02);
    expect(advice.findings).toEqual([]);
  });
});
