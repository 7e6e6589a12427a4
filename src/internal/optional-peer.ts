/**
 * Loads an optional peer dependency when a feature that needs it is turned on, with an error
 * that names the package and the command that installs it.
 */
import { RouterError } from "../errors.js";

/**
 * `importer()` (a literal `import("pkg")`, so bundlers see it), or `ERR_MISSING_DEPENDENCY`
 * when `name` is not installed. Other failures propagate.
 */
export async function importPeer<M>(name: string, feature: string, importer: () => Promise<M>): Promise<M> {
  try {
    return await importer();
  } catch (e) {
    const code = (e as { code?: unknown } | null)?.code;
    if ((code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") && String((e as Error).message).includes(name)) {
      throw new RouterError("ERR_MISSING_DEPENDENCY", `${feature} needs the optional package "${name}", which is not installed: npm install ${name}`, {
        cause: e,
      });
    }
    throw e;
  }
}
