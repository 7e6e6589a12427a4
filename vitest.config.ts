import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const src = (p: string) => fileURLToPath(new URL(`./src/${p}`, import.meta.url));

export default defineConfig({
  resolve: {
    // Tests import what users import: the package name resolves to the sources.
    alias: [
      { find: /^prefix-router$/, replacement: src("index.ts") },
      { find: /^prefix-router\/openai$/, replacement: src("openai/index.ts") },
      { find: /^prefix-router\/sagemaker$/, replacement: src("sagemaker/index.ts") },
      { find: /^prefix-router\/fleet$/, replacement: src("fleet/index.ts") },
      { find: /^prefix-router\/bench$/, replacement: src("bench/index.ts") },
      { find: /^prefix-router\/advise$/, replacement: src("advise/index.ts") },
    ],
  },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
