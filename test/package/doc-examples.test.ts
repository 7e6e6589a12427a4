/**
 * Examples are tests: every TypeScript or JavaScript block of README.md and docs/*.md is
 * type-checked against the package's types, and run — against the emulated fleet that
 * doc-context.ts starts (a block's `http://127.0.0.1:8000`, `http://10.0.0.7:8000`, … become
 * that fleet's instances, in order of appearance), a real Redis, or the llama.cpp engines — unless
 * running it needs what CI cannot have. Such a block says so, and why, in a marker on the line
 * before it, which this test reads:
 *
 *   <!-- example: typecheck-only (needs AWS credentials) -->   type-checked, never run; the reason is required
 *   <!-- example: needs redis -->     run against a redis-server (CI's, or one started here); type-checked only without one
 *   <!-- example: needs llama -->     run where node-llama-cpp is installed (CI); type-checked only elsewhere
 *
 * A block may use the names doc-context.ts exports without importing them (its own imports
 * win). Relative links of README.md and docs/ name files of the repository, and the README's
 * own links work on npm's page (readme.test.ts).
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveNodeLlamaCpp } from "../../tools/fleet/llama/runtime.js";
import { REDIS_SKIP_REASON, redisForTests } from "../load-view/redis-server.js";
import { ROOT } from "./install.js";
import { DEMO_DOC } from "../../tools/demo/cli.js";
import { BENCH_TABLE_DOC } from "../../tools/bench/table.js";
import { ENGINE_BENCH_DOC } from "../../tools/bench/engines/report.js";
import { anchors } from "./markdown-anchors.js";

const PAGES = ["README.md", ...readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).sort().map((f) => `docs/${f}`)];
const OUT = join(ROOT, ".tmp/doc-examples");
const CONTEXT = join(ROOT, "test/package/doc-context.ts");
const LANGS = new Set(["ts", "typescript", "js", "javascript", "mjs", "cjs", "tsx"]);

type Marker = { kind: "run" } | { kind: "typecheck-only"; why: string } | { kind: "needs"; what: "redis" | "llama" };

interface Block {
  page: string;
  line: number;
  code: string;
  marker: Marker;
  name: string;
}

function parseMarker(comment: string | undefined, where: string): Marker {
  if (comment === undefined) return { kind: "run" };
  const m = /^<!--\s*example:\s*(.*?)\s*-->$/.exec(comment)![1]!;
  const typecheck = /^typecheck-only \((.+)\)$/.exec(m);
  if (typecheck) return { kind: "typecheck-only", why: typecheck[1]! };
  const needs = /^needs (redis|llama)$/.exec(m);
  if (needs) return { kind: "needs", what: needs[1] as "redis" | "llama" };
  throw new Error(`${where}: unknown example marker "${m}" (typecheck-only (why), needs redis, needs llama)`);
}

function blocks(): Block[] {
  const out: Block[] = [];
  for (const page of PAGES) {
    const lines = readFileSync(join(ROOT, page), "utf8").split("\n");
    for (let i = 0; i < lines.length; i++) {
      const open = /^```(\w*)\s*$/.exec(lines[i]!);
      if (!open) continue;
      let end = i + 1;
      while (end < lines.length && !lines[end]!.startsWith("```")) end++;
      if (LANGS.has(open[1]!)) {
        let before = i - 1;
        while (before >= 0 && lines[before]!.trim() === "") before--;
        const comment = before >= 0 && /^<!--\s*example:/.test(lines[before]!) ? lines[before]!.trim() : undefined;
        const where = `${page}:${i + 1}`;
        out.push({ page, line: i + 1, code: lines.slice(i + 1, end).join("\n"), marker: parseMarker(comment, where), name: `${page.replace(/\W/g, "_")}_${i + 1}` });
      }
      i = end;
    }
  }
  return out;
}

/** The names doc-context.ts exports, and which of them are types. */
function contextNames(): { values: string[]; types: string[] } {
  const text = readFileSync(CONTEXT, "utf8");
  const values = new Set<string>();
  const types = new Set<string>();
  for (const m of text.matchAll(/^export (?:async )?(const|function|class|interface|type) (\w+)/gm)) (m[1] === "interface" || m[1] === "type" ? types : values).add(m[2]!);
  for (const m of text.matchAll(/^export (type )?\{([^}]*)\};/gm)) {
    for (const n of m[2]!.split(",").map((s) => s.trim()).filter(Boolean)) (m[1] ? types : values).add(n);
  }
  return { values: [...values], types: [...types] };
}

const IMPORT = /^import\s[\s\S]*?\sfrom\s+["'][^"']+["'];?[ \t]*$|^import\s+["'][^"']+["'];?[ \t]*$/gm;

/** The block as a module: its imports first, then the context's other names, then its code in a scope of its own. */
function moduleOf(code: string, contextPath: string): string {
  const imports = code.match(IMPORT) ?? [];
  const rest = code.replace(IMPORT, "");
  const imported = new Set(imports.flatMap((i) => [...i.replace(/from\s+["'][^"']+["']/, "").matchAll(/\b(?:as\s+)?([A-Za-z_$][\w$]*)\b/g)].map((m) => m[1]!)));
  const { values, types } = contextNames();
  const names = [...values.filter((n) => !imported.has(n)), ...types.filter((n) => !imported.has(n)).map((n) => `type ${n}`)];
  return [...imports, `import { ${names.join(", ")} } from ${JSON.stringify(contextPath)};`, "{", rest, "}", "export {};", ""].join("\n");
}

