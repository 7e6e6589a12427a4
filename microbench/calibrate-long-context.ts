/**
 * Calibration of the `long-context` workload (docs/bench.md): random routing's token hit rate
 * over one simulated hour on 7 instances, for a grid of document counts and Zipf exponents.
 * Only the random strategy runs — the calibration target (AWS's ~25% for random) must not
 * depend on the strategy under test.
 *
 *   npx tsx microbench/calibrate-long-context.ts [documents,...] [zipf,...]
 */
import { runBenchmark } from "prefix-router/bench";
import { longContextWorkload } from "../tools/bench/workloads-single-turn.js";

const docs = (process.argv[2] ?? "400,500,600,700,800").split(",").map(Number);
const zipfs = (process.argv[3] ?? "0").split(",").map(Number);
console.log("documents  zipf  random-hit  ideal-hit  p50-ms  p90-ms");
for (const zipfExponent of zipfs) {
  for (const documents of docs) {
    const [row] = await runBenchmark({
      workloads: [longContextWorkload({ documents, zipfExponent })],
      strategies: ["random"],
    });
    if (row === undefined) throw new Error("no row");
    console.log(
      [
        String(documents).padStart(9),
        zipfExponent.toFixed(2).padStart(5),
        `${(100 * row.tokenHitRate).toFixed(1)}%`.padStart(10),
        `${(100 * row.idealHitRate).toFixed(1)}%`.padStart(10),
        row.ttftP50Ms.toFixed(0).padStart(7),
        row.ttftP90Ms.toFixed(0).padStart(7),
      ].join("  "),
    );
  }
}
