import { describe, expect, it } from "vitest";
import { engineWorkload } from "../../../tools/bench/engines/workloads.js";
import { runEngineBench } from "../../../tools/bench/engines/run.js";

describe("bench --engine: the precise-prefix row", () => {
  it("starts publishing engines, subscribes its router (or each router process) to each and plays every session; the other rows' engines publish too", { timeout: 60_000 }, async () => {
    const workload = engineWorkload("short-prompts", 1, { sessions: 6, prefixChars: 600 });
    const res = await runEngineBench({
      engines: ["emulated"],
      workload,
      strategies: ["prefix-aware", "precise-prefix"],
      routers: [1, 2],
      instances: 2,
      slots: 2,
      contextSize: 2048,
      concurrency: 2,
      maxTokens: 4,
      seed: 1,
      timing: { overheadMs: 1, prefillMsPerToken: 0.01, decodeMsPerToken: 1 },
    });
    // Every row runs against engines configured alike: with events on, as the fleet would be.
    expect(res.runs.map((r) => [r.strategy, r.routers, r.publishes])).toEqual([
      ["prefix-aware", 1, true],
      ["precise-prefix", 1, true],
      ["prefix-aware", 2, true],
      ["precise-prefix", 2, true],
    ]);
    // One router here, two router processes (the bundled process script, subscribing too) there.
    for (const run of [res.runs[1]!, res.runs[3]!]) {
      expect(run.strategy).toBe("precise-prefix");
      expect(run.records).toHaveLength(6);
      expect(run.records.every((r) => r.error === undefined && r.promptTokens > 0 && run.targets.includes(r.target!))).toBe(true);
      expect(run.records.every((r) => r.predictedCachedTokens !== undefined)).toBe(true);
    }
    // The router's share of each TTFT: sent → its decision.
    for (const r of res.runs.flatMap((x) => x.records)) {
      expect(r.decisionMs).toBeGreaterThanOrEqual(0);
      expect(r.decisionMs).toBeLessThanOrEqual(r.ttftMs);
    }
  });
});
