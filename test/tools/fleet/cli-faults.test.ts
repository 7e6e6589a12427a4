/**
 * `prefix-router fleet` fault flags: injected errors reproducible by `--seed`, per-instance error
 * rates and status, a slow instance, an instance killed (and revived) at a given time.
 */
import { describe, expect, it } from "vitest";
import { runFleetCommand, type CliIo } from "../../../tools/fleet/cli.js";

interface Run {
  io: CliIo & { lines: string[]; errors: string[]; stop(): void };
  done: Promise<number>;
  urls: Map<string, string>;
}

function io(): Run["io"] {
  let stop!: () => void;
  const stopped = new Promise<void>((r) => (stop = r));
  const lines: string[] = [];
  const errors: string[] = [];
  return { lines, errors, stop, out: (l) => lines.push(l), err: (l) => errors.push(l), untilStopped: () => stopped };
}

async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 4000; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error("condition never met");
}

async function start(flags: string[], instances = 2): Promise<Run> {
  const t = io();
  const done = runFleetCommand(["--instances", String(instances), "--port", "0", "--time-scale", "0.01", ...flags], t);
  await until(() => t.lines.length >= instances || t.errors.length > 0);
  const urls = new Map(t.lines.slice(0, instances).map((l) => l.split("\t") as [string, string]));
  return { io: t, done, urls };
}

async function stop(run: Run): Promise<void> {
  run.io.stop();
  expect(await run.done).toBe(0);
}

const ask = (url: string, q: string) =>
  fetch(`${url}/v1/chat/completions`, { method: "POST", body: JSON.stringify({ messages: [{ role: "user", content: q }], max_tokens: 2 }) });

async function statuses(flags: string[]): Promise<number[]> {
  const run = await start(flags);
  const out: number[] = [];
  for (let i = 0; i < 40; i++) {
    const res = await ask(run.urls.get("i0")!, `q${i}`);
    await res.arrayBuffer();
    out.push(res.status);
  }
  await stop(run);
  return out;
}

describe("prefix-router fleet: faults", () => {
  it("--error-rate fails requests drawn from --seed: the same seed fails the same requests, another seed others", async () => {
    const a = await statuses(["--error-rate", "0.5", "--seed", "1"]);
    const b = await statuses(["--error-rate", "0.5", "--seed", "1"]);
    const c = await statuses(["--error-rate", "0.5", "--seed", "2"]);
    expect(a).toEqual(b);
    expect(c).not.toEqual(a);
    expect(a.filter((s) => s === 500).length).toBeGreaterThan(5);
    expect(a.filter((s) => s === 200).length).toBeGreaterThan(5);
  });

  it("--error-rate <id>=<x> and --error-status apply to one instance; --slow multiplies one instance's model time", async () => {
    const run = await start(["--error-rate", "i1=1", "--error-status", "503", "--slow", "i0=4"], 3);
    expect((await ask(run.urls.get("i1")!, "x")).status).toBe(503);
    const ttft = async (id: string) => {
      const res = await ask(run.urls.get(id)!, "the same cold prompt");
      await res.arrayBuffer();
      expect(res.status).toBe(200);
      return Number(res.headers.get("x-prefix-router-ttft-ms"));
    };
    expect((await ttft("i0")) / (await ttft("i2"))).toBeCloseTo(4, 3);
    await stop(run);
  });

  it("--kill takes an instance down at a time, and back up at the second time", async () => {
    const run = await start(["--kill", "i1@0", "--kill", "i0@0-0.05"]);
    await until(() => run.io.lines.includes("i1 down") && run.io.lines.includes("i0 up"));
    expect(run.io.lines.indexOf("i0 down")).toBeLessThan(run.io.lines.indexOf("i0 up"));
    await expect(ask(run.urls.get("i1")!, "x")).rejects.toThrow();
    expect((await ask(run.urls.get("i0")!, "x")).status).toBe(200);
    await stop(run);
  });

  it("rejects malformed fault flags with exit code 2 and a message naming the flag", async () => {
    for (const [flags, message] of [
      [["--error-rate", "2"], "--error-rate expects a number from 0 to 1"],
      [["--error-status", "404"], "--error-status expects 500 or 503"],
      [["--slow", "i1"], "--slow expects <id>=<factor>"],
      [["--slow", "i1=0"], "--slow expects a number > 0"],
      [["--kill", "i1@5-1"], "--kill expects a number > 5"],
      [["--kill", "i9@1"], "No instance `i9`"],
      [["--seed=-1"], "--seed expects an integer >= 0"],
      [["--seed", "1.5"], "--seed expects an integer >= 0"],
    ] as const) {
      const t = io();
      expect(await runFleetCommand(["--instances", "2", "--port", "0", ...flags], t)).toBe(2);
      expect(t.errors[0]).toContain(message);
    }
  });
});
