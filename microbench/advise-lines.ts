/**
 * Benchmark of the request-log reader behind `prefix-router advise` (tools/advise/lines.ts): the
 * time to read every line of a file, for files of one line with no newline (the worst case: a
 * reader that rescans its pending text on every chunk is quadratic there) and of 2 KiB lines (a
 * normal log), at doubling sizes. A linear reader keeps its MB/s as the size doubles.
 *
 *   npx tsx microbench/advise-lines.ts                                  # the reader in tools/advise/lines.ts
 *   npx tsx microbench/advise-lines.ts --baseline=path/to/lines.ts      # and another build of it, side by side
 *   npx tsx microbench/advise-lines.ts --sizes=8,16,32,64 --dir=/tmp    # sizes in MiB, where the files go
 *
 * The one-line files are read with `maxLineBytes` set above their size, so the whole line is
 * buffered and decoded (the most work a reader can do on them); the table also shows the default
 * limit refusing the largest one without holding it. Each figure is the best of `--runs` (3).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

interface Reader {
  fileLines(path: string, maxLineBytes?: number): { lines(): Iterable<{ text: string; tooLong?: unknown }> };
}

const args = new Map(
  process.argv.slice(2).map((a) => {
    const [k, v = ""] = a.replace(/^--/, "").split("=");
    return [k as string, v];
  }),
);
const sizes = (args.get("sizes") ?? "16,32,64,128").split(",").map(Number);
const runs = Number(args.get("runs") ?? 3);
const load = async (path: string): Promise<Reader> => (await import(pathToFileURL(resolve(path)).href)) as Reader;
const current = await load("tools/advise/lines.ts");
const baseline = args.has("baseline") ? await load(args.get("baseline")!) : undefined;
const dir = mkdtempSync(join(args.get("dir") ?? tmpdir(), "advise-lines-"));
const MiB = 1024 * 1024;

/** Reads every line of `path`; returns the best time in ms and the characters read (so the work is not optimized away). */
function time(reader: Reader, path: string, maxLineBytes: number | undefined): { ms: number; chars: number; tooLong: number } {
  let best = Infinity;
  let chars = 0;
  let tooLong = 0;
  for (let r = 0; r < runs; r++) {
    chars = 0;
    tooLong = 0;
    const start = performance.now();
    for (const line of reader.fileLines(path, maxLineBytes).lines()) {
      chars += line.text.length;
      if (line.tooLong !== undefined) tooLong++;
    }
    best = Math.min(best, performance.now() - start);
  }
  return { ms: best, chars, tooLong };
}

const rows: string[][] = [["file", "MiB", "reader", "ms", "MB/s", "ms / MiB", "vs baseline"]];
try {
  for (const kind of ["one line, no newline", "2 KiB lines"] as const) {
    for (const mib of sizes) {
      const path = join(dir, `${kind === "2 KiB lines" ? "lines" : "one"}-${mib}.jsonl`);
      writeFileSync(path, kind === "2 KiB lines" ? `${"x".repeat(2047)}\n`.repeat((mib * MiB) / 2048) : "x".repeat(mib * MiB));
      const limit = kind === "2 KiB lines" ? undefined : Math.max(mib * MiB, 64 * MiB);
      const now = time(current, path, limit);
      const base = baseline === undefined ? undefined : time(baseline, path, limit);
      const row = (name: string, t: { ms: number }, ratio: string) => [kind, String(mib), name, t.ms.toFixed(0), (mib * MiB / 1e6 / (t.ms / 1000)).toFixed(0), (t.ms / mib).toFixed(1), ratio];
      rows.push(row("this", now, base === undefined ? "" : `${(base.ms / now.ms).toFixed(1)}× faster`));
      if (base !== undefined) rows.push(row("baseline", base, ""));
      if (kind === "one line, no newline" && mib === sizes.at(-1) && mib * MiB > 64 * MiB) {
        const refused = time(current, path, undefined);
        rows.push([kind, String(mib), `this, default limit (refused: ${refused.tooLong})`, refused.ms.toFixed(0), (mib * MiB / 1e6 / (refused.ms / 1000)).toFixed(0), (refused.ms / mib).toFixed(1), ""]);
      }
      rmSync(path);
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
for (const [i, r] of rows.entries()) {
  console.log(r.map((c, j) => (j >= 3 && j <= 5 ? c.padStart(widths[j]!) : c.padEnd(widths[j]!))).join("  "));
  if (i === 0) console.log(widths.map((w) => "-".repeat(w)).join("  "));
}
