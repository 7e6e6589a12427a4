/**
 * Routing policies the benchmark compares. A {@link Policy} routes one request to a target id
 * and hands back a release function: prefix-router's own strategies plug in through
 * {@link routerPolicy}, and peer baselines (a hard-pinning LiteLLM-style router, KubeAI's
 * bounded-load consistent hashing, SGLang's cache-aware tree, in baselines.ts) implement the same
 * interface without touching the simulation loop. registry.ts finds them all by name.
 *
 * Policies must be deterministic given their {@link PolicyContext}: randomness only from
 * `context.random`, time only from `context.clock`.
 */
import { type StrategyVariant, VARIANT_NAMES, strategyOptions } from "./variants.js";
import type { BenchRequest } from "./workload.js";
import { STRATEGIES, createRouter, type Lease, type LoadView, type RouterOptions, type RouterStats } from "prefix-router";
import type { KvEventHub } from "./kv-feed.js";
import type { Strategy } from "../common/strategy.js";

/** One routing decision of a {@link Policy}. */
export interface PolicyDecision {
  /** The instance the request goes to. */
  readonly targetId: string;
  /**
   * True when the pick was not the policy's first choice for the request's key (spillover or
   * fallback under load). Load-based policies with no preference never spill.
   */
  readonly spilled: boolean;
  /**
   * The request's first token came out (its prefill is done), as a streaming client sees it;
   * called at most once, before `release`. Optional: policies that do not track queued work
   * leave it out.
   */
  firstToken?(): void;
  /**
   * Ends the request's in-flight accounting; called exactly once, when the request finishes
   * (or is rejected), with the engine's token counts when it ran.
   */
  release(info?: { promptTokens: number; cachedTokens: number }): void;
  /**
   * The instance refused the request (it is down, restarting): ends this decision as a failed
   * connection and returns the decision for the next attempt, on another instance. Optional:
   * a policy without it cannot be run with restarts that have downtime.
   */
  refused?(): PolicyDecision;
}

/** A routing policy under test. */
export interface Policy {
  /** Picks a target for `request`. Synchronous: the benchmark times this call. */
  route(request: BenchRequest): PolicyDecision;
  /** Replaces the set of instances (scale events). Requests in flight still release. */
  setTargets(targetIds: readonly string[]): void;
  /** The router's stats at the end of the run (prefix-router's policies only). */
  stats?(): RouterStats;
}

/** A shadow strategy run beside a router policy (`--shadow`), and what its state follows. */
export interface ShadowSetting {
  readonly strategy: Strategy;
  readonly placement: "own" | "live";
}

/** What a policy is created with. */
export interface PolicyContext {
  /** Instance ids at the start of the run. */
  readonly targets: readonly string[];
  /** Characters of prompt text the routing key covers (policies that read a prefix). */
  readonly prefixLength: number;
  /** In-flight requests at which an instance counts as full (policies with a load guard). */
  readonly concurrencyThreshold: number;
  /** The run's seed (hash seeds and the like). */
  readonly seed: number;
  /** The run's seeded random source in [0, 1). */
  readonly random: () => number;
  /** Simulated time, ms. */
  readonly clock: { now(): number };
  /** This process's shared load view (`--load-view engine|redis`); absent: the local view. */
  readonly loadView?: LoadView;
  /** A shadow strategy for prefix-router's policies (`--shadow`); others ignore it. */
  readonly shadow?: ShadowSetting;
  /** The fleet's KV events after their modelled lag, for policies that read them ({@link PolicyFactory.usesKvEvents}). */
  readonly kvEvents?: KvEventHub;
}

