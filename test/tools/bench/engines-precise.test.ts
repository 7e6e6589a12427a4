import { describe, expect, it } from "vitest";
import { engineWorkload } from "../../../tools/bench/engines/workloads.js";
import { runEngineBench } from "../../../tools/bench/engines/run.js";

describe("bench --engine: the precise-prefix row", () => {
  it("starts publishing engines, subscribes its router to each and plays every session", { timeout: 60_000 }, async () => {
    const workload = engineWorkload("short-prompts", 1, { sessions: 6, prefixChars: 600 });
    const res = await runEngineBench({
      engines: ["emulated"],
      workload,
      strategies: ["precise-prefix"],
      instances: 2,
      slots: 2,
      contextSize: 2048,
      concurrency: 2,
      maxTokens: 4,
      seed: 1,
      timing: { overheadMs: 1, prefillMsPerToken: 0.01, decodeMsPerToken: 1 },
    });
    const run = res.runs[0]!;
    expect(run.strategy).toBe("precise-prefix");
    expect(run.records).toHaveLength(6);
    expect(run.records.every((r) => r.error === undefined && r.promptTokens > 0 && run.targets.includes(r.target!))).toBe(true);
    expect(run.records.every((r) => r.predictedCachedTokens !== undefined)).toBe(true);
  });
});
