import { formatReport, renderHtmlReport, runBenchmark } from "prefix-router/bench";
import type { BenchRow } from "prefix-router/bench";
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { BENCH_USAGE, runBenchCommand } from "../../../tools/bench/cli.js";
import { hitRateSpec } from "../../../tools/bench/report.js";

const SAMPLE = fileURLToPath(new URL("../../fixtures/mooncake_synthetic.jsonl", import.meta.url));

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => void out.push(l), err: (l: string) => void err.push(l) }, out, err };
}

describe("prefix-router bench", () => {
  it("prints help", async () => {
    const c = capture();
    expect(await runBenchCommand(["--help"], c.io)).toBe(0);
    expect(c.out.join("\n")).toBe(BENCH_USAGE);
  });

  it.each([
    [["--nope"]],
    [["--duration", "5"]],
    [["--workload", "chat"]],
    [["--scale-at", "10m"]],
    [["--prefix-length", "abc"]],
    [["--routers", "two"]],
  ])("exits 2 on a usage error: %j", async (argv) => {
    const c = capture();
    expect(await runBenchCommand(argv, c.io)).toBe(2);
    expect(c.err[0]).toMatch(/^prefix-router bench: /);
  });

  it("exits 1 naming the file and line of a malformed trace", async () => {
    const dir = await mkdtemp(join(tmpdir(), "bench-"));
    const file = join(dir, "bad.jsonl");
    await import("node:fs/promises").then((fs) => fs.writeFile(file, '{"timestamp":0,"input_length":10,"output_length":1,"hash_ids":[1]}\n{"timestamp":1}\n'));
    const c = capture();
    expect(await runBenchCommand(["--trace", file], c.io)).toBe(1);
    expect(c.err[0]).toContain(`${file}:2:`);
  });

  it("sweeps list options into rows and writes JSON to stdout and an HTML report", async () => {
    const dir = await mkdtemp(join(tmpdir(), "bench-"));
    const report = join(dir, "r.html");
    const c = capture();
    const code = await runBenchCommand(
      ["--workload", "rag", "--strategies", "random,prefix-aware", "--prefix-length", "1024,4096", "--duration", "30s", "--seed", "2", "--scale-at", "15s:+1", "--json", "-", "--report", report, "-q"],
      c.io,
    );
    expect(code).toBe(0);
    const rows = JSON.parse(c.out.join("\n")) as BenchRow[];
    expect(rows.map((r) => [r.strategy, r.prefixLength])).toEqual([["random", null], ["prefix-aware", 1024], ["prefix-aware", 4096]]);
    for (const r of rows) {
      expect(r).toMatchObject({ workload: "rag", durationMs: 30_000, seed: 2, instances: 7 });
      expect(r.scaleEvents).toHaveLength(1);
    }
    // The table went to stderr, with the comparison against random.
    expect(c.err.join("\n")).toContain("Compared with random");
    const html = await readFile(report, "utf8");
    expect(html.match(/<svg/g)).toHaveLength(3);
    expect(html).toContain("TTFT CDF");
    expect(html).toContain("prefix-aware p1024 t32");
  });

  it("replays a trace file", async () => {
    const c = capture();
    expect(await runBenchCommand(["--trace", SAMPLE, "--duration", "20s", "--strategies", "prefix-aware", "--json", "-", "-q"], c.io)).toBe(0);
    const rows = JSON.parse(c.out.join("\n")) as BenchRow[];
    expect(rows).toHaveLength(1);
    expect(rows[0]!.workload).toBe("trace");
    expect(rows[0]!.requests).toBeGreaterThan(50);
  });
});

describe("HTML report", () => {
  it("draws one section per scenario with vega-lite charts and marks scale events", async () => {
    const rows = await runBenchmark({ workloads: ["hot-prefix"], strategies: ["random", "prefix-aware"], durationsMs: [20_000], scaleEvents: [{ atMs: 10_000, delta: -1 }] });
    const spec = hitRateSpec(rows) as { layer: { mark: { type: string } }[] };
    expect(spec.layer.map((l) => l.mark.type)).toEqual(["line", "line", "rule", "text"]);
    const html = await renderHtmlReport(rows);
    expect(html.match(/<section>/g)).toHaveLength(1);
    expect(html.match(/<svg/g)).toHaveLength(3);
    expect(html).toContain("-1 → 6");
  });
});

describe("checks printed after the tables", () => {
  it("names what they check: prefix-aware vs random against AWS's published gains, in the terminal and the HTML report", async () => {
    const rows = await runBenchmark({ workloads: ["long-context"], strategies: ["random", "prefix-aware"], durationsMs: [20_000] });
    const text = formatReport(rows);
    expect(text).toMatch(/prefix-aware vs random, against AWS's published gains:\n[\s\S]*P50 TTFT vs random ≤ −80%/);
    const html = await renderHtmlReport(rows);
    expect(html).toContain("<h2>prefix-aware vs random, against AWS&#39;s published gains</h2>");
    for (const out of [text, html]) expect(out).not.toMatch(/issue|goals of/i);
  });

  it("checks AWS's published gains only on a run as long as the workload's calibrated duration", async () => {
    const short = await runBenchmark({ workloads: ["long-context"], strategies: ["random", "prefix-aware"], durationsMs: [20_000] });
    const text = formatReport(short);
    const gains = text.slice(text.indexOf("against AWS's published gains:"));
    expect(gains).not.toMatch(/MISSED|\bmet\b/);
    const notChecked = "not checked: needs the calibrated duration 1h (--duration 1h; this run 20s)";
    for (const goal of ["P50 TTFT vs random ≤ −80%", "P90 TTFT vs random ≤ −40%", "token hit rate ≥ 95% of ideal", "every instance share in 13.3%–15.4%"]) {
      expect(gains.split("\n").find((l) => l.includes(goal))).toContain(notChecked);
    }
    const html = await renderHtmlReport(short);
    expect(html).toContain(notChecked);
    expect(html).not.toMatch(/missed by/);
    // The same rows as if they had run the calibrated hour are checked.
    const hour = short.map((r) => ({ ...r, durationMs: 3_600_000 }));
    expect(formatReport(hour)).not.toContain("not checked");
    expect(formatReport(hour)).toMatch(/P50 TTFT vs random ≤ −80% +\S+ +(met|MISSED by [\d.]+ points)/);
  });
});
