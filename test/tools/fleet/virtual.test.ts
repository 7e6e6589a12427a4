import { describe, expect, it } from "vitest";
import { VirtualFleet, isFleetError, type VirtualResult } from "prefix-router/fleet";

function prompt(tokens: number, tag: string): string {
  let s = "";
  while (s.length < tokens * 4) s += `${tag} words ${s.length} `;
  return s.slice(0, tokens * 4);
}

function codeOf(fn: () => void): string | undefined {
  try {
    fn();
  } catch (e) {
    return isFleetError(e) ? e.code : "not a FleetError";
  }
  return undefined;
}

/** A deterministic workload: 6 shared documents, 300 requests, affinity routing, jitter on. */
function replay(seed: number): VirtualResult[] {
  const fleet = new VirtualFleet({ instances: 3, seed, engine: { stepJitter: 0.2 } });
  const ids = fleet.instanceIds();
  const out: VirtualResult[] = [];
  for (let i = 0; i < 300; i++) {
    fleet.advanceTo(i * 40);
    const d = (i * 7) % 6;
    fleet.submit(ids[d % 3]!, { id: i, prompt: prompt(2000, `doc${d}`) + `question ${i}`, outputTokens: 20 + (i % 30) }, {
      onDone: (r) => out.push(r),
    });
  }
  fleet.runUntilIdle();
  return out;
}

describe("VirtualFleet", () => {
  it("is deterministic for a seed", () => {
    const a = replay(7);
    expect(a).toHaveLength(300);
    expect(replay(7)).toEqual(a);
    expect(replay(8)).not.toEqual(a);
  });

  it("names instances i0..iN-1 or uses the given ids", () => {
    expect(new VirtualFleet({ instances: 3 }).instanceIds()).toEqual(["i0", "i1", "i2"]);
    expect(new VirtualFleet({ instances: ["a", "b"] }).instanceIds()).toEqual(["a", "b"]);
    expect(codeOf(() => new VirtualFleet({ instances: 0 }))).toBe("INVALID_ARGUMENT");
    expect(codeOf(() => new VirtualFleet({ instances: ["a", "a"] }))).toBe("DUPLICATE_INSTANCE");
  });

  it("fires callbacks in time order across instances, before advanceTo returns", () => {
    const fleet = new VirtualFleet({ instances: 2, engine: { stepBaseMs: 10, frontendOverheadMs: 0 } });
    const events: string[] = [];
    fleet.submit("i0", { id: "slow", prompt: prompt(16, "x"), outputTokens: 5 }, { onDone: (r) => events.push(`${r.id}@${r.finishMs}`) });
    fleet.submit("i1", { id: "fast", prompt: prompt(16, "y"), outputTokens: 2 }, { onDone: (r) => events.push(`${r.id}@${r.finishMs}`) });
    fleet.advanceTo(25);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatch(/^fast@2\d\./);
    expect(fleet.now).toBe(25);
    fleet.runUntilIdle();
    expect(events[1]).toMatch(/^slow@5\d\./);
  });

  it("lets a completion callback submit the next request at the completion time", () => {
    const fleet = new VirtualFleet({ instances: 1 });
    const done: VirtualResult[] = [];
    fleet.submit("i0", { id: 1, prompt: prompt(100, "a"), outputTokens: 3 }, {
      onDone: (r) => {
        done.push(r);
        fleet.submit("i0", { id: 2, prompt: prompt(100, "a"), outputTokens: 3 }, { onDone: (x) => done.push(x) });
      },
    });
    fleet.runUntilIdle();
    expect(done[1]!.arrivalMs).toBe(done[0]!.finishMs);
    expect(done[1]!.cachedTokens).toBe(96);
  });

  it("refuses to go back in time or to be advanced from a callback", () => {
    const fleet = new VirtualFleet({ instances: 1 });
    fleet.advanceTo(100);
    expect(codeOf(() => fleet.advanceTo(50))).toBe("INVALID_TIME");
    let inner: string | undefined;
    fleet.submit("i0", { id: 1, prompt: "abcd", outputTokens: 1 }, { onDone: () => (inner = codeOf(() => fleet.advanceTo(1e9))) });
    fleet.runUntilIdle();
    expect(inner).toBe("INVALID_TIME");
  });

  it("removeInstance: new submits fail, running requests finish, then the instance and its cache are gone", () => {
    const fleet = new VirtualFleet({ instances: 2 });
    const done: VirtualResult[] = [];
    fleet.submit("i1", { id: 1, prompt: prompt(500, "z"), outputTokens: 10 }, { onDone: (r) => done.push(r) });
    fleet.advanceTo(100);
    fleet.removeInstance("i1");
    expect(fleet.instanceIds()).toEqual(["i0"]);
    expect(fleet.instanceStats().i1?.draining).toBe(true);
    expect(codeOf(() => fleet.submit("i1", { id: 2, prompt: "abcd", outputTokens: 1 }, { onDone() {} }))).toBe("INSTANCE_REMOVED");
    expect(codeOf(() => fleet.addInstance("i1"))).toBe("DUPLICATE_INSTANCE");
    fleet.runUntilIdle();
    expect(done.map((r) => r.instance)).toEqual(["i1"]);
    expect(fleet.instanceStats().i1).toBeUndefined();
    expect(codeOf(() => fleet.submit("i1", { id: 3, prompt: "abcd", outputTokens: 1 }, { onDone() {} }))).toBe("UNKNOWN_INSTANCE");
    // Re-added, it starts cold.
    fleet.addInstance("i1");
    let again: VirtualResult | undefined;
    fleet.submit("i1", { id: 4, prompt: prompt(500, "z"), outputTokens: 1 }, { onDone: (r) => (again = r) });
    fleet.runUntilIdle();
    expect(again?.cachedTokens).toBe(0);
    expect(fleet.instanceIds()).toEqual(["i0", "i1"]);
  });

  it("an idle instance is removed at once", () => {
    const fleet = new VirtualFleet({ instances: 2 });
    fleet.removeInstance("i0");
    expect(fleet.instanceStats()).not.toHaveProperty("i0");
    expect(codeOf(() => fleet.removeInstance("nope"))).toBe("UNKNOWN_INSTANCE");
  });

  it("per-instance engine overrides apply to that instance only", () => {
    const fleet = new VirtualFleet({ instances: ["big", "small"], instanceEngine: { small: { numGpuBlocks: 10 } } });
    expect(fleet.engine("small").config.numGpuBlocks).toBe(10);
    expect(fleet.engine("big").config.numGpuBlocks).toBe(75_000);
  });
});
