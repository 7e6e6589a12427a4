/**
 * The installed `prefix-router` command (dist/cli.js, as `bin` names it): its version, and a
 * one-line message naming a missing optional peer and its install command — run from an
 * application that installed prefix-router without `openai`.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { ROOT, ensureBuilt, installConsumer } from "../package/install.js";

const version = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;

beforeAll(() => ensureBuilt(), 300_000);

function cli(bin: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [bin, ...args], { encoding: "utf8", timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("prefix-router (the command)", () => {
  it("--version and -v print the package's version", () => {
    for (const flag of ["--version", "-v"]) {
      expect(cli(join(ROOT, "dist/cli.js"), [flag])).toEqual({ status: 0, stdout: `${version}\n`, stderr: "" });
    }
  });

  it("`demo` without openai installed says so in one line, with the install command, and exits 1", () => {
    const app = installConsumer({}, []);
    try {
      const r = cli(join(app.dir, "node_modules/prefix-router/dist/cli.js"), ["demo", "--requests", "1"]);
      expect(r.status).toBe(1);
      expect(r.stderr).toBe("prefix-router: The demo needs the optional package `openai`, which is not installed: npm install openai\n");
    } finally {
      app.remove();
    }
  });

  it("a bad option is one line too, not a stack", () => {
    const r = cli(join(ROOT, "dist/cli.js"), ["demo", "--requests", "0"]);
    expect(r.status).toBe(1);
    expect(r.stderr).toBe("prefix-router: --requests expects a number >= 1, got 0\n");
  });
});
