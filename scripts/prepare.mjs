/**
 * `prepare`: `npm install` (or `npm ci`) in a clone of the repository builds dist/, so the
 * library's entry points and the `prefix-router` CLI work at once. npm also runs `prepare` when it
 * fetches this folder as a package — `npx prefix-router` in the clone does — and inside `npm pack`
 * and `npm publish`: a dist/ newer than every source is not built again then (`prepack` builds
 * before a pack in any case).
 */
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

const SOURCES = ["src", "tools", "scripts", "package.json", "tsup.config.ts", "tsconfig.json"];

/** The newest modification time under `path`, ms. */
function newest(path) {
  const s = statSync(path);
  if (!s.isDirectory()) return s.mtimeMs;
  return Math.max(s.mtimeMs, ...readdirSync(path).map((name) => newest(join(path, name))));
}

const built = ["dist/index.js", "dist/cli.js"].every((f) => existsSync(f));
const fresh = built && statSync("dist/cli.js").mtimeMs >= Math.max(...SOURCES.filter((p) => existsSync(p)).map(newest));
if (fresh || (built && (process.env.npm_command === "pack" || process.env.npm_command === "publish"))) process.exit(0);
const r = spawnSync("npm", ["run", "build"], { stdio: "inherit", shell: process.platform === "win32" });
process.exit(r.status ?? 1);
