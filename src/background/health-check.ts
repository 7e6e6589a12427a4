/**
 * Active health checks: poll each target's health path (vLLM and SGLang serve `GET /health`,
 * 200 when ready) and take a target out while it fails — the way passive ejection does, so a
 * target that fails its check is still picked when nothing else is left — and back once it
 * passes again. Beside passive ejection, not instead of it: a target can be ejected for failed
 * requests while its health check passes. Each target is checked on its own cadence (one that
 * hangs until `timeoutMs` delays only its own next check); a body is read up to `maxBodyBytes`.
 */
import { type Logger, log } from "../logger.js";
import { MAX_BODY_BYTES, optionHeaders, optionInteger, optionObject, optionString, optionTimers, targetURL } from "../internal/options.js";
import type { Timers } from "../internal/timers.js";
import { getText } from "../internal/http-get.js";
import { Poller } from "../internal/poller.js";
import { redactText, redactURL } from "../internal/redact.js";
import { checkKnownKeys, describe, keysOf } from "../internal/validate.js";
import type { TargetSpec } from "../types.js";

/** The `healthCheck` router option. */
export interface HealthCheckOptions<T extends TargetSpec = TargetSpec> {
  /**
   * The health URL of a target. Default: the target's `healthURL` field, else `path` at the
   * origin of its `baseURL` (`http://10.0.0.7:8000/v1` → `http://10.0.0.7:8000/health`). A
   * target with neither, or a URL with credentials, is a TypeError at `createRouter`/`setTargets`.
   */
  url?: (target: T) => string | URL;
  /** Path under the target's origin. @default "/health" */
  path?: string;
  /** Time between two checks of every target, ms. From 100 to 3,600,000. @default 5000 */
  intervalMs?: number;
  /** A check that has not ended after this long fails, ms. From 1 to 600,000. @default 2000 */
  timeoutMs?: number;
  /** A longer health body fails the check (not read further), bytes. From 1 to 2^30. @default 65536 */
  maxBodyBytes?: number;
  /** Consecutive failed checks that take a target out. From 1 to 100. @default 2 */
  failuresBeforeDown?: number;
  /** Consecutive passed checks that bring it back. From 1 to 100. @default 1 */
  successesBeforeUp?: number;
  /** Headers sent with every check. @default {} */
  headers?: Readonly<Record<string, string>>;
}

/** Defaults of {@link HealthCheckOptions}. */
export const DEFAULT_HEALTH_CHECK = Object.freeze({ path: "/health", intervalMs: 5000, timeoutMs: 2000, maxBodyBytes: 64 * 1024, failuresBeforeDown: 2, successesBeforeUp: 1 });

/** @internal Validated options. */
export interface HealthCheckConfig<T extends TargetSpec> {
  readonly url: (target: T) => string;
  readonly intervalMs: number;
  readonly timeoutMs: number;
  readonly maxBodyBytes: number;
  readonly failuresBeforeDown: number;
  readonly successesBeforeUp: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly timers: Timers;
}

/** @internal Every key of {@link HealthCheckOptions}. */
export const HEALTH_CHECK_OPTION_KEYS = keysOf<HealthCheckOptions>()([
  "url", "path", "intervalMs", "timeoutMs", "maxBodyBytes", "failuresBeforeDown", "successesBeforeUp", "headers",
]);

