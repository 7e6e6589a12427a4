/**
 * What a router runs in the background, beside its decisions: the shared load view, membership
 * refreshes and active health checks — each optional, each stopped by `router.close()`. The
 * router calls the hooks below; none of them waits on the network.
 */
import { type HealthCheckConfig, HealthChecker, resolveHealthCheck } from "./health-check.js";
import type { Logger } from "../logger.js";
import { type LoadViewConfig, resolveLoadView } from "../load-view/options.js";
import { createLoadView } from "../load-view/create.js";
import { LoadReader, type LoadView, type LoadViewStats } from "../load-view/view.js";
import { type MembershipConfig, MembershipLoop, type MembershipStats, resolveMembership } from "./membership.js";
import type { Commitment } from "../strategies/strategy.js";
import type { Clock, TargetSpec } from "../types.js";

/** @internal Validated background options. */
export interface BackgroundConfig<T extends TargetSpec> {
  readonly loadView: LoadViewConfig<T> | undefined;
  readonly membership: MembershipConfig<T> | undefined;
  readonly healthCheck: HealthCheckConfig<T> | undefined;
}

/** @internal Validates `loadView`, `membership` and `healthCheck`. */
export function resolveBackground<T extends TargetSpec>(o: { loadView?: unknown; membership?: unknown; healthCheck?: unknown }): BackgroundConfig<T> {
  return {
    loadView: resolveLoadView<T>(o.loadView),
    membership: resolveMembership<T>(o.membership),
    healthCheck: resolveHealthCheck<T>(o.healthCheck),
  };
}

/** What the background needs of its router. */
export interface BackgroundHost<T extends TargetSpec> {
  targets(): readonly T[];
  setTargets(targets: readonly T[]): void;
  setFailing(id: string, failing: boolean): void;
}

/** The router's settings the background reads, and its health hook. */
export interface BackgroundSettings<T extends TargetSpec> extends Pick<BackgroundHost<T>, "setFailing"> {
  readonly concurrencyThreshold: number;
  readonly logger: Logger;
  readonly random: () => number;
}

/** @internal One router's background work. */
export class Background<T extends TargetSpec> {
  /** The router's reader of the load view; `undefined` with the local view. */
  readonly reader: LoadReader | undefined;
  private membership: MembershipLoop<T> | undefined;
  private readonly health: HealthChecker<T> | undefined;
  private closed = false;
  private readonly logger: Logger;

  private constructor(
    private readonly config: BackgroundConfig<T>,
    private readonly clock: Clock,
    private readonly view: LoadView<T> | undefined,
    host: BackgroundSettings<T>,
  ) {
    this.logger = host.logger;
    this.reader = view === undefined ? undefined : new LoadReader(view as unknown as LoadView<never>, host.concurrencyThreshold, host.random);
    this.health = config.healthCheck === undefined ? undefined : new HealthChecker(config.healthCheck, { logger: host.logger, setFailing: host.setFailing });
  }

  /** Builds the load view (loading its optional package) and the health checker; starts nothing. */
  static async create<T extends TargetSpec>(config: BackgroundConfig<T>, clock: Clock, host: BackgroundSettings<T>): Promise<Background<T>> {
    const view = config.loadView === undefined ? undefined : await createLoadView(config.loadView, { clock, logger: host.logger });
    return new Background(config, clock, view, host);
  }

  /** Throws a TypeError for targets a background feature cannot use (no metrics or health URL). */
  validate(targets: readonly T[]): void {
    (this.view as { validate?: (t: readonly T[]) => void } | undefined)?.validate?.(targets);
    this.health?.validate(targets);
  }

  /** The target set changed. */
  install(targets: readonly T[]): void {
    this.reader?.align(targets.map((t) => t.id));
    this.view?.setTargets(targets);
    this.health?.setTargets(targets);
  }

  /** The health state of a target id (kept across target-set changes). */
  failing(id: string): boolean {
    return this.health?.failing(id) ?? false;
  }

  acquired(id: string): void {
    this.view?.acquire(id);
  }

  /**
   * A pick queued `work` (and `workTokens`) on target `id`: counted in the shared view until the
   * response's first byte or the lease's release, whichever comes first (the strategy's
   * commitment, wrapped).
   */
  queued(id: string, work: number | undefined, workTokens: number | undefined, commitment: Commitment | undefined): Commitment | undefined {
    const view = this.view;
    if (view === undefined) return commitment;
    const w = view.addWork !== undefined && work !== undefined && work > 0 ? work : 0;
    const t = view.addWorkTokens !== undefined && workTokens !== undefined && workTokens > 0 ? workTokens : 0;
    if (w === 0 && t === 0) return commitment;
    if (w > 0) view.addWork!(id, w);
    if (t > 0) view.addWorkTokens!(id, t);
    let open = true;
    const done = (): void => {
      if (!open) return;
      open = false;
      if (w > 0) view.addWork!(id, -w);
      if (t > 0) view.addWorkTokens!(id, -t);
    };
    return {
      firstByte() {
        commitment?.firstByte?.();
        done();
      },
      release(outcome, sawFirstByte, info) {
        // The usage the server reported goes on: the strategy's closed loop judges its prediction by it.
        commitment?.release?.(outcome, sawFirstByte, info);
        done();
      },
    };
  }

  released(id: string): void {
    this.view?.release(id);
  }

  /**
   * Starts the loops: the load view's first figures and membership's first refresh are awaited
   * (each bounded by its timeout), then every loop runs on its own timers.
   */
  async start(host: BackgroundHost<T>): Promise<void> {
    const m = this.config.membership;
    if (m !== undefined) {
      this.membership = new MembershipLoop(m, {
        clock: this.clock,
        logger: this.logger,
        current: () => host.targets(),
        apply: (targets) => host.setTargets(targets),
      });
      await this.membership.refresh();
      this.membership.start();
    }
    // The first figures, so that the first decisions see other routers' load (bounded by the
    // view's own timeout; a source that is down leaves the router on its local view).
    await this.view?.ready?.();
    this.health?.start();
  }

  stats(): { loadView?: LoadViewStats; membership?: MembershipStats } {
    const out: { loadView?: LoadViewStats; membership?: MembershipStats } = {};
    if (this.view !== undefined) out.loadView = this.view.stats();
    if (this.membership !== undefined) out.membership = this.membership.stats();
    return out;
  }

  /**
   * Stops every loop, aborts the health checks and scrapes in flight (closing their connections)
   * and closes the load view: nothing of the background keeps the process alive. Idempotent.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.membership?.close();
    await Promise.all([this.health?.close(), this.view?.close()]);
  }
}
