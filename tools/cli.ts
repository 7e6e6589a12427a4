#!/usr/bin/env node
/**
 * The `prefix-router` command line. Each subcommand lives next to its feature and is
 * registered in {@link COMMANDS}; `prefix-router <command> --help` prints its options.
 */

import { createRequire } from "node:module";
import { runDemoCommand } from "./demo/cli.js";
import { runBenchCommand } from "./bench/cli.js";
import { runAdviseCommand } from "./advise/cli.js";
import { isBenchError } from "./common/errors.js";
import { isFleetError } from "./fleet/errors.js";
import { runFleetCommand, type CliIo } from "./fleet/cli.js";
import { isRouterError } from "prefix-router";

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
    "Run `prefix-router <command> --help` for a command's options, `prefix-router --version` for the version.",
  ].join("\n");
}

/** The installed package's version: package.json is one directory up from tools/cli.ts and from dist/cli.js. */
function version(): string {
  return (createRequire(import.meta.url)("../package.json") as { version: string }).version;
}

/**
 * One line for a failure the user can act on (a typed error, a bad option): its message. Anything
 * else is a bug: its stack.
 */
function describeFailure(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  const expected =
    isRouterError(err) || isBenchError(err) || isFleetError(err) || err instanceof RangeError || (typeof code === "string" && code.startsWith("ERR_PARSE_ARGS"));
  return expected ? err.message : (err.stack ?? err.message);
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
  if (name === "--version" || name === "-v") {
    processIo.out(version());
    return 0;
  }
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
    process.stderr.write(`prefix-router: ${describeFailure(err)}\n`);
    process.exitCode = 1;
  },
);
