import v8 from "node:v8";
import vm from "node:vm";
import { describe, expect, it } from "vitest";
import { TargetBlocks } from "../../../src/strategies/longest-prefix/blocks.js";

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;

function heapBytes(): number {
  gc();
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
}

describe("prefix index memory", () => {
  it("holds one million blocks in at most 64 MB, as estimated", () => {
    const perTarget = 31_250;
    const targets = 32;
    const settings = { capacityBlocks: perTarget, ttlMs: 60_000, clock: { now: () => 5_000 }, originMs: 0 };
    const before = heapBytes();
    const index = Array.from({ length: targets }, (_, t) => new TargetBlocks(`t${t}`, settings));
    const keys = new Int32Array(250);
    let n = 0;
    for (const blocks of index) {
      for (let r = 0; r < perTarget / keys.length; r++) {
        // Distinct, spread-out int32 keys (multiplying by an odd constant is a bijection).
        for (let i = 0; i < keys.length; i++) keys[i] = Math.imul(++n, 0x9e3779b1);
        blocks.record(keys, keys.length, 5_000);
      }
    }
    const used = heapBytes() - before;
    const held = index.reduce((s, b) => s + b.size, 0);
    const estimated = index.reduce((s, b) => s + b.estimatedBytes(), 0);
    expect(held).toBe(1_000_000);
    console.info(`prefix index: ${(used / held).toFixed(1)} bytes per block measured, ${(estimated / held).toFixed(1)} estimated`);
    expect(used / held).toBeLessThanOrEqual(64);
    expect(Math.abs(estimated - used) / used).toBeLessThan(0.25);
  });
});
