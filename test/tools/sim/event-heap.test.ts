import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { EventHeap } from "../../../tools/sim/event-heap.js";

describe("EventHeap", () => {
  it("pops in (time, order) order whatever the push order", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 20 }), { maxLength: 200 }), (times) => {
        const heap = new EventHeap<number>();
        // order = push index: unique, so the expected sequence is fully determined.
        times.forEach((t, i) => heap.push(t, i, i));
        expect(heap.size).toBe(times.length);
        const expected = times.map((t, i) => [t, i] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
        const popped: number[] = [];
        for (;;) {
          const next = heap.peekTime();
          const v = heap.pop();
          if (v === undefined) break;
          expect(next).toBe(times[v]);
          popped.push(v);
        }
        expect(popped).toEqual(expected.map(([, i]) => i));
      }),
    );
  });

  it("interleaves pushes and pops like a sorted queue", () => {
    fc.assert(
      fc.property(fc.array(fc.option(fc.integer({ min: 0, max: 50 }), { nil: undefined }), { maxLength: 300 }), (ops) => {
        const heap = new EventHeap<string>();
        const model: { t: number; o: number }[] = [];
        let order = 0;
        for (const op of ops) {
          if (op === undefined) {
            model.sort((a, b) => a.t - b.t || a.o - b.o);
            const want = model.shift();
            expect(heap.pop()).toBe(want === undefined ? undefined : `${want.t}/${want.o}`);
          } else {
            heap.push(op, order, `${op}/${order}`);
            model.push({ t: op, o: order++ });
          }
          expect(heap.size).toBe(model.length);
        }
      }),
    );
  });

  it("is empty at first: size 0, peekTime Infinity, pop undefined", () => {
    const heap = new EventHeap<string>();
    expect(heap.size).toBe(0);
    expect(heap.peekTime()).toBe(Infinity);
    expect(heap.pop()).toBeUndefined();
  });
});