/** @internal Validates `healthCheck`. */
export function resolveHealthCheck<T extends TargetSpec>(value: unknown): HealthCheckConfig<T> | undefined {
  if (value === undefined || value === false) return undefined;
  const o = value === true ? {} : optionObject("healthCheck", value);
  checkKnownKeys("healthCheck", o, HEALTH_CHECK_OPTION_KEYS);
  const path = optionString("healthCheck.path", o["path"], DEFAULT_HEALTH_CHECK.path);
  if (!path.startsWith("/")) throw new RangeError(`Expected \`healthCheck.path\` to start with "/", got ${describe(path)}`);
  return {
    url: targetURL<T>("healthCheck.url", "healthURL", path, o["url"]),
    intervalMs: optionInteger("healthCheck.intervalMs", o["intervalMs"], DEFAULT_HEALTH_CHECK.intervalMs, 100, 3_600_000),
    timeoutMs: optionInteger("healthCheck.timeoutMs", o["timeoutMs"], DEFAULT_HEALTH_CHECK.timeoutMs, 1, 600_000),
    maxBodyBytes: optionInteger("healthCheck.maxBodyBytes", o["maxBodyBytes"], DEFAULT_HEALTH_CHECK.maxBodyBytes, 1, MAX_BODY_BYTES),
    failuresBeforeDown: optionInteger("healthCheck.failuresBeforeDown", o["failuresBeforeDown"], DEFAULT_HEALTH_CHECK.failuresBeforeDown, 1, 100),
    successesBeforeUp: optionInteger("healthCheck.successesBeforeUp", o["successesBeforeUp"], DEFAULT_HEALTH_CHECK.successesBeforeUp, 1, 100),
    headers: optionHeaders("healthCheck.headers", o["headers"]),
    timers: optionTimers("healthCheck", o),
  };
}

/** What the checker needs of the router. */
export interface HealthHost {
  readonly logger: Logger;
  /** Takes a target out (`failing`) or brings it back. */
  setFailing(id: string, failing: boolean): void;
}

interface Probe {
  id: string;
  url: string;
  failing: boolean;
  failures: number;
  successes: number;
}

/** @internal The check loop. */
export class HealthChecker<T extends TargetSpec> {
  private probes = new Map<string, Probe>();
  private readonly poller: Poller<Probe>;
  private closed = false;

  constructor(
    private readonly config: HealthCheckConfig<T>,
    private readonly host: HealthHost,
  ) {
    this.poller = new Poller(config.timers, config.intervalMs, () => this.probes.values(), (p, signal) => this.check(p, signal));
  }

  /** Throws a TypeError for a target without a health URL. */
  validate(targets: readonly T[]): void {
    for (const t of targets) this.config.url(t);
  }

  setTargets(targets: readonly T[]): void {
    const next = new Map<string, Probe>();
    for (const t of targets) {
      const url = this.config.url(t);
      const old = this.probes.get(t.id);
      next.set(t.id, old !== undefined && old.url === url ? old : { id: t.id, url, failing: false, failures: 0, successes: 0 });
    }
    this.probes = next;
  }

  /** Whether target `id` is taken out; `undefined` for an unknown id. */
  failing(id: string): boolean | undefined {
    return this.probes.get(id)?.failing;
  }

  /** Checks every target that has no check in flight, once; resolves when those ended. Never rejects. */
  checkAll(): Promise<void> {
    return this.poller.pollAll();
  }

  /** Checks every target now, then every `intervalMs`. */
  start(): void {
    if (this.closed) return;
    void this.poller.pollAll();
    this.poller.start();
  }

  /** Stops the loop and aborts the checks in flight (their connections closed). */
  async close(): Promise<void> {
    this.closed = true;
    await this.poller.close();
  }

  private async check(p: Probe, signal: AbortSignal): Promise<void> {
    let ok = false;
    let reason = "";
    try {
      const { status } = await getText(p.url, {
        headers: this.config.headers,
        timeoutMs: this.config.timeoutMs,
        maxBodyBytes: this.config.maxBodyBytes,
        maxBodyOption: "healthCheck.maxBodyBytes",
        timers: this.config.timers,
        signal,
      });
      ok = status >= 200 && status < 300;
      if (!ok) reason = `HTTP ${status}`;
    } catch (e) {
      reason = redactText(e instanceof Error ? e.message : String(e));
    }
    if (this.closed || this.probes.get(p.id) !== p) return;
    if (ok) {
      p.failures = 0;
      p.successes++;
      if (p.failing && p.successes >= this.config.successesBeforeUp) {
        p.failing = false;
        this.host.setFailing(p.id, false);
        log(this.host.logger, "info", "prefix-router: target passes its health check again", { event: "health-check", target: p.id });
      }
    } else {
      p.successes = 0;
      p.failures++;
      if (!p.failing && p.failures >= this.config.failuresBeforeDown) {
        p.failing = true;
        this.host.setFailing(p.id, true);
        log(this.host.logger, "warn", "prefix-router: target fails its health check; taken out", { event: "health-check", target: p.id, url: redactURL(p.url), reason });
      }
    }
  }
}
