/**
 * What a router reports as it works, beside its counters: log lines for what an operator should
 * hear about (ejections, spill storms, stale cache predictions, settings that do nothing) and the
 * OpenTelemetry instruments (telemetry/). The router calls these hooks; they never change a
 * decision, and a logger or exporter that throws never breaks a request.
 */
import type { Logger } from "../logger.js";
import { SpillStormWatch, STORM_WINDOW } from "./spill-storm.js";
import type { Released, Telemetry } from "../telemetry/telemetry.js";
import type { PickKind, TargetSpec } from "../types.js";

/** @internal The hooks of one router. */
export class RouterEvents {
  private readonly storm = new SpillStormWatch();

  constructor(
    private readonly logger: Logger,
    readonly telemetry: Telemetry,
    private readonly strategy: string,
  ) {}

  /** A pick was committed; `full` lists the targets at the threshold, read only when a storm starts. */
  picked(targetId: string, kind: PickKind, decisionMs: number, full: () => string[]): void {
    this.telemetry.picked(targetId, this.strategy, kind, decisionMs);
    const change = this.storm.picked(kind === "spillover" || kind === "fallback");
    if (change === "start") {
      const share = Math.round(this.storm.spilledShare * 100);
      const at = full();
      this.log("warn", `prefix-router: spill storm — ${share}% of the last ~${STORM_WINDOW} picks missed their first choice; targets at the concurrency threshold: ${at.length === 0 ? "none (ejected or excluded)" : at.join(", ")}`, {
        event: "spill_storm_start",
        spilledShare: this.storm.spilledShare,
        fullTargets: at,
      });
    } else if (change === "end") {
      this.log("info", `prefix-router: spill storm over — ${Math.round(this.storm.spilledShare * 100)}% of recent picks spill`, {
        event: "spill_storm_end",
        spilledShare: this.storm.spilledShare,
      });
    }
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
