import { describe, expect, it } from "vitest";
import { FLEET_USAGE, runFleetCommand, type CliIo } from "../../../tools/fleet/cli.js";
import { DEFAULT_MODEL } from "../../../tools/fleet/live.js";

function io(): CliIo & { lines: string[]; errors: string[]; stop(): void } {
  let stop!: () => void;
  const stopped = new Promise<void>((r) => (stop = r));
  const lines: string[] = [];
  const errors: string[] = [];
  return { lines, errors, stop, out: (l) => lines.push(l), err: (l) => errors.push(l), untilStopped: () => stopped };
}

describe("prefix-router fleet", () => {
  it("starts the instances, prints their URLs, serves until stopped", async () => {
    const t = io();
    const done = runFleetCommand(["--instances", "3", "--port", "0", "--time-scale", "0.01", "--model", "m1", "--model", "m2"], t);
    for (let i = 0; i < 2000 && t.lines.length < 4; i++) await new Promise((r) => setTimeout(r, 5));
    const urls = t.lines.slice(0, 3).map((l) => l.split("\t"));
    expect(urls.map(([id]) => id)).toEqual(["i0", "i1", "i2"]);
    expect(t.lines[3]).toBe("models: m1 (the default), m2");
    for (const [id, url] of urls) {
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const res = await fetch(`${url}/v1/models`);
      expect(res.headers.get("x-prefix-router-instance")).toBe(id);
      expect(((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id)).toEqual(["m1", "m2"]);
    }
    t.stop();
    expect(await done).toBe(0);
    await expect(fetch(`${urls[0]![1]}/health`)).rejects.toThrow();
  });

  it("names the model it serves by default", async () => {
    const t = io();
    const done = runFleetCommand(["--instances", "1", "--port", "0", "--time-scale", "0.01"], t);
    for (let i = 0; i < 2000 && t.lines.length < 3; i++) await new Promise((r) => setTimeout(r, 5));
    expect(t.lines[1]).toBe(`model: ${DEFAULT_MODEL}`);
    const res = await fetch(`${t.lines[0]!.split("\t")[1]}/v1/models`);
    expect(((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id)).toEqual([DEFAULT_MODEL]);
    t.stop();
    expect(await done).toBe(0);
  });

  it("prints help and rejects bad options with exit code 2", async () => {
    const h = io();
    expect(await runFleetCommand(["--help"], h)).toBe(0);
    expect(h.lines).toEqual([FLEET_USAGE]);
    for (const bad of [["--instances", "0"], ["--nope"], ["--time-scale", "fast"], ["--instances", "2", "--port", "65535"]]) {
      const b = io();
      expect(await runFleetCommand(bad, b)).toBe(2);
      expect(b.errors[0]).toMatch(/^prefix-router fleet: /);
    }
  });
});
