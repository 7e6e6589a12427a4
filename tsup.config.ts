import { defineConfig, type Options } from "tsup";

/** The library's entry points, built as ESM and CommonJS with their declarations. */
const library = {
  index: "src/index.ts",
  "openai/index": "src/openai/index.ts",
  "sagemaker/index": "src/sagemaker/index.ts",
};
/** ESM only: the emulated fleet, the benchmark and the advisor (tools more than libraries; CommonJS would add ~60 kB to the package). */
const esmOnly = { "fleet/index": "src/fleet/index.ts", "bench/index": "src/bench/index.ts", "advise/index": "src/advise/index.ts" };

const shared: Options = {
  // No source maps: they tripled the package. Minified, but every function and class keeps its
  // name (keepNames), so stack traces still name the source's functions.
  sourcemap: false,
  minifyWhitespace: true,
  minifySyntax: true,
  minifyIdentifiers: true,
  keepNames: true,
  // `npm run build` empties dist/ first: the two builds below run at once.
  clean: false,
  target: "node20",
  platform: "node",
  splitting: true,
  treeshake: true,
};

/** Scripts run as processes of their own: the CLI (`bin`) and a llama.cpp engine of `startLlamaFleet`, which finds it at dist/fleet/llama-engine.js. */
const scripts = { cli: "src/cli.ts", "fleet/llama-engine": "src/fleet/llama/engine-process.ts" };

export default defineConfig([
  // ESM: the library and the scripts, sharing chunks.
  { ...shared, entry: { ...library, ...esmOnly, ...scripts }, format: ["esm"], dts: { entry: { ...library, ...esmOnly } } },
  // CommonJS: the library only. Its declarations carry no doc comments (the ESM ones, which
  // editors show to most users, do): the same text twice made a tenth of the package.
  { ...shared, entry: library, format: ["cjs"], dts: { entry: library, compilerOptions: { removeComments: true } } },
]);
