/**
 * The fault flags of `prefix-router fleet`: injected errors, degraded replicas and replicas
 * killed at a given time, parsed into a plan and applied to a running fleet. Error draws come
 * from each instance's seeded random source, so `--seed` reproduces which requests fail.
 */
import { FleetError } from "./errors.js";
import type { FaultKnobs } from "./faults.js";
import type { LiveFleet } from "./live.js";

/** Help lines of the fault flags, for the command's usage text. */
export const FAULT_USAGE = `Faults (repeatable; <id> is an instance id such as i2):
  --error-rate <x>|<id>=<x> fraction of requests (0..1) answered at once with --error-status, on every instance or one
  --error-status <code>     status of injected errors: 500 or 503 (default 500)
  --slow <id>=<factor>      a degraded instance: its step times multiplied by factor (> 0)
  --kill <id>@<s>[-<s>]     take an instance down (connections refused) <s> seconds after start, back up at the second time`;

/** The option declarations of the fault flags, for `parseArgs`. */
export const FAULT_OPTIONS = {
  "error-rate": { type: "string", multiple: true },
  "error-status": { type: "string" },
  slow: { type: "string", multiple: true },
  kill: { type: "string", multiple: true },
} as const;

/** A kill: instance down from `atS` seconds after start, up again at `untilS` if given. */
interface Kill {
  id: string;
  atS: number;
  untilS: number | undefined;
}

/** What the fault flags ask for. */
export interface FaultPlan {
  /** Knobs set at start, per instance id; `"*"` for every instance. */
  knobs: Map<string, Partial<FaultKnobs>>;
  kills: Kill[];
}

function fail(message: string): never {
  throw new FleetError("INVALID_ARGUMENT", message);
}

function numberIn(flag: string, text: string, min: number, max: number, minOpen = false): number {
  const n = Number(text);
  if (text.trim() === "" || !Number.isFinite(n) || (minOpen ? n <= min : n < min) || n > max) {
    fail(`--${flag} expects a number ${minOpen ? ">" : "from"} ${min}${max === Infinity ? "" : ` to ${max}`}, got ${JSON.stringify(text)}`);
  }
  return n;
}

/** Parses the fault flags (values from `parseArgs` with {@link FAULT_OPTIONS}). */
export function parseFaults(values: { "error-rate"?: string[]; "error-status"?: string; slow?: string[]; kill?: string[] }): FaultPlan {
  const knobs = new Map<string, Partial<FaultKnobs>>();
  const set = (id: string, patch: Partial<FaultKnobs>): void => void knobs.set(id, { ...knobs.get(id), ...patch });
  for (const spec of values["error-rate"] ?? []) {
    const eq = spec.indexOf("=");
    set(eq === -1 ? "*" : spec.slice(0, eq), { errorRate: numberIn("error-rate", spec.slice(eq + 1), 0, 1) });
  }
  if (values["error-status"] !== undefined) {
    const status = values["error-status"];
    if (status !== "500" && status !== "503") fail(`--error-status expects 500 or 503, got ${JSON.stringify(status)}`);
    set("*", { errorStatus: Number(status) as 500 | 503 });
  }
  for (const spec of values.slow ?? []) {
    const eq = spec.indexOf("=");
    if (eq <= 0) fail(`--slow expects <id>=<factor>, got ${JSON.stringify(spec)}`);
    set(spec.slice(0, eq), { slowdown: numberIn("slow", spec.slice(eq + 1), 0, Infinity, true) });
  }
  const kills = (values.kill ?? []).map((spec): Kill => {
    const m = /^([^@]+)@([^-]+)(?:-(.+))?$/.exec(spec);
    if (m === null) fail(`--kill expects <id>@<seconds>[-<seconds>], got ${JSON.stringify(spec)}`);
    const atS = numberIn("kill", m[2]!, 0, Infinity);
    const untilS = m[3] === undefined ? undefined : numberIn("kill", m[3], atS, Infinity, true);
    return { id: m[1]!, atS, untilS };
  });
  return { knobs, kills };
}

/**
 * Applies `plan` to `fleet`: knobs now, kills on timers. Unknown instance ids are errors.
 * Returns a function that cancels the timers not yet fired.
 */
export async function applyFaultPlan(fleet: LiveFleet, plan: FaultPlan, log: (line: string) => void): Promise<() => void> {
  const ids = new Set(fleet.instances.map((i) => i.id));
  for (const id of [...plan.knobs.keys(), ...plan.kills.map((k) => k.id)]) {
    if (id !== "*" && !ids.has(id)) fail(`No instance \`${id}\` (the fleet has ${[...ids].join(", ")})`);
  }
  const everyone = plan.knobs.get("*") ?? {};
  for (const inst of fleet.instances) {
    const patch = { ...everyone, ...plan.knobs.get(inst.id) };
    if (Object.keys(patch).length > 0) await inst.setFaults(patch);
  }
  const timers: NodeJS.Timeout[] = [];
  const at = (seconds: number, run: () => Promise<void>): void => {
    timers.push(setTimeout(() => void run().catch((e: unknown) => log(`fault: ${e instanceof Error ? e.message : String(e)}`)), seconds * 1000));
  };
  for (const kill of plan.kills) {
    const inst = fleet.instance(kill.id);
    at(kill.atS, async () => {
      await inst.setFaults({ down: true });
      log(`${kill.id} down`);
    });
    if (kill.untilS !== undefined) {
      at(kill.untilS, async () => {
        await inst.setFaults({ down: false });
        log(`${kill.id} up`);
      });
    }
  }
  return () => {
    for (const t of timers) clearTimeout(t);
  };
}
