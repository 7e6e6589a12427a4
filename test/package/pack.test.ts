/**
 * What `npm publish` would upload: no source maps, no file that no entry point reaches, every
 * bare import a declared dependency or peer (bundled code stays bundled), under 490 kB packed;
 * and readable: the library's files are not minified, so an uncaught error shows a short line.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { builtinModules } from "node:module";
import { dirname, join, normalize } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { ROOT, ensureBuilt } from "./install.js";

interface Packed {
  size: number;
  unpackedSize: number;
  files: { path: string; size: number }[];
}

interface Manifest {
  name: string;
  main: string;
  module: string;
  types: string;
  bin: Record<string, string>;
  exports: Record<string, unknown>;
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
}

/** Unminified library code (readable stack traces) in ESM and CommonJS, the tools in ESM, declarations. */
const MAX_PACKED_BYTES = 490_000;
/** The longest line allowed in what the library's entry points load. */
const MAX_LINE = 400;
/** Scripts the package runs as processes of their own, by path: no import reaches them. */
const SCRIPTS = ["dist/fleet/llama-engine.js", "dist/bench/router-process.js"];
const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as Manifest;
let packed: Packed;

beforeAll(async () => {
  await ensureBuilt();
  const out = execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: ROOT, encoding: "utf8" });
  packed = (JSON.parse(out) as Packed[])[0]!;
}, 300_000);

/** Every path an `exports` value names, depth first. */
function exportTargets(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (value !== null && typeof value === "object") return Object.values(value).flatMap(exportTargets);
  return [];
}

/** Relative and bare specifiers a built file imports, re-exports or requires. */
function specifiers(text: string): string[] {
  const found: string[] = [];
  const name = `["']([@\\w.][\\w@./:-]*)["']`;
  for (const m of text.matchAll(new RegExp(`(?:\\bfrom\\s*|\\bimport\\s*\\(?\\s*|\\brequire\\s*\\(\\s*)${name}`, "g"))) found.push(m[1]!);
  return found;
}

describe("the published package", () => {
  it(`is under ${MAX_PACKED_BYTES / 1000} kB packed, without source maps`, () => {
    expect(packed.size).toBeLessThan(MAX_PACKED_BYTES);
    expect(packed.files.filter((f) => f.path.endsWith(".map"))).toEqual([]);
  });

  it("holds only files an entry point, the bin or npm's page needs", () => {
    const files = new Set(packed.files.map((f) => f.path));
    const entries = [manifest.main, manifest.module, manifest.types, ...Object.values(manifest.bin), ...exportTargets(manifest.exports), ...SCRIPTS];
    const reached = new Set<string>();
    const queue = entries.map((e) => normalize(e));
    while (queue.length > 0) {
      const file = queue.pop()!;
      if (reached.has(file)) continue;
      reached.add(file);
      if (!file.startsWith("dist/")) continue;
      for (const spec of specifiers(readFileSync(join(ROOT, file), "utf8"))) {
        if (!spec.startsWith(".")) continue;
        let target = normalize(join(dirname(file), spec));
        // Declarations import "./x.js" meaning "./x.d.ts" ("./x.cjs" → "./x.d.cts").
        if (/\.d\.c?ts$/.test(file)) target = target.replace(/\.js$/, ".d.ts").replace(/\.cjs$/, ".d.cts");
        queue.push(target);
      }
    }
    const unreached = [...files].filter((f) => !reached.has(f) && !["README.md", "CHANGELOG.md", "LICENSE", "package.json"].includes(f));
    expect(unreached).toEqual([]);
    const missing = [...reached].filter((f) => f !== "package.json" && !files.has(f));
    expect(missing).toEqual([]);
  });

  it("imports at run time only Node.js built-ins, its dependencies and its optional peers", () => {
    // The tools import the library through the package's own name (`prefix-router`, `/openai`, …).
    const allowed = new Set([manifest.name, ...Object.keys(manifest.dependencies), ...Object.keys(manifest.peerDependencies)]);
    const builtins = new Set(builtinModules);
    const strays = new Set<string>();
    for (const { path } of packed.files) {
      if (!/\.c?js$/.test(path)) continue;
      for (const spec of specifiers(readFileSync(join(ROOT, path), "utf8"))) {
        if (spec.startsWith(".") || spec.startsWith("node:") || builtins.has(spec)) continue;
        const name = spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0]!;
        if (!allowed.has(name)) strays.add(`${path}: ${spec}`);
      }
    }
    // eventsource-parser is bundled: it must not appear here.
    expect([...strays]).toEqual([]);
  });

  it(`loads no line over ${MAX_LINE} characters from the library's entry points`, () => {
    const entries = ["dist/index.js", "dist/index.cjs", "dist/openai/index.js", "dist/openai/index.cjs", "dist/sagemaker/index.js", "dist/sagemaker/index.cjs", "dist/kv-events/index.js", "dist/kv-events/index.cjs"];
    const seen = new Set<string>();
    const queue = [...entries];
    const long: string[] = [];
    while (queue.length > 0) {
      const file = queue.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      const text = readFileSync(join(ROOT, file), "utf8");
      text.split("\n").forEach((line, i) => {
        if (line.length > MAX_LINE) long.push(`${file}:${i + 1} (${line.length} characters)`);
      });
      for (const spec of specifiers(text)) if (spec.startsWith(".")) queue.push(normalize(join(dirname(file), spec)));
    }
    expect(seen.size).toBeGreaterThan(entries.length);
    expect(long).toEqual([]);
  });

  it.each([
    ["ESM", "mjs", `import { createRouter } from ${JSON.stringify(join(ROOT, "dist/index.js"))};\nawait createRouter({ targets: [{ id: "a" }], concurrencyThreshold: 0 });\n`],
    ["CommonJS", "cjs", `const { createRouter } = require(${JSON.stringify(join(ROOT, "dist/index.cjs"))});\ncreateRouter({ targets: [{ id: "a" }], concurrencyThreshold: 0 })\n  .catch((e) => setImmediate(() => { throw e; }));\n`],
  ])("an uncaught bad-option error prints its message in a few short lines (%s)", (_, ext, code) => {
    const dir = mkdtempSync(join(tmpdir(), "prefix-router-error-"));
    const file = join(dir, `app.${ext}`);
    writeFileSync(file, code);
    try {
      const r = spawnSync(process.execPath, [file], { encoding: "utf8" });
      expect(r.status).not.toBe(0);
      const lines = r.stderr.trimEnd().split("\n");
      // Node.js's own module-loader frames (CommonJS adds six) are not the package's to shorten.
      const ours = lines.filter((l) => !/^\s+at .*node:internal\//.test(l));
      expect(r.stderr).toContain("RangeError: Expected `concurrencyThreshold` to be an integer from 1 to 1024, got 0");
      expect(ours.length).toBeLessThan(15);
      expect(Math.max(...lines.map((l) => l.length))).toBeLessThanOrEqual(MAX_LINE);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
