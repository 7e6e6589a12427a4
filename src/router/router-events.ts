/**
 * What a router reports as it works, beside its counters: log lines for what an operator should
 * hear about (ejections, spill storms, stale cache predictions, settings that do nothing) and the
 * OpenTelemetry instruments (telemetry/). The router calls these hooks; they never change a
 * decision, and a logger or exporter that throws never breaks a request.
 */
import type { Logger } from "../logger.js";
import { type SpillCauses, SpillStormWatch, STORM_WINDOW } from "./spill-storm.js";
import type { Released, Telemetry } from "../telemetry/telemetry.js";
import type { PickKind, TargetSpec } from "../types.js";

/** Share of recent picks that spilled on retries from which a storm's log line names them as a reason. */
const RETRY_REASON_SHARE = 0.1;

/** @internal The hooks of one router. */
export class RouterEvents {
  private readonly storm = new SpillStormWatch();

  constructor(
    private readonly logger: Logger,
    readonly telemetry: Telemetry,
    private readonly strategy: string,
    private readonly concurrencyThreshold: number,
  ) {}

  /**
   * A pick was committed (`retry`: its request excluded targets it had tried); `causes` reads why
   * picks spill now, called only when a storm starts.
   */
  picked(targetId: string, kind: PickKind, decisionMs: number, causes: () => SpillCauses, retry = false): void {
    this.telemetry.picked(targetId, this.strategy, kind, decisionMs);
    const change = this.storm.picked(kind === "spillover" || kind === "fallback", retry);
    if (change === "start") {
      const share = Math.round(this.storm.spilledShare * 100);
      const c = causes();
      const retried = this.storm.retriedShare;
      this.log("warn", `prefix-router: spill storm — ${share}% of the last ~${STORM_WINDOW} picks missed their first choice; ${this.why(c, retried)}`, {
        event: "spill_storm_start",
        spilledShare: this.storm.spilledShare,
        fullTargets: c.full,
        quotaTargets: c.quota,
        ejectedTargets: c.ejected,
        failingHealthCheckTargets: c.failingHealthCheck,
        retriedShare: retried,
      });
    } else if (change === "end") {
      this.log("info", `prefix-router: spill storm over — ${Math.round(this.storm.spilledShare * 100)}% of recent picks spill`, {
        event: "spill_storm_end",
        spilledShare: this.storm.spilledShare,
      });
    }
  }

  /** The reasons the state gives for a storm, as a clause of its log line: only those that hold. */
  private why(c: SpillCauses, retriedShare: number): string {
    const reasons: string[] = [];
    if (c.full.length > 0) reasons.push(`at the concurrency threshold (${this.concurrencyThreshold} in flight): ${c.full.join(", ")}`);
    if (c.quota.length > 0) reasons.push(`at this process's share of the threshold (shared load view): ${c.quota.join(", ")}`);
    if (c.ejected.length > 0) reasons.push(`ejected after failures: ${c.ejected.join(", ")}`);
    if (c.failingHealthCheck.length > 0) reasons.push(`failing health checks: ${c.failingHealthCheck.join(", ")}`);
    if (retriedShare >= RETRY_REASON_SHARE) reasons.push(`${Math.round(retriedShare * 100)}% of the picks were retries that excluded the targets they had tried`);
    if (reasons.length > 0) return reasons.join("; ");
    return (
      `no target is at the concurrency threshold, ejected or failing health checks, and the picks were not retries: ` +
      `the ${this.strategy} strategy chose other targets by its own load rule, or the load that filled them has passed`
    );
  }

  released(r: Released): void {
    this.telemetry.released(r);
  }

  ejected(targetId: string, forMs: number, failures: number): void {
    this.telemetry.ejected(targetId);
    this.log("warn", `prefix-router: target ${JSON.stringify(targetId)} ejected for ${forMs} ms after ${failures} failures in a row (connection errors or 5xx)`, {
      event: "ejection",
      target: targetId,
      ejectionMs: forMs,
    });
  }

  forgot(targetId: string, entries: number, misses: number): void {
    this.telemetry.forgot(targetId, this.strategy);
    this.log("warn", `prefix-router: target ${JSON.stringify(targetId)} served far fewer cached tokens than predicted ${misses} times in a row (restarted, or evicting); the ${this.strategy} strategy forgot its ${entries} entries for it`, {
      event: "index_reset",
      target: targetId,
      entries,
    });
  }

  /** Checks a new target set for settings that cannot work as meant. */
  targetsSet(targets: readonly TargetSpec[], prefixStrategy: boolean): void {
    const live = targets.filter((t) => (t.weight ?? 1) > 0).length;
    if (prefixStrategy && live === 1) {
      this.log("warn", "prefix-router: only one target has weight > 0: prefix routing has nowhere else to send a prefix", { event: "config", targets: live });
    }
  }

  /** A setting that is ignored. */
  ignored(message: string): void {
    this.log("warn", `prefix-router: ${message}`, { event: "config" });
  }

  private log(level: "info" | "warn", message: string, fields: Record<string, unknown>): void {
    try {
      this.logger[level](message, fields);
    } catch {
      // A logger must never break routing.
    }
  }
}
