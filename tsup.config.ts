import { defineConfig } from "tsup";

export default defineConfig({
  entry: {
    index: "src/index.ts",
    "fleet/index": "src/fleet/index.ts",
    "bench/index": "src/bench/index.ts",
    "advise/index": "src/advise/index.ts",
    cli: "src/cli.ts",
  },
  format: ["esm", "cjs"],
  dts: true,
  sourcemap: true,
  clean: true,
  target: "node20",
  platform: "node",
  splitting: true,
  treeshake: true,
});
