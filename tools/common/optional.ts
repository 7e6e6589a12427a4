/**
 * Optional packages of the tools (charts, progress bar, the OpenAI client of the demo), loaded when
 * an output needs them: a missing one is a typed error naming it and its install command.
 */
import { BenchError } from "./errors.js";

/** True when `error` says that package `name` itself is not installed (not one of its own imports). */
export function isMissingPackage(error: unknown, name: string): boolean {
  if (error === null || typeof error !== "object") return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND") return false;
  return typeof message === "string" && (message.includes(`'${name}'`) || message.includes(`"${name}"`));
}

/**
 * Loads optional package `name` through `load` (a literal `import()`, so that bundlers see it).
 * @param what - what needs it, for the message
 * @throws {BenchError} `ERR_MISSING_PACKAGE` when the package is not installed
 */
export async function importOptional<M>(name: string, load: () => Promise<M>, what = "This output"): Promise<M> {
  try {
    return await load();
  } catch (e) {
    if (isMissingPackage(e, name)) {
      throw new BenchError("ERR_MISSING_PACKAGE", `${what} needs the optional package \`${name}\`, which is not installed: npm install ${name}`, { cause: e });
    }
    throw e;
  }
}
