/**
 * The built package as an application installs it, for tests that must not see this
 * repository's node_modules: a temporary directory (outside the repository, so nothing resolves
 * upward into it) holding a copy of the package (package.json + dist) in node_modules, beside
 * links to the packages the application itself declares and to the package's dependencies.
 */
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root. */
export const ROOT = fileURLToPath(new URL("../../", import.meta.url));

const built = (): boolean => existsSync(join(ROOT, "dist/index.d.ts")) && existsSync(join(ROOT, "dist/cli.js"));

/**
 * Builds dist/ when it is missing (a clean clone running `npm test`); CI builds first. Test files
 * run in parallel: the first takes a lock directory and builds, the others wait for it. A dist/
 * older than the sources is not detected: run `npm run build` after changing them.
 */
export async function ensureBuilt(): Promise<void> {
  if (built()) return;
  const lock = join(ROOT, ".tmp/build.lock");
  mkdirSync(dirname(lock), { recursive: true });
  try {
    mkdirSync(lock);
  } catch {
    while (existsSync(lock)) await new Promise((r) => setTimeout(r, 200));
    if (built()) return;
    throw new Error("Another test file's build of dist/ failed: run `npm run build`");
  }
  try {
    execFileSync("npm", ["run", "build"], { cwd: ROOT, stdio: "pipe" });
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** Creates the application directory; `files` are copied into it, `deps` linked from this repository's node_modules. */
export function installConsumer(files: Record<string, string>, deps: readonly string[]): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), "prefix-router-consumer-"));
  for (const [name, source] of Object.entries(files)) cpSync(source, join(dir, name));
  const pkg = join(dir, "node_modules/prefix-router");
  mkdirSync(pkg, { recursive: true });
  cpSync(join(ROOT, "package.json"), join(pkg, "package.json"));
  cpSync(join(ROOT, "dist"), join(pkg, "dist"), { recursive: true });
  const own = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { dependencies: Record<string, string> };
  for (const dep of [...deps, ...Object.keys(own.dependencies)]) {
    const link = join(dir, "node_modules", dep);
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(join(ROOT, "node_modules", dep), link, "dir");
  }
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
