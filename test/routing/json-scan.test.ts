import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ARRAY, ESCAPED, LITERAL, NUMBER, OBJECT, STRING, scanJson } from "../../src/routing/json-scan.js";
import { jsonText, mutated } from "../json-texts.js";

const enc = new TextEncoder();
const strict = new TextDecoder("utf-8", { fatal: true });

function parses(bytes: Uint8Array): boolean {
  try {
    JSON.parse(strict.decode(bytes));
    return true;
  } catch {
    return false;
  }
}

describe("scanJson", () => {
  it("accepts exactly what JSON.parse of the strictly decoded bytes accepts (property)", () => {
    fc.assert(
      fc.property(fc.oneof(jsonText, mutated), fc.integer({ min: 0, max: 3 }), (text, offset) => {
        const bytes = enc.encode(text);
        // At every alignment: control characters are searched four bytes at a time.
        const placed = new Uint8Array(bytes.length + offset);
        placed.set(bytes, offset);
        const view = placed.subarray(offset);
        expect(scanJson(view) !== undefined).toBe(parses(bytes));
      }),
      { numRuns: 5000 },
    );
  });

  it("rejects control characters inside strings wherever they fall, accepts them as whitespace", () => {
    for (let len = 0; len < 12; len++) {
      for (let at = 0; at < len; at++) {
        for (const c of [0x00, 0x09, 0x0a, 0x1f]) {
          const bytes = enc.encode(`"${"x".repeat(len)}"`);
          bytes[1 + at] = c;
          expect(scanJson(bytes)).toBeUndefined();
        }
      }
    }
    expect(scanJson(enc.encode('\t[\r\n1 ,\t"a"\n]\r\n'))).toBeDefined();
  });

  it("records kinds, spans and subtree ends", () => {
    const tape = scanJson(enc.encode(' {"a" : [1, true, "x\\n"], "b":{}} '));
    expect(tape?.depth).toBe(2);
    const entries = Array.from({ length: tape?.count ?? 0 }, (_, e) => Array.from(tape!.entries.subarray(4 * e, 4 * e + 4)));
    // ` {"a" : [1, true, "x\n"], "b":{}} `: [kind, start, end, next entry after the subtree]
    expect(entries).toEqual([
      [OBJECT, 1, 33, 8],
      [STRING, 2, 5, 2],
      [ARRAY, 8, 24, 6],
      [NUMBER, 9, 10, 4],
      [LITERAL, 12, 16, 5],
      [STRING, 18, 23, 6], // its \n is already canonical: copied as it is
      [STRING, 26, 29, 7],
      [OBJECT, 30, 32, 8],
    ]);
  });

  it("rejects invalid UTF-8 anywhere", () => {
    for (const b of [[0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82]]) {
      expect(scanJson(Uint8Array.from([0x22, ...b, 0x22]))).toBeUndefined();
    }
    expect(scanJson(enc.encode('"é😀\u2028"'))).toBeDefined();
  });
});
