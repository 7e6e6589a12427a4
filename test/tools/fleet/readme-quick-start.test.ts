/**
 * The README's quick start, run as a user runs it: the emulated fleet started by
 * `prefix-router fleet` (ephemeral ports and a faster clock, nothing else changed), then the
 * README's first snippet itself — read from README.md, types stripped — with the real `openai`
 * client. Only the fleet's URLs are put in place of 127.0.0.1:8000, :8001, … (the ports it takes
 * by default); anything else the snippet would contact fails the test before it runs.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import * as openai from "openai";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import * as routerOpenAI from "prefix-router/openai";
import { type CliIo, runFleetCommand } from "../../../tools/fleet/cli.js";

const README = readFileSync(fileURLToPath(new URL("../../../README.md", import.meta.url)), "utf8");

/** The first TypeScript block of the README's "Quick start" section. */
function quickStart(): string {
  const section = README.slice(README.indexOf("## Quick start"));
  const block = /```ts\n([\s\S]*?)```/.exec(section);
  if (block === null) throw new Error("README.md has no TypeScript block under ## Quick start");
  return block[1]!;
}

/** `prefix-router fleet` with `argv`; resolves once it printed its instances and models. */
async function startFleetCommand(argv: string[]): Promise<{ lines: string[]; stop(): Promise<number> }> {
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  const lines: string[] = [];
  const errors: string[] = [];
  const io: CliIo = { out: (l) => lines.push(l), err: (l) => errors.push(l), untilStopped: () => stopped };
  const done = runFleetCommand(argv, io);
  for (let i = 0; i < 2000 && !lines.some((l) => l.startsWith("OpenAI baseURL")) && errors.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
  expect(errors).toEqual([]);
  return {
    lines,
    stop: async () => {
      stop();
      return done;
    },
  };
}

/** Runs the snippet as an async function body, its imports bound to the modules given. */
async function runSnippet(source: string, modules: Record<string, unknown>): Promise<void> {
  const js = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
  const body = js.replace(/^import\s+(.+?)\s+from\s+"([^"]+)";$/gm, (_all, what: string, from: string) => {
    if (!(from in modules)) throw new Error(`The snippet imports ${from}, which the test does not provide`);
    const ref = `__modules[${JSON.stringify(from)}]`;
    return what.startsWith("{") ? `const ${what.replace(/ as /g, ": ")} = ${ref};` : `const ${what} = ${ref}.default;`;
  });
  const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (...args: string[]) => (m: unknown) => Promise<void>;
  await new AsyncFunction("__modules", body)(modules);
}

describe("the README's quick start against `prefix-router fleet`", () => {
  it("names the model the fleet serves and prints, and gets answers from every call, through the real openai client", async () => {
    const fleet = await startFleetCommand(["--port", "0", "--time-scale", "0.01"]);
    try {
      const urls = fleet.lines.filter((l) => /^i\d+\t/.test(l)).map((l) => l.split("\t")[1]!);
      expect(urls).toHaveLength(7);
      const served = /^model: (.+)$/m.exec(fleet.lines.join("\n"))?.[1];
      expect(served).toBeDefined();

      const snippet = quickStart();
      // The model the snippet names is the one the fleet says it serves.
      const named = [...snippet.matchAll(/\bmodel(?: =|:) "([^"]+)"/g)].map((m) => m[1]);
      expect(named.length).toBeGreaterThan(0);
      for (const m of named) expect(m).toBe(served);
      // Its targets are the fleet's default ports; nothing else is contacted.
      const runnable = snippet.replace(/http:\/\/127\.0\.0\.1:(\d+)/g, (all, port: string) => urls[Number(port) - 8000] ?? all);
      const targets = [...runnable.matchAll(/\{ id: "[^"]+", baseURL: "([^"]+)" \}/g)].map((m) => m[1]!);
      expect(targets.length).toBeGreaterThan(1);
      for (const url of targets) expect(urls.map((u) => `${u}/v1`)).toContain(url);

      let routed: unknown;
      await runSnippet(runnable, {
        openai,
        "prefix-router/openai": {
          ...routerOpenAI,
          routeOpenAI: async (...args: Parameters<typeof routerOpenAI.routeOpenAI>) => (routed = await routerOpenAI.routeOpenAI(...args)),
        },
      });
      const stats = routerOpenAI.getRouter(routed)!.stats();
      expect(stats.totals).toMatchObject({ routed: 3, failures: 0, inflight: 0 });
      expect(stats.totals.affinity).toBe(1);
    } finally {
      expect(await fleet.stop()).toBe(0);
    }
  });
});
