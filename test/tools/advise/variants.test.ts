/** Variants (tools/advise/variants.ts): the law behind value-drift findings, and what values look like. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { substitute } from "../../../tools/advise/segments.js";
import { describeValue, variantOf } from "../../../tools/advise/variants.js";
import { syntheticText } from "../../../tools/bench/text.js";

/** A template with up to two slots, filled with short value-like strings. */
const arbTemplate = fc.record({
  key: fc.integer({ min: 1, max: 1_000_000 }),
  tokens: fc.integer({ min: 200, max: 600 }),
  slots: fc.uniqueArray(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 1, maxLength: 2 }),
});
const arbValue = fc.stringMatching(/^[A-Za-z0-9:.-]{1,30}$/);

function fill(text: string, slots: readonly number[], values: readonly string[]): string {
  const at = [...slots].sort((x, y) => x - y).map((s) => Math.floor(s * text.length));
  let out = "";
  let from = 0;
  at.forEach((p, i) => {
    out += `${text.slice(from, p)} ${values[i] ?? ""} `;
    from = p;
  });
  return out + text.slice(from);
}

describe("variantOf", () => {
  it("applying its substitutions to a turns a into b, and the first change is where the texts first differ", () => {
    fc.assert(
      fc.property(arbTemplate, fc.array(arbValue, { minLength: 2, maxLength: 2 }), fc.array(arbValue, { minLength: 2, maxLength: 2 }), (t, x, y) => {
        const text = syntheticText(t.key, t.tokens);
        const a = fill(text, t.slots, x);
        const b = fill(text, t.slots, y);
        const v = variantOf(a, b);
        if (a === b) return v === undefined;
        if (v === undefined) return false;
        let common = 0;
        while (a[common] === b[common]) common++;
        return substitute(a, v.subs) === b && v.at <= common;
      }),
      { numRuns: 300 },
    );
  });

  it("finds a timestamp in a long template whatever its digits, and no variant in two different texts", () => {
    const policy = syntheticText(7, 600);
    const v = variantOf(`Now: 2025-06-15T15:06:40.500Z. ${policy}`, `Now: 2025-06-15T15:07:01.000Z. ${policy}`)!;
    expect(v).toMatchObject({ at: 5, seen: "2025-06-15T15:06:40.500Z", expected: "2025-06-15T15:07:01.000Z" });
    expect(variantOf(syntheticText(1, 300), syntheticText(2, 300))).toBeUndefined();
    expect(variantOf("short", "shirt")).toBeUndefined();
  });
});

describe("describeValue", () => {
  it("names timestamps, numbers and ids", () => {
    expect(describeValue(["2025-06-15T15:06:40Z", "2025-06-16"])).toBe("a timestamp");
    expect(describeValue(["12", "3.5"])).toBe("a number");
    expect(describeValue(["u-1324", "u-77"])).toBe("an id");
    expect(describeValue(["Alice", "Bob"])).toBe("a value");
  });
});
