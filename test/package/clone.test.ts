/**
 * A clone builds itself: `npm pack` in a checkout without dist/ (the repository's tracked files
 * only, as a fresh clone has them) builds first (`prepack`) and packs the library, its
 * declarations and the CLI — never an empty package; the built CLI answers `--version`.
 * `prepare` (run by `npm install` in a clone) builds too, unless dist/ is newer than every
 * source: npm also runs it when `npx prefix-router` fetches the clone as a package, and inside
 * `npm pack` after `prepack` has built.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, normalize } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT } from "./install.js";

const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  version: string;
  bin: Record<string, string>;
  exports: Record<string, unknown>;
  scripts: Record<string, string>;
};

/** Every path an `exports` value names. */
function exportTargets(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (value !== null && typeof value === "object") return Object.values(value).flatMap(exportTargets);
  return [];
}

const dir = mkdtempSync(join(tmpdir(), "prefix-router-clone-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The tracked files, copied as a clone has them, and the repository's node_modules linked. */
function checkout(): void {
  const files = execFileSync("git", ["ls-files", "-z"], { cwd: ROOT, encoding: "utf8" }).split("\0").filter((f) => f !== "" && existsSync(join(ROOT, f)));
  for (const f of files) {
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    cpSync(join(ROOT, f), join(dir, f));
  }
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"), "dir");
}

describe("a clone", () => {
  it("has prepare and prepack scripts that build", () => {
    expect(manifest.scripts["prepack"]).toBe("npm run build");
    expect(manifest.scripts["prepare"]).toBe("node scripts/prepare.mjs");
  });

  it("packs the built library and CLI, built by prepack, and never an empty package", { timeout: 600_000 }, () => {
    checkout();
    expect(existsSync(join(dir, "dist"))).toBe(false);
    const out = execFileSync("npm", ["pack", "--dry-run", "--json"], { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 * 1024 * 1024 });
    // The build's own output comes first on stdout; npm's JSON is the last part.
    const packed = (JSON.parse(out.slice(out.lastIndexOf("\n[") + 1)) as { files: { path: string }[] }[])[0]!;
    const files = new Set(packed.files.map((f) => f.path));
    const wanted = [...exportTargets(manifest.exports).filter((p) => p.startsWith("./dist/")), ...Object.values(manifest.bin)].map((p) => normalize(p));
    expect(wanted.length).toBeGreaterThan(10);
    expect(wanted.filter((p) => !files.has(p))).toEqual([]);
    const cli = spawnSync(process.execPath, [join(dir, manifest.bin["prefix-router"]!), "--version"], { encoding: "utf8" });
    expect(cli.stdout.trim()).toBe(manifest.version);
  });

  it.each(["pack", "exec", "install"])("prepare does not build again a dist/ newer than the sources (npm %s)", (command) => {
    const r = spawnSync(process.execPath, [join(ROOT, "scripts/prepare.mjs")], { cwd: dir, env: { ...process.env, npm_command: command }, encoding: "utf8" });
    expect(r.status).toBe(0);
    expect(r.stdout + r.stderr).toBe("");
  });
});
