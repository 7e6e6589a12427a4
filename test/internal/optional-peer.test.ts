import { describe, expect, it } from "vitest";
import { isRouterError } from "prefix-router";
import { importPeer, isMissingPackage } from "../../src/internal/optional-peer.js";

describe("importPeer", () => {
  it("turns a package that is not installed into ERR_MISSING_PEER naming it and its install command", async () => {
    const name = "prefix-router-test-no-such-package";
    const error = await importPeer(name, "The demo", () => import(name)).catch((e: unknown) => e);
    expect(isRouterError(error) && error.code).toBe("ERR_MISSING_PEER");
    expect((error as Error).message).toBe(`The demo needs the optional package \`${name}\`, which is not installed: npm install ${name}`);
  });

  it("returns the module when it is installed, and lets other failures through", async () => {
    expect(typeof (await importPeer("openai", "x", () => import("openai"))).default).toBe("function");
    const broken = Object.assign(new Error("Cannot find package 'some-dependency-of-it'"), { code: "ERR_MODULE_NOT_FOUND" });
    await expect(importPeer("openai", "x", () => Promise.reject(broken))).rejects.toBe(broken);
    expect(isMissingPackage(broken, "some-dependency-of-it")).toBe(true);
    expect(isMissingPackage(new Error("'openai'"), "openai")).toBe(false);
    expect(isMissingPackage(null, "openai")).toBe(false);
  });
});
