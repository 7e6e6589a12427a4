/**
 * The floor of the `short-prompts` goals on slot engines: an oracle placement on the same
 * emulated fleet, side by side with the router's strategies. The oracle knows the whole request
 * sequence in advance: it places the system prompts on the instances by popularity (largest first,
 * onto the instance with the least traffic and a free slot), sends each request to its prompt's
 * instance, and a request whose prompt already runs there to the instance that last took that
 * prompt's overflow (else the least loaded). Not a router: a bound on what placement can do when
 * a busy slot is never shared.
 *
 *   npx tsx microbench/short-prompts-floor.ts [--seed 1]
 */
import { type BenchRequest, type PolicyFactory, formatReport, runBenchmark, shortPromptsWorkload } from "prefix-router/bench";

const seed = Number(process.argv[process.argv.indexOf("--seed") + 1] ?? 1) || 1;
const workload = shortPromptsWorkload();
const promptOf = (r: BenchRequest) => r.body.messages[0]!.content as string;

const oracle: PolicyFactory = {
  name: "oracle (static placement)",
  usesPrefixLength: false,
  usesConcurrencyThreshold: false,
  async create(ctx) {
    let targets = [...ctx.targets];
    const slots = workload.fleet?.engine?.slots ?? 4;
    const counts = new Map<string, number>();
    for (const r of workload.requests({ seed: ctx.seed, durationMs: workload.defaultDurationMs, rateMultiplier: 1 })) {
      counts.set(promptOf(r), (counts.get(promptOf(r)) ?? 0) + 1);
    }
    const load = new Map(targets.map((t) => [t, 0]));
    const held = new Map(targets.map((t) => [t, 0]));
    const home = new Map<string, string>();
    for (const [p, n] of [...counts].sort((a, b) => b[1] - a[1])) {
      const t = targets.filter((x) => held.get(x)! < slots).sort((a, b) => load.get(a)! - load.get(b)!)[0] ?? targets[0]!;
      home.set(p, t);
      load.set(t, load.get(t)! + n);
      held.set(t, held.get(t)! + 1);
    }
    const inflight = new Map<string, number>();
    const running = new Map<string, number>();
    const overflow = new Map<string, string>();
    const key = (t: string, p: string) => `${t}\u0000${p}`;
    return {
      setTargets(ids) {
        targets = [...ids];
      },
      route(request) {
        const p = promptOf(request);
        const first = home.get(p) ?? targets[0]!;
        let t = first;
        if ((running.get(key(first, p)) ?? 0) > 0) {
          const o = overflow.get(p);
          t = o !== undefined && (running.get(key(o, p)) ?? 0) === 0 ? o : [...targets].sort((a, b) => (inflight.get(a) ?? 0) - (inflight.get(b) ?? 0))[0]!;
          overflow.set(p, t);
        }
        inflight.set(t, (inflight.get(t) ?? 0) + 1);
        running.set(key(t, p), (running.get(key(t, p)) ?? 0) + 1);
        return {
          targetId: t,
          spilled: t !== first,
          release() {
            inflight.set(t, inflight.get(t)! - 1);
            running.set(key(t, p), running.get(key(t, p))! - 1);
          },
        };
      },
    };
  },
};

const rows = await runBenchmark({ workloads: [workload], strategies: ["random", "least-outstanding", "prefix-aware", "longest-prefix", oracle], seeds: [seed] });
console.log(formatReport(rows));
