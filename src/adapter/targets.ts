/**
 * Checks of the fields an adapter adds to its targets (a base URL, an endpoint name, …). The
 * list itself and the fields every target has (`id`, `weight`, `models`) are the router's to
 * check, with the router's messages.
 */
import { validateTargets } from "../options.js";
import type { TargetSpec } from "../types.js";

/**
 * Runs `check` on each target of `targets` that is an object; `check` throws an error naming
 * `targets[i].<field>`. A list that is no array fails with the router's own message; an entry
 * that is no object is left to the router to name.
 */
export function checkTargetFields<T extends TargetSpec>(targets: unknown, check: (target: Partial<T>, index: number) => void): void {
  if (!Array.isArray(targets)) validateTargets(targets);
  (targets as unknown[]).forEach((target, index) => {
    if (target !== null && typeof target === "object") check(target as Partial<T>, index);
  });
}
