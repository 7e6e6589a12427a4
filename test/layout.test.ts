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
const PUBLIC_ENTRIES = new Set(["prefix-router", "prefix-router/openai", "prefix-router/sagemaker", "prefix-router/kv-events"]);

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

/**
 * The layers of docs/architecture.md, top to bottom: a file may import its own layer or one below,
 * never one above. Leaves (the shared vocabulary) stand outside: any file may import them, and they
 * import only other leaves and `internal/`.
 */
const LAYERS: readonly (readonly string[])[] = [
  ["src/index.ts", "src/defaults.ts", "src/openai/", "src/sagemaker/", "src/kv-events/index.ts"],
  ["src/adapter/"],
  ["src/router/", "src/options.ts"],
  ["src/strategies/", "src/load-view/", "src/background/", "src/telemetry/"],
  ["src/closed-loop/", "src/routing/", "src/kv-events/"],
  ["src/internal/"],
];
const LEAVES = new Set([
  "src/errors.ts",
  "src/logger.ts",
  "src/types.ts",
  "src/strategies/built-in.ts",
  "src/strategies/longest-prefix/reason.ts",
  "src/strategies/precise-prefix/reason.ts",
  "src/openai/stats.ts",
]);

/** The layer of a file: 0 at the top. */
function layerOf(file: string): number {
  const layer = LAYERS.findIndex((prefixes) => prefixes.some((p) => (p.endsWith("/") ? file.startsWith(p) : file === p)));
  if (layer === -1) throw new Error(`${file} is in no layer of docs/architecture.md`);
  return layer;
}

/** The import graph of `src/`: file → the `src/` files it imports (types included). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sources("src").filter((f) => !f.endsWith(".d.ts"))) {
    const deps = importsOf(file)
      .filter((s) => s.startsWith("."))
      .map((s) => target(file, s).replace(/\.js$/, ".ts"));
    graph.set(file, deps);
  }
  return graph;
}

/** Every function-like declaration in `src/` with more than `max` parameters, as "file:line name (n)". */
function longParameterLists(max: number): string[] {
  const out: string[] = [];
  for (const file of sources("src").filter((f) => !f.endsWith(".d.ts"))) {
    const sf = ts.createSourceFile(file, readFileSync(join(ROOT, file), "utf8"), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if (ts.isFunctionLike(node) && node.parameters.length > max) {
        const line = sf.getLineAndCharacterOfPosition(node.getStart()).line + 1;
        const name = node.name?.getText(sf) ?? (ts.isConstructorDeclaration(node) ? "constructor" : "(anonymous)");
        out.push(`${file}:${line} ${name} (${node.parameters.length})`);
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return out;
}

const lines = (file: string) => readFileSync(join(ROOT, file), "utf8").split("\n").length - 1;

describe("the library's layers", () => {
  const graph = importGraph();

  it("has no import circle in src/ (type imports included)", () => {
    const state = new Map<string, "open" | "done">();
    const circles: string[] = [];
    const visit = (file: string, path: string[]): void => {
      if (state.get(file) === "done") return;
      if (state.get(file) === "open") {
        circles.push([...path.slice(path.indexOf(file)), file].join(" → "));
        return;
      }
      state.set(file, "open");
      for (const dep of graph.get(file) ?? []) visit(dep, [...path, file]);
      state.set(file, "done");
    };
    for (const file of graph.keys()) visit(file, []);
    expect(circles).toEqual([]);
  });

  it("imports point down the layers: no file imports one above it; leaves import only leaves and internal/", () => {
    const upward: string[] = [];
    for (const [file, deps] of graph) {
      for (const dep of deps) {
        if (LEAVES.has(file)) {
          if (!LEAVES.has(dep) && !dep.startsWith("src/internal/")) upward.push(`${file} → ${dep}`);
        } else if (!LEAVES.has(dep) && layerOf(dep) < layerOf(file)) {
          upward.push(`${file} → ${dep}`);
        }
      }
    }
    expect(upward).toEqual([]);
  });

  it("only the registry reaches into a strategy's folder: the router, the options, the defaults and the vocabulary name no strategy", () => {
    // The registry, the types it composes, and the entries that export the built-ins' option types.
    const registry = new Set(["src/strategies/index.ts", "src/strategies/built-in.ts", "src/strategies/built-in-stats.ts", "src/index.ts", "src/kv-events/index.ts"]);
    // A strategy that builds on another (its definition's `uses`): precise-prefix extends longest-prefix.
    const buildsOn: Readonly<Record<string, readonly string[]>> = { "precise-prefix": ["longest-prefix"] };
    const folderOf = (file: string) => /^src\/strategies\/([^/]+)\//.exec(file)?.[1];
    const reaching: string[] = [];
    for (const [file, deps] of graph) {
      for (const dep of deps) {
        const folder = folderOf(dep);
        const own = folderOf(file);
        if (folder === undefined || folder === "shared" || own === folder || registry.has(file)) continue;
        if (own !== undefined && buildsOn[own]?.includes(folder) === true) continue;
        reaching.push(`${file} → ${dep}`);
      }
    }
    expect(reaching).toEqual([]);
  });

  it("keeps files short: router/router.ts at most 350 lines, types.ts at most 200, every file at most 400", () => {
    expect(lines("src/router/router.ts")).toBeLessThanOrEqual(350);
    expect(lines("src/types.ts")).toBeLessThanOrEqual(200);
    const long = sources("src").filter((f) => lines(f) > 400).map((f) => `${f}: ${lines(f)}`);
    expect(long).toEqual([]);
  });

  it("has no function or constructor with more than 5 parameters (parameter objects instead)", () => {
    expect(longParameterLists(5)).toEqual([]);
  });
});
