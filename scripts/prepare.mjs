/**
 * `prepare`: `npm install` (or `npm ci`) in a clone of the repository builds dist/, so the
 * library's entry points and the `prefix-router` CLI work at once. `npm pack` and `npm publish`
 * also run `prepare`, right after `prepack`, which has just built: no second build then.
 */
import { spawnSync } from "node:child_process";

if (process.env.npm_command === "pack" || process.env.npm_command === "publish") process.exit(0);
const r = spawnSync("npm", ["run", "build"], { stdio: "inherit", shell: process.platform === "win32" });
process.exit(r.status ?? 1);
