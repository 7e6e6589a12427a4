/**
 * Every policy the benchmark can run, found by name: prefix-router's strategies, their named
 * variants (`longest-prefix:exclusive`) and the peer baselines (`peer:*`). The simulation loop
 * knows only the {@link PolicyFactory} interface; this file knows the list.
 */
import { PEER_BASELINES } from "./baselines.js";
import { ROUTER_VARIANTS, type PolicyFactory, routerPolicy } from "./policies.js";
import { isVariant } from "./variants.js";
import { PRECISE_PREFIX, precisePolicy } from "./precise.js";
import { STRATEGIES } from "prefix-router";
import type { Strategy } from "../common/strategy.js";

/**
 * Every policy name the benchmark runs by default: prefix-router's strategies, their variants,
 * then the peer baselines (`peer:*`, see baselines.ts).
 */
// `precise-prefix` runs when named (`--strategies …,precise-prefix`): it reads the fleet's KV events.
export const BENCH_STRATEGIES: readonly string[] = [...STRATEGIES.filter((s) => s !== "precise-prefix"), ...ROUTER_VARIANTS.map((p) => p.name), ...PEER_BASELINES.map((p) => p.name)];

/** Policies run only when named: `precise-prefix` (its fleet publishes KV events; see precise.ts). */
export const NAMED_ONLY_POLICIES: readonly string[] = [PRECISE_PREFIX];

/**
 * The policy named `name`: one of prefix-router's strategies or a peer baseline (`peer:*`).
 * @returns `undefined` for an unknown name
 */
export function policyByName(name: string): PolicyFactory | undefined {
  if (isVariant(name)) return routerPolicy(name);
  if (name === PRECISE_PREFIX) return precisePolicy();
  if ((STRATEGIES as readonly string[]).includes(name)) return routerPolicy(name as Strategy);
  return PEER_BASELINES.find((p) => p.name === name);
}
