/**
 * The tokenizer's worker thread and the process's life: an idle worker never keeps a process
 * alive (a script that never closes its router still exits), and a worker that is tokenizing is
 * not abandoned by a process whose only pending work is that answer.
 */
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";

function run(script: string, timeoutMs: number): Promise<{ code: number | null; stdout: string; timedOut: boolean }> {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, ["--import", "tsx", script], { stdio: ["ignore", "pipe", "inherit"] });
    let stdout = "";
    proc.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
    proc.on("exit", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, stdout, timedOut: signal === "SIGKILL" });
    });
  });
}

describe("precise-prefix's worker-thread tokenizer in a process", () => {
  it("a script that waits for a cold prompt's tokens routes on them, then exits without closing its router", async () => {
    const r = await run("test/kv-events/worker-process-child.ts", 30_000);
    expect(r.timedOut).toBe(false);
    expect(r.code).toBe(0);
    const [first, decision] = r.stdout.trim().split("\n");
    expect(first).toBe("waiting");
    expect(JSON.parse(decision ?? "null")).toMatchObject({ matchedBy: "events" });
  }, 40_000);
});
