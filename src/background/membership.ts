/**
 * Membership: the target set, refreshed in the background from a provider — a function that
 * returns the current targets (a service registry, a config file, {@link dnsTargets} for a
 * Kubernetes headless service) — and applied with `setTargets`. Rendezvous hashing keeps the
 * remap minimal: only keys of targets that left move, and only ≈ 1/(n+1) of keys move onto a
 * target that joined. A refresh that fails, times out, returns no targets or invalid ones keeps
 * the current set (and says so through `logger` and `stats().membership`); no request waits on it.
 */
import { RouterError } from "../errors.js";
import { type Logger, log } from "../logger.js";
import { optionInteger, optionObject, optionTimers } from "../internal/options.js";
import { redactText } from "../internal/redact.js";
import { checkFunction, checkKnownKeys, keysOf } from "../internal/validate.js";
import { Repeater, type Timers } from "../internal/timers.js";
import type { Clock, TargetSpec } from "../types.js";

/** What `stats().membership` reports. */
export interface MembershipStats {
  /** Router clock time of the last successful refresh, ms; `null` before the first. */
  lastRefreshAtMs: number | null;
  refreshes: number;
  /** Refreshes that failed (threw, timed out, returned no or invalid targets). */
  errors: number;
  lastError: string | null;
  /** Refreshes that changed the target set. */
  changes: number;
}


/** The `membership` router option. */
export interface MembershipOptions<T extends TargetSpec = TargetSpec> {
  /**
   * Returns the current targets. Called once by `createRouter` (which waits for it, at most
   * `timeoutMs`) and then every `intervalMs` in the background. Ids are the targets' rendezvous
   * identities: keep them stable (for DNS, `address:port`).
   */
  targets: () => readonly T[] | Promise<readonly T[]>;
  /** Time between two refreshes, ms. From 100 to 86,400,000. @default 10000 */
  intervalMs?: number;
  /** A refresh that has not answered after this long fails (the current set stays), ms. From 1 to 600,000. @default 5000 */
  timeoutMs?: number;
}

/** Defaults of {@link MembershipOptions}. */
export const DEFAULT_MEMBERSHIP = Object.freeze({ intervalMs: 10_000, timeoutMs: 5000 });

/** @internal Validated membership options. */
export interface MembershipConfig<T extends TargetSpec> {
  readonly targets: () => readonly T[] | Promise<readonly T[]>;
  readonly intervalMs: number;
  readonly timeoutMs: number;
  readonly timers: Timers;
}

/** @internal Every key of {@link MembershipOptions}. */
export const MEMBERSHIP_OPTION_KEYS = keysOf<MembershipOptions>()(["targets", "intervalMs", "timeoutMs"]);

/** @internal Validates `membership`. */
export function resolveMembership<T extends TargetSpec>(value: unknown): MembershipConfig<T> | undefined {
  if (value === undefined) return undefined;
  const o = optionObject("membership", value);
  checkKnownKeys("membership", o, MEMBERSHIP_OPTION_KEYS);
  return {
    targets: checkFunction("membership.targets", o["targets"]),
    intervalMs: optionInteger("membership.intervalMs", o["intervalMs"], DEFAULT_MEMBERSHIP.intervalMs, 100, 86_400_000),
    timeoutMs: optionInteger("membership.timeoutMs", o["timeoutMs"], DEFAULT_MEMBERSHIP.timeoutMs, 1, 600_000),
    timers: optionTimers("membership", o),
  };
}

/** What the loop needs of the router. */
export interface MembershipHost<T extends TargetSpec> {
  readonly clock: Clock;
  readonly logger: Logger;
  current(): readonly T[];
  /** Validates and applies a new set (throws on invalid targets). */
  apply(targets: readonly T[]): void;
}

/** @internal The refresh loop. */
export class MembershipLoop<T extends TargetSpec> {
  private readonly loop: Repeater;
  private closed = false;
  private readonly s: MembershipStats = { lastRefreshAtMs: null, refreshes: 0, errors: 0, lastError: null, changes: 0 };

  constructor(
    private readonly config: MembershipConfig<T>,
    private readonly host: MembershipHost<T>,
  ) {
    this.loop = new Repeater(config.timers, () => config.intervalMs, () => this.refresh());
  }

  /** One refresh; resolves to whether the set changed. Never rejects. */
  async refresh(): Promise<boolean> {
    let next: readonly T[];
    try {
      next = await this.callProvider();
      if (!Array.isArray(next)) throw new TypeError("Expected `membership.targets()` to return an array of targets");
      if (next.length === 0) throw new RouterError("ERR_NO_TARGETS", "`membership.targets()` returned no targets; keeping the current set");
      if (this.closed) return false;
      const current = this.host.current();
      const changed = !sameTargets(current, next);
      if (changed) this.host.apply(next);
      this.s.refreshes++;
      this.s.lastRefreshAtMs = this.host.clock.now();
      if (changed) {
        this.s.changes++;
        const before = new Set(current.map((t) => t.id));
        const after = new Set(next.map((t) => t.id));
        log(this.host.logger, "info", "prefix-router: membership changed", { event: "membership", added: [...after].filter((id) => !before.has(id)),
          removed: [...before].filter((id) => !after.has(id)),
          targets: next.length });
      }
      return changed;
    } catch (e) {
      this.s.errors++;
      this.s.lastError = redactText(e instanceof Error ? e.message : String(e));
      log(this.host.logger, "warn", "prefix-router: membership refresh failed; keeping the current targets", { event: "membership", error: this.s.lastError });
      return false;
    }
  }

  start(): void {
    this.loop.start();
  }

  stats(): MembershipStats {
    return { ...this.s };
  }

  close(): void {
    this.closed = true;
    this.loop.stop();
  }

  private callProvider(): Promise<readonly T[]> {
    const { timers, timeoutMs } = this.config;
    return new Promise<readonly T[]>((resolve, reject) => {
      const timer = timers.setTimeout(() => reject(new Error(`membership.targets() did not answer within ${timeoutMs} ms`)), timeoutMs);
      Promise.resolve()
        .then(() => this.config.targets())
        .then(resolve, reject)
        .finally(() => timers.clearTimeout(timer));
    });
  }
}

/** Same ids with the same fields (compared with Object.is), in any order. */
function sameTargets(a: readonly TargetSpec[], b: readonly TargetSpec[]): boolean {
  if (a.length !== b.length) return false;
  const byId = new Map(a.map((t) => [t.id, t]));
  for (const t of b) {
    const u = byId.get(t?.id);
    if (u === undefined) return false;
    const keys = Object.keys(t);
    if (keys.length !== Object.keys(u).length) return false;
    for (const k of keys) {
      const x = (t as unknown as Record<string, unknown>)[k];
      const y = (u as unknown as Record<string, unknown>)[k];
      if (!Object.is(x, y) && !(Array.isArray(x) && Array.isArray(y) && x.length === y.length && x.every((v, i) => Object.is(v, y[i])))) return false;
    }
  }
  return true;
}
