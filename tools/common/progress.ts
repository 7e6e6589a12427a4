/** The progress bar the tools show on stderr during long runs (optional package `cli-progress`). */
import { isBenchError } from "./errors.js";
import { importOptional } from "./optional.js";

/** Where a tool writes its notes. */
export interface ProgressIo {
  err(line: string): void;
}

/** How far a run is. */
export interface Progress {
  /** Done, from 0 to 1. */
  readonly fraction: number;
  /** 0-based index of the current run. */
  readonly run: number;
  /** Number of runs. */
  readonly runs: number;
  /** What the current run is, e.g. `workload/strategy`. */
  readonly label: string;
}

/**
 * A progress bar on stderr that appears only once the run has lasted two seconds (`undefined`
 * without cli-progress, with a note naming `command`).
 */
export async function progressBar(io: ProgressIo, command: string): Promise<{ update: (p: Progress) => void; stop: () => void } | undefined> {
  let mod: typeof import("cli-progress");
  try {
    mod = await importOptional("cli-progress", () => import("cli-progress"));
  } catch (e) {
    if (isBenchError(e)) {
      io.err(`prefix-router ${command}: no progress bar (${e.message})`);
      return undefined;
    }
    throw e;
  }
  const cp = (mod as unknown as { default?: typeof import("cli-progress") }).default ?? mod;
  const started = performance.now();
  let bar: InstanceType<typeof cp.SingleBar> | undefined;
  return {
    update(p) {
      const value = Math.round(p.fraction * 1000);
      if (bar === undefined) {
        if (performance.now() - started < 2000) return;
        bar = new cp.SingleBar(
          { format: "{bar} {percentage}% | run {run}/{runs} {label} | ETA {eta_formatted}", stream: process.stderr, hideCursor: true },
          cp.Presets.shades_classic,
        );
        bar.start(1000, value, { run: p.run + 1, runs: p.runs, label: p.label });
        return;
      }
      bar.update(value, { run: Math.min(p.run + 1, p.runs), runs: p.runs, label: p.label });
    },
    stop() {
      bar?.stop();
    },
  };
}
