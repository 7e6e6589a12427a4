import { describe, expect, it } from "vitest";
import { DEMO_STRATEGIES, demoRouterOptions, demoWorkload, runDemo } from "../../../tools/demo/demo.js";
import { MIN_HIT_GAIN, demoLegend, formatDemoTable, runDemoCommand, summaryLine } from "../../../tools/demo/cli.js";
import type { DemoRow } from "../../../tools/demo/demo.js";

const small = { requests: 42, documents: 14, timeScale: 0.05, ratePerSecond: 20 } as const;

describe("demo workload", () => {
  it("is deterministic for a seed and asks every document the same number of questions", () => {
    const options = { ...small, instances: 7, documentTokens: 2000, maxTokens: 8, seed: 3 };
    const a = demoWorkload(options);
    const b = demoWorkload(options);
    expect(a).toEqual(b);
    expect(a).toHaveLength(42);
    const perDoc = new Map<string, number>();
    for (const r of a) {
      const system = r.body.messages[0]!.content;
      expect(system.length).toBeGreaterThan(7000);
      perDoc.set(system, (perDoc.get(system) ?? 0) + 1);
    }
    expect([...perDoc.values()]).toEqual(Array(14).fill(3));
    expect(a.every((r, i) => i === 0 || r.arrivalMs >= a[i - 1]!.arrivalMs)).toBe(true);
    expect(demoWorkload({ ...options, seed: 4 })).not.toEqual(a);
  });
});

