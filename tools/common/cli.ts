/**
 * Command-line parsing the tools share: `node:util` parseArgs in strict mode with typed errors,
 * lists, numbers, durations and token counts.
 */
import { type ParseArgsConfig, parseArgs } from "node:util";
import { BenchError } from "./errors.js";

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * Parses a duration: one or more `<number><unit>` parts, units `ms`, `s`, `m`, `h`.
 * @example parseDuration("1h30m", "--duration") // 5_400_000
 */
export function parseDuration(text: string, option: string): number {
  const s = text.trim();
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/y;
  let total = 0;
  let i = 0;
  while (i < s.length) {
    re.lastIndex = i;
    const m = re.exec(s);
    if (m === null) break;
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
    i = re.lastIndex;
  }
  if (s.length === 0 || i !== s.length) {
    throw new BenchError("ERR_BENCH_OPTION", `Expected \`${option}\` to be a duration like 90s, 30m, 1h or 1h30m, got "${text}"`);
  }
  return total;
}

/**
 * Parses a token count with an optional `k` (×1,000) or `M` (×1,000,000) suffix.
 * @example parseTokenCount("1.2M", "--capacity") // 1_200_000
 */
export function parseTokenCount(text: string, option: string): number {
  const m = /^(\d+(?:\.\d+)?)([kKmM]?)$/.exec(text.trim());
  const v = m === null ? Number.NaN : Number(m[1]) * (m[2] === "" ? 1 : m[2]!.toLowerCase() === "k" ? 1e3 : 1e6);
  if (!Number.isFinite(v) || !Number.isInteger(Math.round(v)) || v <= 0) {
    throw new BenchError("ERR_BENCH_OPTION", `Expected \`${option}\` to be a token count like 1200000, 600k or 1.2M, got "${text}"`);
  }
  return Math.round(v);
}

/** Splits repeated and comma-separated values: `["1,2", "3"]` → `["1", "2", "3"]`. */
export function splitList(values: readonly string[] | undefined): string[] | undefined {
  if (values === undefined) return undefined;
  return values.flatMap((v) => v.split(",")).map((v) => v.trim()).filter((v) => v.length > 0);
}

/** Parses a list of numbers; `integer` rejects fractions. */
export function parseNumbers(values: readonly string[] | undefined, option: string, integer: boolean): number[] | undefined {
  const list = splitList(values);
  if (list === undefined) return undefined;
  return list.map((v) => {
    const n = Number(v);
    if (v === "" || !Number.isFinite(n) || (integer && !Number.isInteger(n))) {
      throw new BenchError("ERR_BENCH_OPTION", `Expected \`${option}\` to hold ${integer ? "integers" : "numbers"}, got "${v}"`);
    }
    return n;
  });
}

/** The values and positionals of a command line, as `node:util` `parseArgs` gives them. */
export interface CommandLine {
  readonly values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  readonly positionals: readonly string[];
}

/**
 * `node:util` `parseArgs` in strict mode, its errors turned into {@link BenchError}s.
 * @throws {BenchError} `ERR_BENCH_OPTION` for an unknown option or a missing value
 */
export function parseCommandLine(argv: readonly string[], allowPositionals: boolean, options: NonNullable<ParseArgsConfig["options"]>): CommandLine {
  try {
    const { values, positionals } = parseArgs({ args: [...argv], strict: true, allowPositionals, options });
    return { values: values as CommandLine["values"], positionals };
  } catch (e) {
    throw new BenchError("ERR_BENCH_OPTION", (e as Error).message, { cause: e });
  }
}
