/**
 * Optional peers stay optional in the types: two applications type-check against the built
 * package with `skipLibCheck: false` — one with only `openai` installed (root, openai, fleet and
 * bench entry points, ESM and CommonJS), one with only the AWS SDK (root and sagemaker). A probe
 * in each proves the other peer is really absent (importing it fails) and its own is present.
 */
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { ROOT, ensureBuilt, installConsumer } from "./install.js";

const TSC = join(ROOT, "node_modules/typescript/bin/tsc");

/** Runs tsc in `dir`; returns its output and whether it passed. */
function typecheck(dir: string, project = "tsconfig.json"): { ok: boolean; output: string } {
  try {
    return { ok: true, output: execFileSync(process.execPath, [TSC, "-p", join(dir, project)], { encoding: "utf8" }) };
  } catch (error) {
    return { ok: false, output: String((error as { stdout?: unknown }).stdout) };
  }
}

function fixture(name: string): { dir: string; remove(): void } {
  const source = join(ROOT, "test/consumers", name);
  const files = Object.fromEntries(readdirSync(source).map((f) => [f, join(source, f)]));
  const declared = JSON.parse(readFileSync(join(source, "package.json"), "utf8")) as { dependencies: Record<string, string> };
  return installConsumer(files, Object.keys(declared.dependencies).filter((d) => d !== "prefix-router"));
}

/** Whether the application can import `name` (a quick check: declaration files are not checked). */
function resolves(dir: string, name: string): { ok: boolean; output: string } {
  writeFileSync(join(dir, "probe.ts"), `import * as probe from ${JSON.stringify(name)};\nexport const x = probe;\n`);
  const config = JSON.parse(readFileSync(join(dir, "tsconfig.json"), "utf8")) as { compilerOptions: object };
  const quick = { compilerOptions: { ...config.compilerOptions, skipLibCheck: true }, include: ["probe.ts"] };
  writeFileSync(join(dir, "tsconfig.probe.json"), JSON.stringify(quick));
  return typecheck(dir, "tsconfig.probe.json");
}

beforeAll(() => ensureBuilt(), 300_000);

describe("consumer type-checks with skipLibCheck: false", () => {
  it.each([
    { app: "openai-only", has: "openai", lacks: "@aws-sdk/client-sagemaker-runtime" },
    { app: "aws-only", has: "@aws-sdk/client-sagemaker-runtime", lacks: "openai" },
  ])("an application with $has and without $lacks ($app)", ({ app, has, lacks }) => {
    const installed = fixture(app);
    try {
      const result = typecheck(installed.dir);
      expect(result.output).toBe("");
      expect(result.ok).toBe(true);
      expect(resolves(installed.dir, lacks).output).toContain(`TS2307: Cannot find module '${lacks}'`);
      expect(resolves(installed.dir, has).ok).toBe(true);
    } finally {
      installed.remove();
    }
  });
});
