/**
 * The built-in workloads, by name: single-turn (`long-context`, `rag`, `hot-prefix`, `short-prompts`, in
 * workloads-single-turn.ts) and sessions (`sharegpt`, `agent`, in workloads-sessions.ts).
 */
import type { Workload } from "./workload.js";
import { agentWorkload, sharegptWorkload } from "./workloads-sessions.js";
import { hotPrefixWorkload, longContextWorkload, ragWorkload, shortPromptsWorkload } from "./workloads-single-turn.js";
import { multiTenantWorkload } from "./workloads-tenants.js";

/** Names of the built-in workloads, in the order the default run uses. */
export const WORKLOAD_NAMES = ["long-context", "sharegpt", "rag", "agent", "hot-prefix", "multi-tenant", "multi-tenant:isolated", "short-prompts"] as const;

/** A built-in workload name. */
export type WorkloadName = (typeof WORKLOAD_NAMES)[number];

/** The built-in workload `name` with default parameters. */
export function builtinWorkload(name: WorkloadName): Workload {
  switch (name) {
    case "long-context":
      return longContextWorkload();
    case "sharegpt":
      return sharegptWorkload();
    case "rag":
      return ragWorkload();
    case "agent":
      return agentWorkload();
    case "hot-prefix":
      return hotPrefixWorkload();
    case "multi-tenant":
      return multiTenantWorkload();
    case "multi-tenant:isolated":
      return multiTenantWorkload({ isolation: "tenant" });
    case "short-prompts":
      return shortPromptsWorkload();
  }
}
