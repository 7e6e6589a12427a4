import { describe, expect, it } from "vitest";
import { createRouter, silentLogger, type Logger } from "prefix-router";
import { FakeClock } from "./support.js";

/** A logger that keeps every line. */
function recorder(): Logger & { lines: { level: string; message: string; fields: unknown }[] } {
  const lines: { level: string; message: string; fields: unknown }[] = [];
  const at = (level: string) => (message: string, fields?: unknown) => lines.push({ level, message, fields });
  return { lines, debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

const abc = [{ id: "a" }, { id: "b" }, { id: "c" }];
const ask = (q: string) => ({ messages: [{ role: "user", content: q }] });

describe("logger", () => {
  it("is silent by default and accepts console", async () => {
    expect(Object.keys(silentLogger).sort()).toEqual(["debug", "error", "info", "warn"]);
    await expect(createRouter({ targets: abc, logger: console })).resolves.toBeDefined();
  });

  it("is validated: every level must be a function", async () => {
    await expect(createRouter({ targets: abc, logger: { debug() {}, info() {}, warn() {} } as never })).rejects.toThrow(
      "Expected `logger.error` to be a function, got undefined",
    );
    await expect(createRouter({ targets: abc, logger: "console" as never })).rejects.toThrow(TypeError);
  });

  it("warns when a target is ejected, naming it, the length and the failures", async () => {
    const log = recorder();
    const router = await createRouter({ targets: abc, logger: log, clock: new FakeClock(), ejection: { consecutiveFailures: 2 } });
    for (let i = 0; i < 2; i++) router.route({}, { exclude: ["b", "c"] }).release("connect-error");
    expect(log.lines).toEqual([
      {
        level: "warn",
        message: 'prefix-router: target "a" ejected for 30000 ms after 2 failures in a row (connection errors or 5xx)',
        fields: { event: "ejection", target: "a", ejectionMs: 30000 },
      },
    ]);
  });

  it("warns when a spill storm starts and says when it is over", async () => {
    const log = recorder();
    const router = await createRouter({ targets: abc, logger: log, concurrencyThreshold: 1 });
    const body = ask("one hot prefix");
    const held = Array.from({ length: 80 }, () => router.route({ body }));
    const storm = log.lines.filter((l) => l.message.includes("spill storm"));
    expect(storm).toHaveLength(1);
    expect(storm[0]).toMatchObject({ level: "warn", fields: { event: "spill_storm_start", fullTargets: ["a", "b", "c"] } });
    for (const lease of held) lease.release();
    for (let i = 0; i < 100; i++) router.route({ body }).release();
    expect(log.lines.at(-1)).toMatchObject({ level: "info", fields: { event: "spill_storm_end" } });
    expect(log.lines.filter((l) => l.message.includes("spill storm"))).toHaveLength(2);
  });

  it("warns about settings that do nothing", async () => {
    const log = recorder();
    await createRouter({ targets: abc, logger: log, longestPrefix: { blockSize: 128 } });
    await createRouter({ targets: [{ id: "a" }, { id: "b", weight: 0 }], logger: log });
    await createRouter({ targets: [{ id: "a" }], logger: log, strategy: "random" });
    expect(log.lines.map((l) => [l.level, l.message])).toEqual([
      ["warn", 'prefix-router: `longestPrefix` is set but the strategy is "prefix-aware": the settings are ignored'],
      ["warn", "prefix-router: only one target has weight > 0: prefix routing has nowhere else to send a prefix"],
    ]);
  });

  it("never breaks routing when it throws", async () => {
    const boom = () => {
      throw new Error("logger down");
    };
    const router = await createRouter({ targets: abc, logger: { debug: boom, info: boom, warn: boom, error: boom }, ejection: { consecutiveFailures: 1 } });
    expect(() => router.route({}).release("server-error")).not.toThrow();
    expect(router.stats().totals.failures).toBe(1);
  });
});