describe("demo end to end (live fleet, real openai client)", () => {
  it("prefix-aware routing finds far more cached tokens than random, and no lease leaks", async () => {
    const rows = await runDemo({ ...small, strategies: ["random", "prefix-aware"], documentTokens: 2000, maxTokens: 8 });
    expect(rows.map((r) => r.strategy)).toEqual(["random", "prefix-aware"]);
    const [random, prefix] = rows as [(typeof rows)[0], (typeof rows)[0]];
    for (const r of rows) {
      expect(r.inflightAfter).toBe(0);
      expect(r.requests).toBe(42);
      expect(r.ttftP50Ms).toBeGreaterThan(0);
      expect(r.ttftP90Ms).toBeGreaterThanOrEqual(r.ttftP50Ms);
      expect(r.minShare).toBeLessThanOrEqual(r.maxShare);
      expect(r.routerOverheadUs).toBeGreaterThan(0);
    }
    // 3 questions per document: prefix-aware can reuse the document on 2 of 3 (≈ 2/3 of tokens).
    expect(prefix.tokenHitRate).toBeGreaterThan(0.55);
    expect(prefix.tokenHitRate).toBeGreaterThan(random.tokenHitRate + 0.2);
    const table = formatDemoTable(rows);
    expect(table).toContain("prefix-aware");
    expect(table.split("\n")).toHaveLength(4);
    expect(demoLegend([...rows, { ...rows[0]!, strategy: "longest-prefix:exclusive" }])).toContain("longest-prefix:exclusive  longest-prefix with");
    expect(summaryLine(rows, 14)).toMatch(/^prefix-aware vs random: P50 TTFT -\d+%, P90 -?\d+%, cache hit \d+% → \d+%: \d+% of prompt tokens came from a replica's prefix cache/);
  });

  it("runs every strategy and longest-prefix with exclusive: true by default", () => {
    expect(DEMO_STRATEGIES).toEqual(["random", "least-outstanding", "prefix-aware", "longest-prefix", "longest-prefix:exclusive"]);
    expect(demoRouterOptions("longest-prefix")).toEqual({ strategy: "longest-prefix" });
    expect(demoRouterOptions("longest-prefix:exclusive")).toEqual({ strategy: "longest-prefix", longestPrefix: { exclusive: true } });
  });

  it("a run whose documents never repeat says it measured no cache gain, and how to see one", async () => {
    const out: string[] = [];
    const io = { out: (l: string) => out.push(l), err: () => {}, untilStopped: () => Promise.resolve() };
    // 14 requests over 14 documents: every document is asked once.
    const code = await runDemoCommand(["--requests", "14", "--documents", "14", "--time-scale", "0.05", "--strategies", "random,prefix-aware"], io);
    expect(code).toBe(0);
    const summary = out.find((l) => l.startsWith("prefix-aware vs random"))!;
    // A legend follows: every column of the table, and where the demo is explained.
    const legend = out.at(-1)!;
    for (const term of ["TTFT p50/p90/p99", "cache hit", "throughput", "spillover", "min/max share", "router/req"]) expect(legend).toContain(term);
    expect(legend).not.toContain("longest-prefix:exclusive");
    expect(legend).toMatch(/More: docs\/bench\.md#the-live-demo-npm-run-demo$/);
    expect(summary).toMatch(/^prefix-aware vs random: P50 TTFT -?\d+%, P90 -?\d+%, cache hit (\d+)% → (\d+)%: the hit rate moved by less than 5 points, so this run measured no cache gain/);
    expect(summary).toContain("14 requests over 14 documents ask no document twice, so there was almost no prefix to reuse. Run more requests to see it: --requests 70 asks each document 5 times");
    expect(summary).not.toContain("reached the replica that already held it");
  });

  it("credits a cache gain only from a rise of the hit rate of at least MIN_HIT_GAIN over random", () => {
    const row = (strategy: DemoRow["strategy"], tokenHitRate: number, requests = 60): DemoRow => ({
      strategy,
      requests,
      ttftP50Ms: strategy === "random" ? 300 : 290,
      ttftP90Ms: 700,
      ttftP99Ms: 1000,
      tokenHitRate,
      throughput: 19,
      spilloverRate: 0,
      minShare: 0.1,
      maxShare: 0.2,
      routerOverheadUs: 5,
      inflightAfter: 0,
    });
    expect(MIN_HIT_GAIN).toBe(0.05);
    const none = summaryLine([row("random", 0.01), row("prefix-aware", 0.01)], 70);
    expect(none).toBe(
      "prefix-aware vs random: P50 TTFT -3%, P90 0%, cache hit 1% → 1%: the hit rate moved by less than 5 points, so this run measured no cache gain, and its TTFT difference does not come from one — " +
        "60 requests over 70 documents ask no document twice, so there was almost no prefix to reuse. Run more requests to see it: --requests 350 asks " +
        "each document 5 times (TTFT in model ms, measured by the client).",
    );
    expect(summaryLine([row("random", 0.2, 100), row("prefix-aware", 0.24, 100)], 70)).toContain("100 requests over 70 documents ask each only 1.4 times on average");
    // Documents that repeat and still no gain: the line says what was measured, nothing more.
    expect(summaryLine([row("random", 0.2, 350), row("prefix-aware", 0.22, 350)], 70)).toBe(
      "prefix-aware vs random: P50 TTFT -3%, P90 0%, cache hit 20% → 22%: the hit rate moved by less than 5 points, so this run measured no cache gain, and its TTFT difference does not come from one (TTFT in model ms, measured by the client).",
    );
    expect(summaryLine([row("random", 0.2, 350), row("prefix-aware", 0.25, 350)], 70)).toContain(
      "cache hit 20% → 25%: 25% of prompt tokens came from a replica's prefix cache — requests that share a document reached the replica that already held it",
    );
  });

  it("the CLI prints JSON rows and rejects unknown strategies", async () => {
    const out: string[] = [];
    const io = { out: (l: string) => out.push(l), err: () => {}, untilStopped: () => Promise.resolve() };
    const code = await runDemoCommand(
      ["--requests", "14", "--documents", "7", "--time-scale", "0.05", "--strategies", "prefix-aware,longest-prefix:exclusive", "--json"],
      io,
    );
    expect(code).toBe(0);
    const rows = JSON.parse(out.join("\n")) as { strategy: string; inflightAfter: number }[];
    expect(rows).toMatchObject([
      { strategy: "prefix-aware", inflightAfter: 0 },
      { strategy: "longest-prefix:exclusive", inflightAfter: 0 },
    ]);
    await expect(runDemoCommand(["--strategies", "round-robin"], io)).rejects.toThrow(/unknown strategy "round-robin"/);
  });
});
