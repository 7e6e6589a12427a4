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
  // No source maps: they tripled the package. Whitespace is minified but every name is kept, so
  // stack traces read as the source does.
  sourcemap: false,
  minifyWhitespace: true,
  // `npm run build` empties dist/ first: the two builds below run at once.
  clean: false,
  target: "node20",
  platform: "node",
  splitting: true,
  treeshake: true,
};

export default defineConfig([
  // ESM: the library and the CLI (`bin`), sharing chunks.
  { ...shared, entry: { ...library, ...esmOnly, cli: "src/cli.ts" }, format: ["esm"], dts: { entry: { ...library, ...esmOnly } } },
  // CommonJS: the library only.
  { ...shared, entry: library, format: ["cjs"], dts: { entry: library } },
]);