const all = blocks();
const runnable = all.filter((b) => b.marker.kind !== "typecheck-only");
const llamaInstalled = resolveNodeLlamaCpp() !== undefined;
const llamaRequired = process.env["PREFIX_ROUTER_REQUIRE_LLAMA"] === "1";

describe("links of README.md and docs/", () => {
  it("a relative link names a file of the repository, and an anchor one of its headings makes", () => {
    const broken: string[] = [];
    for (const page of PAGES) {
      const text = readFileSync(join(ROOT, page), "utf8");
      const prose = text.replace(/```[\s\S]*?```/g, "").replace(/`[^`\n]*`/g, "");
      for (const m of prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        const link = m[1]!;
        if (/^[a-z]+:/.test(link)) continue;
        const [path, anchor] = link.split("#") as [string, string | undefined];
        const file = path === "" ? join(ROOT, page) : join(ROOT, dirname(page), path);
        if (!existsSync(file)) broken.push(`${page}: ${link}`);
        else if (anchor !== undefined && file.endsWith(".md") && !anchors(readFileSync(file, "utf8")).has(anchor)) broken.push(`${page}: ${link}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("the doc sections the demo and the benches point to under their legends exist", () => {
    for (const pointer of [DEMO_DOC, BENCH_TABLE_DOC, ENGINE_BENCH_DOC]) {
      const [file, anchor] = pointer.split("#") as [string, string];
      expect(anchors(readFileSync(join(ROOT, file), "utf8")), pointer).toContain(anchor);
    }
  });
});

describe("the examples of README.md and docs/", () => {
  it("are all found, each run or marked with why it is only type-checked", () => {
    expect(all.length).toBeGreaterThan(30);
    for (const b of all) if (b.marker.kind === "typecheck-only") expect(b.marker.why.length, `${b.page}:${b.line}`).toBeGreaterThan(5);
    console.log(`doc examples: ${all.length} blocks, ${runnable.length} run (${runnable.filter((b) => b.marker.kind === "needs").length} where Redis or llama.cpp is there), ${all.length - runnable.length} type-checked only`);
  });

  it("type-check against the package's types", () => {
    const dir = join(OUT, "check");
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const contextPath = relative(dir, CONTEXT).replace(/\.ts$/, ".js");
    for (const b of all) writeFileSync(join(dir, `${b.name}.ts`), `// ${b.page}:${b.line}\n${moduleOf(b.code, contextPath)}`);
    writeFileSync(join(OUT, "tsconfig.json"), JSON.stringify({ extends: "../../tsconfig.json", include: ["check/*.ts", "../../src/**/*.d.ts"], compilerOptions: { noEmit: true } }));
    let output = "";
    try {
      execFileSync(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", join(OUT, "tsconfig.json")], { cwd: ROOT, encoding: "utf8" });
    } catch (e) {
      output = String((e as { stdout?: string }).stdout ?? e);
    }
    // Name the page and line of each block an error is in.
    const located = output.replace(/\.tmp\/doc-examples\/check\/(\w+)\.ts/g, (all, name: string) => {
      const b = (blocksByName.get(name));
      return b === undefined ? all : `${b.page}:${b.line} (block) ${all}`;
    });
    expect(located).toBe("");
  }, 300_000);

  describe("run", () => {
    let redis: { url: string; stop(): Promise<void> } | undefined;
    let context: typeof import("./doc-context.js") | undefined;
    const dir = join(OUT, "run");

    beforeAll(async () => {
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir, { recursive: true });
      if (REDIS_SKIP_REASON === undefined && runnable.some((b) => b.marker.kind === "needs" && b.marker.what === "redis")) redis = await redisForTests();
      context = await import("./doc-context.js");
    }, 120_000);

    afterAll(async () => {
      await context?.fleet.stop();
      await redis?.stop();
    });

    it.each(runnable.map((b) => [`${b.page}:${b.line}`, b] as const))("%s", async (_, b) => {
      if (b.marker.kind === "needs" && b.marker.what === "redis" && redis === undefined) return void console.warn(`${b.page}:${b.line} type-checked only: ${REDIS_SKIP_REASON}`);
      if (b.marker.kind === "needs" && b.marker.what === "llama" && !llamaInstalled) {
        expect(llamaRequired, "PREFIX_ROUTER_REQUIRE_LLAMA=1 but node-llama-cpp is not installed").toBe(false);
        return void console.warn(`${b.page}:${b.line} type-checked only: node-llama-cpp is not installed (npm run engines:llama)`);
      }
      const urls = context!.fleet.urls;
      const origins: string[] = [];
      let code = b.code.replace(/http:\/\/(?:127\.0\.0\.1|localhost|10\.\d+\.\d+\.\d+):\d+/g, (origin) => {
        if (!origins.includes(origin)) origins.push(origin);
        return urls[origins.indexOf(origin) % urls.length]!;
      });
      if (redis !== undefined) {
        code = code.replace(/redis:\/\/[\w.:@-]+/g, redis.url);
        process.env["REDIS_URL"] = redis.url;
      }
      const file = join(dir, `${b.name}.ts`);
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, moduleOf(code, relative(dir, CONTEXT).replace(/\.ts$/, ".js")));
      expect(existsSync(file)).toBe(true);
      await import(/* @vite-ignore */ file);
    }, 90_000);
  });
});

const blocksByName = new Map(all.map((b) => [b.name, b]));
