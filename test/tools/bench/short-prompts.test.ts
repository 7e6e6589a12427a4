import { describe, expect, it } from "vitest";
import { builtinWorkload, shortPromptsWorkload, SHORT_PROMPTS_DEFAULTS, SLOT_ENGINE, type BenchRequest } from "prefix-router/bench";

const take = (seed: number, durationMs = 60_000, params = {}): BenchRequest[] => [...shortPromptsWorkload(params).requests({ seed, durationMs, rateMultiplier: 1 })];
const system = (r: BenchRequest) => r.body.messages[0]!.content as string;
const question = (r: BenchRequest) => r.body.messages[1]!.content as string;

describe("short-prompts workload", () => {
  it("is a pure function of the seed", () => {
    expect(take(1)).toEqual(take(1));
    expect(JSON.stringify(take(2))).not.toBe(JSON.stringify(take(1)));
    expect(builtinWorkload("short-prompts").name).toBe("short-prompts");
  });

  it("a dozen system prompts of ~1,500 characters, skewed popularity, short distinct questions", () => {
    const rs = take(1, 300_000);
    const counts = new Map<string, number>();
    for (const r of rs) counts.set(system(r), (counts.get(system(r)) ?? 0) + 1);
    expect(counts.size).toBe(SHORT_PROMPTS_DEFAULTS.prompts);
    for (const s of counts.keys()) expect(s.length).toBe(1500);
    const shares = [...counts.values()].sort((a, b) => b - a).map((n) => n / rs.length);
    expect(shares[0]).toBeGreaterThan(0.25);
    expect(shares.at(-1)).toBeLessThan(0.05);
    expect(new Set(rs.map(question)).size).toBe(rs.length);
    for (const r of rs) expect(question(r).length).toBeLessThan(410);
    // About 12 requests a second, in arrival order.
    expect(rs.length / 300).toBeGreaterThan(11);
    expect(rs.length / 300).toBeLessThan(13);
    for (let i = 1; i < rs.length; i++) expect(rs[i]!.arrivalMs).toBeGreaterThanOrEqual(rs[i - 1]!.arrivalMs);
  });

  it("is meant for 4 instances of 4 slots: more prompts than one instance's slots, no more than all of them", () => {
    const w = shortPromptsWorkload();
    expect(w.fleet).toEqual({ instances: 4, engine: SLOT_ENGINE });
    expect(SHORT_PROMPTS_DEFAULTS.prompts).toBeGreaterThan(SLOT_ENGINE.slots!);
    expect(SHORT_PROMPTS_DEFAULTS.prompts).toBeLessThanOrEqual(4 * SLOT_ENGINE.slots!);
  });
});
