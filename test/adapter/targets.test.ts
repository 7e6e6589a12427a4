/** The shared walk over an adapter's own target fields. */
import { describe, expect, it } from "vitest";
import { checkTargetFields } from "../../src/adapter/targets.js";

describe("checkTargetFields", () => {
  it("fails a list that is no array with the router's message", () => {
    expect(() => checkTargetFields({}, () => {})).toThrow("Expected `targets` to be an array, got an object");
  });

  it("checks each object entry with its index, and leaves other entries to the router", () => {
    const seen: [unknown, number][] = [];
    checkTargetFields([{ id: "a", url: 1 }, null, "x", { id: "b" }], (target, i) => void seen.push([target, i]));
    expect(seen).toEqual([
      [{ id: "a", url: 1 }, 0],
      [{ id: "b" }, 3],
    ]);
  });

  it("lets the check's error through", () => {
    expect(() =>
      checkTargetFields<{ id: string; url?: string }>([{ id: "a" }], ({ url }, i) => {
        if (url === undefined) throw new TypeError(`Expected \`targets[${i}].url\` to be a string`);
      }),
    ).toThrow("Expected `targets[0].url` to be a string");
  });
});
