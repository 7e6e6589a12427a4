/**
 * Optional peer dependencies, loaded when a feature needs them: a missing one becomes a typed
 * error that names the package and the command that installs it, never a module-resolution
 * stack trace.
 */
import { RouterError } from "../errors.js";

/** True when `error` says that package `name` itself is not installed (not one of its own imports). */
export function isMissingPackage(error: unknown, name: string): boolean {
  if (error === null || typeof error !== "object") return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND") return false;
  return typeof message === "string" && (message.includes(`'${name}'`) || message.includes(`"${name}"`));
}

/**
 * Loads optional peer `name` through `load` (a literal `import()`, so that bundlers see it).
 * @param what - what needs it, for the message: "The demo"
 * @throws RouterError `ERR_MISSING_PEER` when the package is not installed
 */
export async function importPeer<M>(name: string, what: string, load: () => Promise<M>): Promise<M> {
  try {
    return await load();
  } catch (error) {
    if (isMissingPackage(error, name)) {
      throw new RouterError("ERR_MISSING_PEER", `${what} needs the optional package \`${name}\`, which is not installed: npm install ${name}`, {
        cause: error,
      });
    }
    throw error;
  }
}
