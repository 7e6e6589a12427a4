/**
 * The log reader (src/advise/lines.ts): lines split where the bytes say, however the chunks are
 * cut; a line longer than `maxLineBytes` comes out numbered and marked, and is never held.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DEFAULT_MAX_LINE_BYTES, type LogLine, fileLines, memoryLines } from "prefix-router/advise";
import { LineSplitter } from "../../../tools/advise/lines.js";

const enc = new TextEncoder();

/** The lines `splitter` makes of `bytes` pushed in chunks of `chunk` bytes, and the most it held between two pushes. */
function split(bytes: Uint8Array, chunk: number, maxLineBytes: number): { lines: LogLine[]; maxHeld: number } {
  const splitter = new LineSplitter(maxLineBytes);
  const lines: LogLine[] = [];
  let maxHeld = 0;
  for (let i = 0; i < bytes.length; i += chunk) {
    // A reused buffer, as fs.readSync gives: pending bytes must be copies.
    const reused = Buffer.from(bytes.subarray(i, i + chunk));
    for (const l of splitter.push(reused)) lines.push(l);
    reused.fill(0x21);
    maxHeld = Math.max(maxHeld, splitter.heldBytes);
  }
  for (const l of splitter.end()) lines.push(l);
  return { lines, maxHeld };
}

describe("LineSplitter", () => {
  it("gives the text's lines (CR LF ends included, the last one without \\n), however the UTF-8 bytes are cut", () => {
    const text = fc.array(fc.oneof(fc.string({ unit: "grapheme" }), fc.constantFrom("\n", "\r\n", "\r", "é😀\n")), { maxLength: 30 }).map((parts) => parts.join(""));
    fc.assert(
      fc.property(text, fc.integer({ min: 1, max: 64 }), (t, chunk) => {
        const expected = t.split("\n").map((l) => (l.endsWith("\r") ? l.slice(0, -1) : l));
        if (t.endsWith("\n") || t === "") expected.pop();
        const { lines } = split(enc.encode(t), chunk, 1 << 20);
        expect(lines.map((l) => l.text)).toEqual(expected);
        expect(lines.map((l) => l.line)).toEqual(expected.map((_, i) => i + 1));
      }),
    );
  });

  it("numbers and marks a line longer than maxLineBytes without ever holding more than maxLineBytes of it", () => {
    const max = 64 * 1024;
    const long = 3 * 1024 * 1024;
    const bytes = enc.encode(`{"first":1}\n${"x".repeat(long)}\n{"third":3}\n${"y".repeat(max)}\n${"z".repeat(max + 1)}`);
    const { lines, maxHeld } = split(bytes, 4096, max);
    expect(maxHeld).toBeLessThanOrEqual(max);
    expect(lines.map((l) => [l.line, l.text.length, l.tooLong])).toEqual([
      [1, 11, undefined],
      [2, 0, { bytes: long, maxLineBytes: max }],
      [3, 11, undefined],
      [4, max, undefined],
      [5, 0, { bytes: max + 1, maxLineBytes: max }],
    ]);
  });

  it("marks an over-long line that fits in one chunk, and counts a line with no end at all", () => {
    const { lines } = split(enc.encode(`${"a".repeat(100)}\nok\n${"b".repeat(5000)}`), 1 << 20, 99);
    expect(lines.map((l) => [l.line, l.text, l.tooLong?.bytes])).toEqual([
      [1, "", 100],
      [2, "ok", undefined],
      [3, "", 5000],
    ]);
  });
});

describe("fileLines and memoryLines", () => {
  const dir = mkdtempSync(join(tmpdir(), "prefix-router-lines-"));

  it("read a file in 1 MiB chunks: a 3 MiB line past a 1 MiB limit comes out marked, the lines around it whole", () => {
    const path = join(dir, "long.jsonl");
    writeFileSync(path, `{"a":1}\r\n"${"x".repeat(3 * 1024 * 1024)}"\n{"b":2}`);
    const lines = [...fileLines(path, 1024 * 1024).lines()];
    expect(lines.map((l) => [l.line, l.text, l.tooLong?.bytes])).toEqual([
      [1, '{"a":1}', undefined],
      [2, "", 3 * 1024 * 1024 + 2],
      [3, '{"b":2}', undefined],
    ]);
  });

  it("measure strings in memory in UTF-8 bytes against the same limit", () => {
    const lines = [...memoryLines(["é".repeat(50), "é".repeat(51), { parsed: true }], 101).lines()];
    expect(lines.map((l) => [l.line, l.tooLong?.bytes])).toEqual([
      [1, undefined],
      [2, 102],
      [3, undefined],
    ]);
  });

  it("check maxLineBytes: an integer from 1 to 256 MiB, 64 MiB by default", () => {
    expect(DEFAULT_MAX_LINE_BYTES).toBe(64 * 1024 * 1024);
    expect(() => memoryLines([], 0)).toThrow("Expected `maxLineBytes` to be an integer from 1 to 268435456, got 0");
    expect(() => fileLines(join(dir, "long.jsonl"), 1.5)).toThrow("Expected `maxLineBytes` to be an integer from 1 to 268435456, got 1.5");
  });
});
