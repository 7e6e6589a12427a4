/**
 * `--shadow`: a shadow strategy beside each of prefix-router's strategies in the benchmark, its
 * figures in the row and in the printed report, the run itself unchanged.
 */
import { runBenchmark } from "prefix-router/bench";
import type { BenchRow } from "prefix-router/bench";
import { describe, expect, it } from "vitest";
import { parseBenchArgs } from "../../../tools/bench/options.js";
import { formatReport } from "../../../tools/bench/table.js";

const simulated = (rows: readonly BenchRow[]) => JSON.stringify(rows.map(({ wall: _wall, shadow: _shadow, ...rest }) => rest));

describe("bench --shadow", () => {
  it("reports the shadow's agreement and predicted hit rate beside each run, without changing the run", async () => {
    const options = { workloads: ["rag" as const], strategies: ["prefix-aware", "longest-prefix", "peer:kubeai-prefixhash"], durationsMs: [60_000], prefixLengths: [4096] };
    const plain = await runBenchmark(options);
    const shadowed = await runBenchmark({ ...options, shadow: "longest-prefix" });
    expect(simulated(shadowed)).toBe(simulated(plain));
    const [pa, lp, peer] = shadowed;
    expect(peer?.shadow).toBeUndefined();
    expect(lp?.shadow).toMatchObject({ strategy: "longest-prefix", placement: "own", decisions: lp?.requests, agreementRate: 1, errors: 0 });
    expect(lp?.shadow?.shadowPredictedHitRate).toBe(lp?.shadow?.livePredictedHitRate);
    expect(pa?.shadow?.decisions).toBe(pa?.requests);
    expect(pa?.shadow?.liveHitRate).toBeCloseTo(pa!.tokenHitRate, 5);
    const report = formatReport(shadowed);
    expect(report).toContain("Shadow strategy beside each run");
    expect(report).toMatch(/rag\s+longest-prefix\s+-\s+longest-prefix\s+own\s+\d+\s+100\.0/);
  });

  it("parses --shadow and --shadow-placement; a placement without a shadow, or an unknown one, is refused", async () => {
    expect(parseBenchArgs(["--shadow", "longest-prefix", "--shadow-placement", "live"])).toMatchObject({ shadow: "longest-prefix", shadowPlacement: "live" });
    await expect(runBenchmark({ workloads: ["rag"], shadowPlacement: "live" })).rejects.toThrow(/needs `shadow`/);
    await expect(runBenchmark({ workloads: ["rag"], shadow: "nope" })).rejects.toThrow(/Unknown shadow strategy `nope`/);
    await expect(runBenchmark({ workloads: ["rag"], shadow: "random", shadowPlacement: "both" as never })).rejects.toThrow(/own or live/);
  });
});
