/**
 * The recommendation's reason follows from its figures: a log whose requests share little, a log
 * whose working set every replica's cache holds (any strategy hits, so prefix routing gains
 * nothing), and the same log on caches too small for it (prefix routing pays off). Logs built as
 * in logs.ts; the rows are the virtual fleet's.
 */
import { describe, expect, it } from "vitest";
import { adviseRequests } from "prefix-router/advise";
import { LITTLE_REUSE, NEAR_CEILING, recommend } from "../../../tools/advise/recommend.js";
import { documentsLog, driftLog } from "./logs.js";

const strategies = { strategies: ["random", "least-outstanding", "prefix-aware"], prefixLengths: [4096] };
const notWorthIt = "No prefix-reading strategy beats load-based routing by 2.0% of mean TTFT on this log: ";

describe("the recommendation's reason", () => {
  it("says every cache holds the working set, not that requests share little, when load-based routing already hits the ceiling", async () => {
    // 3 documents × 2,400 tokens: every replica's 1.2 M-token cache holds them all.
    const report = await adviseRequests(documentsLog(3, 600), strategies);
    const rec = report.recommendation!;
    expect(report.ceilingHitRate).toBeGreaterThan(0.9);
    expect(["random", "least-outstanding"]).toContain(rec.row.strategy);
    expect(rec.row.tokenHitRate).toBeGreaterThanOrEqual(NEAR_CEILING * rec.row.idealHitRate);
    expect(rec.why).toMatch(
      new RegExp(
        `^${notWorthIt}every replica's cache holds the log's whole working set, so any strategy hits — ${rec.row.strategy} already serves \\d+\\.\\d% ` +
          `of prompt tokens from cache, against a ceiling of \\d+\\.\\d%\\. Prefix routing pays off when the distinct prefixes outgrow one replica's cache \\(here 1,200,000 tokens\\)\\.$`,
      ),
    );
    expect(rec.why).not.toContain("share little");
  });

  it("recommends prefix routing on the same log when the caches are too small for it", async () => {
    // 4,000 tokens a replica: one document each; placed by prefix, every replica keeps its own.
    const report = await adviseRequests(documentsLog(3, 600), { ...strategies, capacityTokens: 4_000 });
    const rec = report.recommendation!;
    expect(rec.row.strategy).toBe("prefix-aware");
    expect(rec.why).toMatch(/^Lowest mean TTFT on this log/);
  });

  it("says the requests share little when the reuse ceiling is low", async () => {
    const report = await adviseRequests(driftLog("timestamp", 600), strategies);
    const rec = report.recommendation!;
    expect(report.ceilingHitRate).toBeLessThan(LITTLE_REUSE);
    expect(rec.why).toMatch(new RegExp(`^${notWorthIt}its requests share little — at most \\d+\\.\\d% of prompt tokens could come from a prefix cache \\(the reuse ceiling\\)\\.$`));
  });

  it("names the hit rates when prefix routing hits more but mean TTFT does not follow", async () => {
    const { rows } = await adviseRequests(documentsLog(3, 300), strategies);
    // The same rows, as if load-based routing had hit half of what prefix routing does at the same mean TTFT.
    const mean = rows[0]!.ttftMeanMs;
    const edited = rows.map((r) => ({ ...r, ttftMeanMs: mean, idealHitRate: 0.756, tokenHitRate: r.strategy === "prefix-aware" ? 0.7 : 0.35 }));
    const rec = recommend(edited)!;
    expect(rec.row.strategy).toBe("random");
    expect(rec.why).toBe(`${notWorthIt}prefix-aware (4096) serves 70.0% of prompt tokens from cache against random's 35.0% (ceiling 75.6%), but changes mean TTFT by +0.0%.`);
  });
});