/** A named policy constructor. */
export interface PolicyFactory {
  /** Name on the command line and in result rows. */
  readonly name: string;
  /** Whether results depend on `prefixLength` (otherwise one row per run, `prefixLength: null`). */
  readonly usesPrefixLength: boolean;
  /** Whether results depend on `concurrencyThreshold` (otherwise `concurrencyThreshold: null`). */
  readonly usesConcurrencyThreshold: boolean;
  /** Whether the policy reads {@link PolicyContext.loadView} (otherwise it runs with the local view only). */
  readonly usesLoadView?: boolean;
  /** Whether the policy runs a shadow strategy when asked (prefix-router's own). */
  readonly usesShadow?: boolean;
  /** Whether the policy reads the engines' KV events: its fleet publishes them, and {@link PolicyContext.kvEvents} delivers them. */
  readonly usesKvEvents?: boolean;
  /** Builds a fresh policy for one run. */
  create(context: PolicyContext): Promise<Policy>;
}

/**
 * A policy backed by prefix-router's `createRouter` with the given strategy (or named variant,
 * e.g. `longest-prefix:exclusive`), in text mode, with the simulated clock and the run's random
 * source injected.
 *
 * @example
 * const factories = [routerPolicy("random"), routerPolicy("prefix-aware")];
 */
export function routerPolicy(name: Strategy | StrategyVariant): PolicyFactory {
  return routerPolicyWith(name, strategyOptions(name));
}

/**
 * {@link routerPolicy} with router options of its own, some read from the run's context
 * (`precise-prefix`'s tokenizer and feed).
 * @internal
 */
export function routerPolicyWith(name: string, options: Pick<RouterOptions, "strategy" | "longestPrefix" | "closedLoop" | "prefixAware" | "keyScope">, extra?: (ctx: PolicyContext) => Partial<RouterOptions>, usesKvEvents = false): PolicyFactory {
  const strategy = options.strategy as Strategy;
  // `longest-prefix` matches blocks over the whole input: it has a load guard but no prefix length.
  const loadBased = strategy === "random" || strategy === "least-outstanding";
  return {
    name,
    usesPrefixLength: !loadBased && strategy !== "longest-prefix" && name !== PRECISE,
    usesConcurrencyThreshold: !loadBased,
    usesLoadView: strategy !== "random",
    usesShadow: true,
    ...(usesKvEvents && { usesKvEvents }),
    async create(ctx) {
      const router = await createRouter({
        targets: ctx.targets.map((id) => ({ id })),
        ...options,
        mode: "text",
        prefixLength: ctx.prefixLength,
        concurrencyThreshold: ctx.concurrencyThreshold,
        seed: ctx.seed,
        random: ctx.random,
        clock: ctx.clock,
        ejection: false,
        ...(ctx.loadView && { loadView: ctx.loadView }),
        ...(ctx.shadow && { shadow: ctx.shadow.strategy, shadowPlacement: ctx.shadow.placement }),
        ...extra?.(ctx),
      });
      return {
        route(request) {
          // Read once, as the adapters do: a refused attempt is routed again, excluding the targets tried.
          const prepared = router.prepare(request.tenant === undefined ? { body: request.body } : { body: request.body, tenant: request.tenant });
          const tried = new Set<string>();
          const decide = (lease: Lease): PolicyDecision => ({
            targetId: lease.target.id,
            spilled: lease.kind === "spillover" || lease.kind === "fallback",
            firstToken() {
              lease.firstByte();
            },
            release(info) {
              lease.release("success", info);
            },
            refused() {
              lease.release("connect-error");
              tried.add(lease.target.id);
              return decide(router.route(prepared, { exclude: tried, attempt: tried.size + 1 }));
            },
          });
          return decide(router.route(prepared));
        },
        setTargets(ids) {
          router.setTargets(ids.map((id) => ({ id })));
        },
        stats: () => router.stats(),
      };
    },
  };
}

const PRECISE = "precise-prefix";

/** prefix-router's strategies, in the order the benchmark lists them. */
export const ROUTER_STRATEGIES: readonly Strategy[] = STRATEGIES;

/**
 * Non-default configurations of prefix-router's strategies that the benchmark runs as rows of
 * their own: `longest-prefix:exclusive` is `longest-prefix` with `exclusive: true` (the setting
 * for a router that sees all of its fleet's traffic).
 */
export const ROUTER_VARIANTS: readonly PolicyFactory[] = VARIANT_NAMES.map((name) => routerPolicy(name));
