/**
 * `@opentelemetry/api` missing: the package is an optional peer, so a router without the
 * `telemetry` option works and records nothing, and one that asks for telemetry fails with a
 * RouterError naming the package and its install command. The package's absence is simulated by
 * making its import fail (it is installed here as a devDependency).
 */
import { afterEach, describe, expect, it, vi } from "vitest";

afterEach(() => {
  vi.doUnmock("@opentelemetry/api");
  vi.resetModules();
});

describe("telemetry without @opentelemetry/api", () => {
  it("is a no-op by default, and ERR_MISSING_PEER when providers are given", async () => {
    vi.resetModules();
    vi.doMock("@opentelemetry/api", () => {
      throw new Error("Cannot find package '@opentelemetry/api'");
    });
    const { createRouter, isRouterError } = await import("../../src/index.js");
    const router = await createRouter({ targets: [{ id: "a" }, { id: "b" }] });
    router.route({}).release();
    expect(router.stats().totals.routed).toBe(1);
    const error = await createRouter({ targets: [{ id: "a" }], telemetry: {} }).catch((e: unknown) => e);
    expect(isRouterError(error) && error.code).toBe("ERR_MISSING_PEER");
    expect((error as Error).message).toBe(
      "The `telemetry` option needs the optional peer dependency @opentelemetry/api: npm install @opentelemetry/api",
    );
  });
});
