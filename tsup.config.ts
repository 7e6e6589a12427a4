import { defineConfig, type Options } from "tsup";

/** The library's entry points, built as ESM and CommonJS with their declarations. */
const library = {
  index: "src/index.ts",
  "openai/index": "src/openai/index.ts",
  "sagemaker/index": "src/sagemaker/index.ts",
  "kv-events/index": "src/kv-events/index.ts",
};
/** The tools: ESM only (the emulated fleet, the benchmark, the advisor and the CLI). */
const tools = { "fleet/index": "tools/fleet/index.ts", "bench/index": "tools/bench/index.ts", "advise/index": "tools/advise/index.ts" };

const shared: Options = {
  // Readable output: no minification, so an uncaught error shows the line that threw, not a
  // 70 kB line of minified code. No source maps (they would double the package).
  sourcemap: false,
  // `npm run build` empties dist/ first (the builds below run at once), then wraps long
  // import/export lists (scripts/wrap-dist.mjs).
  clean: false,
  target: "node20",
  platform: "node",
  splitting: true,
  treeshake: true,
};

/**
 * Scripts run as processes of their own: the CLI (`bin`), a llama.cpp engine of `startLlamaFleet`
 * (found at dist/fleet/llama-engine.js) and a router process of `bench --engine … --routers N`
 * (dist/bench/router-process.js).
 */
const scripts = { cli: "tools/cli.ts", "fleet/llama-engine": "tools/fleet/llama/engine-process.ts", "bench/router-process": "tools/bench/engines/router-process.ts" };

export default defineConfig([
  // The library, ESM, sharing chunks between its entries.
  { ...shared, entry: library, format: ["esm"], dts: { entry: library } },
  // CommonJS: the library only. Its declarations carry no doc comments (the ESM ones, which
  // editors show to most users, do): the same text twice made a tenth of the package.
  { ...shared, entry: library, format: ["cjs"], dts: { entry: library, compilerOptions: { removeComments: true } } },
  // The tools use the library as any user does, through the package's own entry points: those
  // stay imports of `prefix-router`, resolved at run time to the files above, never copied in.
  {
    ...shared,
    entry: { ...tools, ...scripts },
    format: ["esm"],
    external: [/^prefix-router(\/.*)?$/],
    dts: { entry: tools },
  },
]);
