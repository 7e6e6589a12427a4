/**
 * What several router processes in front of slot engines (llama.cpp's private caches) lose for
 * not knowing each other's running requests: `precise-prefix` on the emulated `short-prompts`
 * fleet with 1, 4 and 8 processes, as the benchmark runs it, and again with every process's
 * record of the requests it runs on each engine shared by all of them at once — as if each
 * process saw every other's requests the moment they are sent, with no transport and no delay.
 * Not a router configuration: a bound on what sharing running requests between processes could
 * recover, and on how close to one process any such design can come.
 *
 *   npx tsx microbench/precise-shared-running.ts [--seeds 1,2,3,4]
 */
import { runBenchmark, shortPromptsWorkload } from "prefix-router/bench";
import { PrecisePrefix } from "../src/strategies/precise-prefix/strategy.js";

const at = process.argv.indexOf("--seeds");
const seeds = (at === -1 ? "1,2,3,4" : (process.argv[at + 1] ?? "")).split(",").map(Number);
if (seeds.some((s) => !Number.isSafeInteger(s) || s < 0)) throw new RangeError(`Expected --seeds to list integers ≥ 0, got ${process.argv[at + 1]}`);

// Each router's per-engine record of its running requests lives in its `runningById` map; while
// `shared` is set, every router created takes the same map instead.
let shared: Map<string, unknown> | undefined;
const setTargets = PrecisePrefix.prototype.setTargets;
PrecisePrefix.prototype.setTargets = function (this: PrecisePrefix, targets) {
  if (shared !== undefined) Object.defineProperty(this, "runningById", { value: shared });
  setTargets.call(this, targets);
};

async function hit(seed: number, routers: number, share: boolean): Promise<number> {
  shared = share ? new Map() : undefined;
  const rows = await runBenchmark({ workloads: [shortPromptsWorkload()], strategies: ["precise-prefix"], seeds: [seed], routers: [routers] });
  shared = undefined;
  const row = rows[0];
  if (row === undefined) throw new Error("the benchmark returned no row");
  return 100 * row.tokenHitRate;
}

console.log("| seed | processes | hit, each process its own | hit, running requests shared | shared − own |");
console.log("|---:|---:|---:|---:|---:|");
for (const seed of seeds) {
  for (const routers of [1, 4, 8]) {
    const own = await hit(seed, routers, false);
    const all = await hit(seed, routers, true);
    console.log(`| ${seed} | ${routers} | ${own.toFixed(1)}% | ${all.toFixed(1)}% | ${(all - own >= 0 ? "+" : "")}${(all - own).toFixed(1)} |`);
  }
}
