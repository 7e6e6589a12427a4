/**
 * The advisor on logs with known drift (test/tools/advise/logs.ts): it names the kind, field and
 * position of each drift, prices it close to what the virtual fleet measures once the drift is
 * removed, reports key-order differences as handled, and finds nothing in a clean log.
 */
import { describe, expect, it } from "vitest";
import { adviseRequests } from "prefix-router/advise";
import { type DriftKind, driftLog } from "./logs.js";

const quick = { simulate: false } as const;

describe("drift findings", () => {
  const cases: [DriftKind, { kind: string; field: string; what: string; position?: number }][] = [
    ["timestamp", { kind: "value", field: "the system prompt", what: "a timestamp", position: 48 }],
    ["user-id", { kind: "value", field: "the system prompt", what: "an id", position: 9 }],
    ["tools-order", { kind: "order", field: "the tools", what: "the order" }],
    ["message-order", { kind: "order", field: "the messages", what: "the order" }],
  ];

  it.each(cases)("%s: names the kind, the field and the position; the same log without it has no finding", async (kind, expected) => {
    const report = await adviseRequests(driftLog(kind, 600), quick);
    expect(report.findings).toHaveLength(1);
    const f = report.findings[0]!;
    expect(f).toMatchObject(expected);
    expect(f.lostShare).toBeGreaterThan(0.05);
    expect(f.affectedRequests).toBeGreaterThan(0);
    expect(f.typicalLostTokens).toBeGreaterThan(800);
    expect(f.samples[0]!.seen).not.toBe(f.samples[0]!.expected);
    expect(report.pooledHitRateFixed).toBeGreaterThan(report.pooledHitRate + f.lostShare - 1e-9);
    const clean = await adviseRequests(driftLog(kind, 600, false), quick);
    expect(clean.findings).toEqual([]);
    expect(clean.pooledHitRate).toBeGreaterThan(0.9);
  });

  it("says what a timestamp drift costs in one line", async () => {
    const [f] = (await adviseRequests(driftLog("timestamp", 300), quick)).findings;
    expect(f!.summary).toMatch(/^a timestamp at character 48 of the system prompt: 100% of requests lose a 2,4\d\d-token prefix \(9\d\.\d points of reuse\)$/);
    expect(f!.samples[0]!.seen).toMatch(/^2025-06-1\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it("reports key order that canonical JSON removes as handled, not as drift", async () => {
    const log = driftLog("tools-order", 200, false).map((line, i) => {
      const tools = (line.body["tools"] as { type: string; function: Record<string, unknown> }[]).map((t) =>
        i % 2 === 0 ? t : { function: { parameters: t.function["parameters"], description: t.function["description"], name: t.function["name"] }, type: t.type },
      );
      return { ...line, body: i % 3 === 0 ? { messages: line.body["messages"], tools, model: line.body["model"] } : { ...line.body, tools } };
    });
    const report = await adviseRequests(log, quick);
    expect(report.findings).toEqual([]);
    expect(report.handled.map((h) => h.field).sort()).toEqual(["the body", "tools"]);
    expect(report.handled.find((h) => h.field === "tools")!.requests).toBe(100);
    expect(report.handled[0]!.summary).toContain("handled, routing keys read canonical JSON");
  });
});

describe("the reuse a drift costs, against the virtual fleet", () => {
  it.each(["timestamp", "user-id"] as const)("%s: the estimate is within 10% of what the fleet gains once the drift is removed", async (kind) => {
    const options = { strategies: ["random", "prefix-aware", "longest-prefix"], prefixLengths: [4096] };
    const report = await adviseRequests(driftLog(kind, 900), options);
    const rec = report.recommendation!;
    const fixed = await adviseRequests(driftLog(kind, 900, false), {
      strategies: [rec.row.strategy],
      prefixLengths: [rec.row.prefixLength ?? 4096],
    });
    const measured = fixed.rows[0]!.tokenHitRate - rec.row.tokenHitRate;
    const estimate = report.findings[0]!.lostShare;
    expect(measured).toBeGreaterThan(0.2);
    expect(Math.abs(estimate - measured)).toBeLessThanOrEqual(0.1 * measured);
    // The advisor's own replay with the fix measures the same thing.
    expect(report.fixedRow!.tokenHitRate).toBeCloseTo(fixed.rows[0]!.tokenHitRate, 2);
  });
});
