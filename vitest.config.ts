import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const at = (p: string) => fileURLToPath(new URL(`./${p}`, import.meta.url));

export default defineConfig({
  resolve: {
    // Tests import what users import: the package name resolves to the sources.
    alias: [
      { find: /^prefix-router$/, replacement: at("src/index.ts") },
      { find: /^prefix-router\/openai$/, replacement: at("src/openai/index.ts") },
      { find: /^prefix-router\/sagemaker$/, replacement: at("src/sagemaker/index.ts") },
      { find: /^prefix-router\/kv-events$/, replacement: at("src/kv-events/index.ts") },
      { find: /^prefix-router\/fleet$/, replacement: at("tools/fleet/index.ts") },
      { find: /^prefix-router\/bench$/, replacement: at("tools/bench/index.ts") },
      { find: /^prefix-router\/advise$/, replacement: at("tools/advise/index.ts") },
    ],
  },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
