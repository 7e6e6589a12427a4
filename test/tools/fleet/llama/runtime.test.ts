/**
 * Finding node-llama-cpp (runtime.ts), the install command and CI script that put it where it is
 * looked for, and the options startLlamaFleet and `prefix-router fleet --engine llama` refuse
 * before starting anything. None of this needs node-llama-cpp.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startLlamaFleet } from "prefix-router/fleet";
import { runFleetCommand, type CliIo } from "../../../../tools/fleet/cli.js";
import {
  DEFAULT_LLAMA_DIR,
  NODE_LLAMA_CPP_VERSION,
  llamaBinaryPackage,
  llamaInstallCommand,
  missingLlamaError,
  resolveNodeLlamaCpp,
} from "../../../../tools/fleet/llama/runtime.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "prefix-router-llama-test-"));
  dirs.push(dir);
  return dir;
}

/** Lays `dir` out as `npm install --prefix <dir> node-llama-cpp` does, with a stand-in package; returns its entry. */
function install(dir: string): string {
  const pkg = join(dir, "node_modules", "node-llama-cpp");
  mkdirSync(join(pkg, "dist"), { recursive: true });
  writeFileSync(join(dir, "package.json"), "{}");
  writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: "node-llama-cpp", version: NODE_LLAMA_CPP_VERSION, type: "module", exports: { ".": { node: "./dist/index.js" } } }));
  writeFileSync(join(pkg, "dist", "index.js"), "export {};\n");
  return join(pkg, "dist", "index.js");
}

describe("resolveNodeLlamaCpp", () => {
  it("looks first in PREFIX_ROUTER_LLAMA_DIR, then in the working directory's node_modules/.cache folder", () => {
    const named = tempDir();
    const namedEntry = install(named);
    const cwd = tempDir();
    const cwdEntry = install(join(cwd, DEFAULT_LLAMA_DIR));
    expect(resolveNodeLlamaCpp({ PREFIX_ROUTER_LLAMA_DIR: named }, cwd)).toBe(namedEntry);
    expect(resolveNodeLlamaCpp({}, cwd)).toBe(cwdEntry);
    // A named folder without it falls through to the next place.
    expect(resolveNodeLlamaCpp({ PREFIX_ROUTER_LLAMA_DIR: tempDir() }, cwd)).toBe(cwdEntry);
  });

  it("says how to install it when it is missing: ERR_MISSING_PEER with this platform's command", () => {
    const err = missingLlamaError();
    expect(err.code).toBe("ERR_MISSING_PEER");
    expect(err.message).toContain(llamaInstallCommand());
    expect(err.message.split("\n")).toHaveLength(1);
    expect(llamaInstallCommand()).toBe(
      `npm install --prefix ${DEFAULT_LLAMA_DIR} -E node-llama-cpp@${NODE_LLAMA_CPP_VERSION} ${llamaBinaryPackage()}@${NODE_LLAMA_CPP_VERSION} --omit=optional`,
    );
    expect(["linux", "darwin", "win32"].map((p) => llamaBinaryPackage(p, "arm64"))).toEqual([
      "@node-llama-cpp/linux-arm64",
      "@node-llama-cpp/mac-arm64-metal",
      "@node-llama-cpp/win-arm64",
    ]);
  });

  it("is pinned to the same version by the install script CI runs", () => {
    const script = readFileSync(new URL("../../../../.ci/llama.sh", import.meta.url), "utf8");
    expect(/^VERSION=(\S+)$/m.exec(script)?.[1]).toBe(NODE_LLAMA_CPP_VERSION);
    expect(script).toContain("node_modules/.cache/prefix-router-llama");
    const pkg = JSON.parse(readFileSync(new URL("../../../../package.json", import.meta.url), "utf8")) as { scripts: Record<string, string>; dependencies: Record<string, string> };
    expect(pkg.scripts["engines:llama"]).toBe("bash .ci/llama.sh");
    expect(Object.keys(pkg.dependencies)).not.toContain("node-llama-cpp");
  });
});

describe("options refused before anything starts", () => {
  it("startLlamaFleet names the option, its range and the value", async () => {
    await expect(startLlamaFleet({ instances: 0 })).rejects.toThrow("Expected `instances` to be an integer from 1 to 64, got 0");
    await expect(startLlamaFleet({ slots: 1.5 })).rejects.toThrow("Expected `slots` to be an integer from 1 to 64, got 1.5");
    await expect(startLlamaFleet({ contextSize: 10 })).rejects.toThrow(RangeError);
    await expect(startLlamaFleet({ slotPromptSimilarity: 1 })).rejects.toThrow("Expected `slotPromptSimilarity` to be a number from 0 (inclusive) to 1 (exclusive), got 1");
    await expect(startLlamaFleet({ modelName: "" })).rejects.toThrow("Expected `modelName` to be a non-empty string");
    await expect(startLlamaFleet({ instances: 3, port: 65534 })).rejects.toThrow("Expected `port` to be an integer from 0 to 65533, got 65534");
  });

  it("prefix-router fleet refuses the options of the other engine, with exit code 2", async () => {
    for (const args of [
      ["--engine", "llama", "--time-scale", "0.1"],
      ["--engine", "llama", "--kill", "i0@1"],
      ["--engine", "llama", "--model", "a", "--model", "b"],
      ["--engine", "llama", "--slots", "0"],
      ["--engine", "vllm"],
      ["--slots", "2"],
      ["--context-size", "1024"],
    ]) {
      const errors: string[] = [];
      const io: CliIo = { out: () => undefined, err: (l) => errors.push(l), untilStopped: () => Promise.resolve() };
      expect(await runFleetCommand(args, io), args.join(" ")).toBe(2);
      expect(errors[0]).toMatch(/^prefix-router fleet: (--|Expected `slots`)/);
    }
  });
});
