/**
 * The house rules of docs/architecture.md, checked on the sources: the library never imports the
 * tools, the tools reach the library only through its public entries (as a user does), the
 * library's root folder holds its front door only, and the root entry stays a designed surface.
 */
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import * as root from "prefix-router";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const PUBLIC_ENTRIES = new Set(["prefix-router", "prefix-router/openai", "prefix-router/sagemaker"]);

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && /\.ts$/.test(e.name))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)));
}

/** Every module specifier a file imports or re-exports, static or dynamic. */
function importsOf(file: string): string[] {
  const info = ts.preProcessFile(readFileSync(join(ROOT, file), "utf8"), true, true);
  return info.importedFiles.map((f) => f.fileName);
}

/** The repository-relative path a relative specifier points at. */
const target = (file: string, spec: string) => relative(ROOT, resolve(ROOT, dirname(file), spec));

describe("the layout", () => {
  it("nothing in the library imports the tools", () => {
    const offending = sources("src").flatMap((f) =>
      importsOf(f)
        .filter((s) => (s.startsWith(".") && !target(f, s).startsWith("src")) || /^prefix-router(\/|$)/.test(s))
        .map((s) => `${f} → ${s}`),
    );
    expect(offending).toEqual([]);
  });

  it("the tools import the library only through its public entries", () => {
    const offending = sources("tools").flatMap((f) =>
      importsOf(f)
        .filter((s) => (s.startsWith(".") ? !target(f, s).startsWith("tools") : s.startsWith("prefix-router") && !PUBLIC_ENTRIES.has(s)))
        .map((s) => `${f} → ${s}`),
    );
    expect(offending).toEqual([]);
  });

  it("the library's root folder holds at most 8 files: its front door", () => {
    const files = readdirSync(join(ROOT, "src"), { withFileTypes: true }).filter((e) => e.isFile());
    expect(files.length).toBeLessThanOrEqual(8);
  });

  it("the root entry exports at most 60 names, none of them the adapters' own", async () => {
    const text = readFileSync(join(ROOT, "src/index.ts"), "utf8");
    const names = [...text.matchAll(/export (?:type )?\{([^}]*)\}/g)].flatMap((m) =>
      m[1]!.split(",").map((n) => n.trim()).filter(Boolean),
    );
    expect(names.length).toBeLessThanOrEqual(60);
    expect(new Set(names).size).toBe(names.length);
    const openai = await import("prefix-router/openai");
    const sagemaker = await import("prefix-router/sagemaker");
    const adapterNames = new Set([...Object.keys(openai), ...Object.keys(sagemaker)]);
    expect(Object.keys(root).filter((n) => adapterNames.has(n))).toEqual([]);
  });
});
