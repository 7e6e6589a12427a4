/**
 * Scripts the tools run as processes of their own (a llama.cpp engine, a bench's router
 * process), and the shared cache folder of generated files, `<tmpdir>/prefix-router-llama`.
 *
 * Built package: the script is an entry of dist/ (tsup.config.ts `scripts`), found near the
 * calling module. Source checkout (tests, `npx tsx tools/cli.ts …`): the TypeScript entry is
 * bundled by esbuild into the cache folder, so that the process runs plain JavaScript with no
 * TypeScript loader to slow its start.
 */

import { createRequire } from "node:module";
import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The shared cache folder of generated files: `<tmpdir>/prefix-router-llama`. */
export const CACHE_DIR = join(tmpdir(), "prefix-router-llama");

/**
 * `bytes` as a file of the cache folder named by their hash (`<name>-<hash><ext>`): written
 * once, never removed (a few MB at most), so that no run, even one whose process was killed,
 * leaves a copy behind. Written aside then renamed: a concurrent run never reads a partial file.
 */
export async function cachedFile(bytes: Uint8Array, name: string, ext: string): Promise<string> {
  const path = join(CACHE_DIR, `${name}-${createHash("sha256").update(bytes).digest("hex").slice(0, 16)}${ext}`);
  if (existsSync(path)) return path;
  await mkdir(CACHE_DIR, { recursive: true });
  const partial = `${path}.${process.pid}.${randomBytes(4).toString("hex")}`;
  await writeFile(partial, bytes);
  await rename(partial, path);
  return path;
}

/**
 * `zeromq` is a native addon that finds its binary from its own folder: the bundle (written to a
 * temporary folder, where no node_modules is) imports it by its absolute path, resolved from
 * `caller`, instead of carrying a copy. Not installed: left to fail at run time, where the code
 * that needs it says so (`ERR_MISSING_PEER`).
 */
function nativeFromHere(caller: string): Record<string, unknown> {
  return {
    name: "native-from-here",
    setup(b: { onResolve(o: { filter: RegExp }, f: (a: { path: string }) => unknown): void }) {
      b.onResolve({ filter: /^zeromq$/ }, (a) => {
        try {
          return { path: createRequire(caller).resolve(a.path), external: true };
        } catch {
          return { path: a.path, external: true };
        }
      });
    },
  };
}

/** esbuild's build function, as the source checkout uses it (a dependency of tsup and tsx there). */
type EsbuildBuild = (options: Record<string, unknown>) => Promise<{ outputFiles: { contents: Uint8Array }[] }>;

/**
 * The path of a script to run with `node`: `built` (e.g. `fleet/llama-engine.js`) found in a
 * folder at most 3 levels above `caller` (an `import.meta.url`) when it is built JavaScript, else
 * `source` (a `.ts` path relative to the caller's folder) bundled into the cache folder as
 * `<name>-<hash>.mjs`.
 * @throws Error when the built script cannot be found
 */
export async function processScript(caller: string, source: string, built: string, name: string): Promise<string> {
  const here = fileURLToPath(caller);
  if (!here.endsWith(".ts")) {
    for (let d = dirname(here), up = 0; up < 3; up++, d = dirname(d)) {
      const entry = join(d, built);
      if (existsSync(entry)) return entry;
    }
    throw new Error(`Cannot find the script ${built} near ${here}`);
  }
  // A computed specifier: the package's own build must not bundle esbuild.
  const esbuildName = "esbuild";
  const { build } = (await import(esbuildName)) as { build: EsbuildBuild };
  const { outputFiles } = await build({
    entryPoints: [join(dirname(here), source)],
    write: false,
    outfile: `${name}.mjs`,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    // Loaded lazily by code the process never runs (the SageMaker event stream).
    external: ["@smithy/*"],
    plugins: [nativeFromHere(caller)],
    // A bundled CommonJS dependency (openai's) may call require(): give the ES module one.
    banner: { js: 'import { createRequire as __prCreateRequire } from "node:module"; const require = __prCreateRequire(import.meta.url);' },
    logLevel: "silent",
  });
  return cachedFile(outputFiles[0]!.contents, name, ".mjs");
}
