#!/usr/bin/env node
/**
 * The `prefix-router` command line. Each subcommand lives next to its feature and is
 * registered in {@link COMMANDS}; `prefix-router <command> --help` prints its options.
 */

import { runDemoCommand } from "./demo/cli.js";
import { runBenchCommand } from "./bench/cli.js";
import { runAdviseCommand } from "./advise/cli.js";
import { runFleetCommand, type CliIo } from "./fleet/cli.js";

/** A subcommand: a one-line summary and a runner returning the exit code. */
interface Command {
  summary: string;
  run(argv: readonly string[], io: CliIo): Promise<number>;
}

/** The subcommands, by name. */
const COMMANDS: Record<string, Command> = {
  demo: { summary: "compare routing strategies live on an emulated 7-instance fleet", run: runDemoCommand },
  fleet: { summary: "start an emulated inference fleet on loopback", run: runFleetCommand },
  bench: { summary: "compare routing strategies on the virtual-time fleet", run: runBenchCommand },
  advise: { summary: "read a request log: reuse, prompt drift, the strategy and settings to use", run: runAdviseCommand },
};

function usage(): string {
  const names = Object.keys(COMMANDS);
  const width = Math.max(...names.map((n) => n.length));
  return [
    "Usage: prefix-router <command> [options]",
    "",
    "Commands:",
    ...names.map((n) => `  ${n.padEnd(width)}  ${COMMANDS[n]!.summary}`),
    "",
    "Run `prefix-router <command> --help` for a command's options.",
  ].join("\n");
}

const processIo: CliIo = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  untilStopped: () =>
    new Promise<void>((resolve) => {
      process.once("SIGINT", () => resolve());
      process.once("SIGTERM", () => resolve());
    }),
};

async function main(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    processIo.out(usage());
    return name === undefined ? 2 : 0;
  }
  const command = COMMANDS[name];
  if (command === undefined) {
    processIo.err(`prefix-router: unknown command \`${name}\``);
    processIo.err(usage());
    return 2;
  }
  return command.run(rest, processIo);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`prefix-router: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
