/**
 * Hostile options at every public entry point — constructors, `setTargets`, `route`'s options,
 * `release` — each answered by a TypeError or RangeError that names the option, the allowed
 * range and the value received, before anything changes: no target set installed, no lease
 * released or counted, no secret echoed back.
 */
import { SageMakerRuntimeClient } from "@aws-sdk/client-sagemaker-runtime";
import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { type RouterOptions, type TargetSpec, boundedLoad, createRouter, dnsTargets } from "prefix-router";
import { type FetchLike, type OpenAITarget, createRoutedFetch, routeOpenAI } from "prefix-router/openai";
import { routeSageMaker } from "prefix-router/sagemaker";
import { withTimers } from "../load-view/manual-timers.js";

/** A fetch that must never be called. */
const noFetch: FetchLike = () => {
  throw new Error("nothing may be sent");
};

const targets: TargetSpec[] = [{ id: "a" }, { id: "b" }];
const openaiTargets: OpenAITarget[] = [
  { id: "a", baseURL: "http://127.0.0.1:9/v1" },
  { id: "b", baseURL: "http://127.0.0.1:9/v2" },
];

/** How a message starts for option `name` (a list-wide rule like unique ids has no backticks). */
function expected(name: string): string {
  return name === "target ids" ? "Expected target ids" : `Expected \`${name}`;
}

/** The rejection of `promise`, which must be a TypeError or RangeError naming `name` and what was received. */
async function rejection(promise: Promise<unknown>, name: string): Promise<Error> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(Error);
  expect(["TypeError", "RangeError"]).toContain((error as Error).name);
  expect((error as Error).message).toContain(expected(name));
  expect((error as Error).message).toMatch(/got /);
  return error as Error;
}

function sparse<T>(length: number, entries: Record<number, T>): T[] {
  const out = new Array<T>(length);
  for (const [i, v] of Object.entries(entries)) out[Number(i)] = v;
  return out;
}

describe("createRouter: every option, hostile values", () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ["targets null", { targets: null }, "targets"],
    ["targets an object", { targets: {} }, "targets"],
    ["targets a string", { targets: "a" }, "targets"],
    ["targets sparse (hole first)", { targets: sparse(2, { 1: { id: "a" } }) }, "targets[0]"],
    ["targets sparse (hole last)", { targets: sparse(3, { 0: { id: "a" }, 1: { id: "b" } }) }, "targets[2]"],
    ["targets[0] null", { targets: [null] }, "targets[0]"],
    ["targets[0] a number", { targets: [7] }, "targets[0]"],
    ["targets[0].id missing", { targets: [{}] }, "targets[0].id"],
    ["targets[0].id empty", { targets: [{ id: "" }] }, "targets[0].id"],
    ["targets[0].id a number", { targets: [{ id: 5 }] }, "targets[0].id"],
    ["duplicate ids", { targets: [{ id: "a" }, { id: "a" }] }, "target ids"],
    ["weight -1", { targets: [{ id: "a", weight: -1 }] }, "targets[0].weight"],
    ["weight NaN", { targets: [{ id: "a", weight: Number.NaN }] }, "targets[0].weight"],
    ["weight Infinity", { targets: [{ id: "a", weight: Number.POSITIVE_INFINITY }] }, "targets[0].weight"],
    ["weight a string", { targets: [{ id: "a", weight: "1" }] }, "targets[0].weight"],
    ["weight null", { targets: [{ id: "a", weight: null }] }, "targets[0].weight"],
    ["models a string", { targets: [{ id: "a", models: "m" }] }, "targets[0].models"],
    ["models with a number", { targets: [{ id: "a", models: ["m", 1] }] }, "targets[0].models"],
    ["models sparse", { targets: [{ id: "a", models: sparse(2, { 1: "m" }) }] }, "targets[0].models"],
    ["models null", { targets: [{ id: "a", models: null }] }, "targets[0].models"],
    ["strategy null", { targets, strategy: null }, "strategy"],
    ["strategy a number", { targets, strategy: 5 }, "strategy"],
    ["strategy unknown", { targets, strategy: "round-robin" }, "strategy"],
    ["strategy without name", { targets, strategy: { pick: () => ({ index: 0, kind: "preferred", rank: 0 }) } }, "strategy.name"],
    ["strategy without pick", { targets, strategy: { name: "x" } }, "strategy.pick"],
    ["strategy.read not a function", { targets, strategy: { name: "x", pick: () => ({}), read: 5 } }, "strategy.read"],
    ["mode null", { targets, mode: null }, "mode"],
    ["mode upper case", { targets, mode: "TEXT" }, "mode"],
    ["prefixLength null", { targets, prefixLength: null }, "prefixLength"],
    ["prefixLength 1023", { targets, prefixLength: 1023 }, "prefixLength"],
    ["prefixLength 65537", { targets, prefixLength: 65_537 }, "prefixLength"],
    ["prefixLength 1.5", { targets, prefixLength: 1.5 }, "prefixLength"],
    ["prefixLength NaN", { targets, prefixLength: Number.NaN }, "prefixLength"],
    ["prefixLength a string", { targets, prefixLength: "4096" }, "prefixLength"],
    ["prefixLength Infinity", { targets, prefixLength: Number.POSITIVE_INFINITY }, "prefixLength"],
    ["concurrencyThreshold null", { targets, concurrencyThreshold: null }, "concurrencyThreshold"],
    ["concurrencyThreshold 0", { targets, concurrencyThreshold: 0 }, "concurrencyThreshold"],
    ["concurrencyThreshold 1025", { targets, concurrencyThreshold: 1025 }, "concurrencyThreshold"],
    ["concurrencyThreshold -1", { targets, concurrencyThreshold: -1 }, "concurrencyThreshold"],
    ["seed null", { targets, seed: null }, "seed"],
    ["seed -1", { targets, seed: -1 }, "seed"],
    ["seed 0.5", { targets, seed: 0.5 }, "seed"],
    ["seed NaN", { targets, seed: Number.NaN }, "seed"],
    ["seed beyond 2^53", { targets, seed: 2 ** 60 }, "seed"],
    ["seed -1n", { targets, seed: -1n }, "seed"],
    ["seed 2^64", { targets, seed: 2n ** 64n }, "seed"],
    ["seed a string", { targets, seed: "42" }, "seed"],
    ["random null", { targets, random: null }, "random"],
    ["random a number", { targets, random: 0.5 }, "random"],
    ["clock null", { targets, clock: null }, "clock"],
    ["clock without now", { targets, clock: {} }, "clock"],
    ["clock.now a number", { targets, clock: { now: 5 } }, "clock"],
    ["onDecision null", { targets, onDecision: null }, "onDecision"],
    ["onDecision a string", { targets, onDecision: "log" }, "onDecision"],
    ["ejection null", { targets, ejection: null }, "ejection"],
    ["ejection true", { targets, ejection: true }, "ejection"],
    ["ejection an array", { targets, ejection: [] }, "ejection"],
    ["ejection.consecutiveFailures 0", { targets, ejection: { consecutiveFailures: 0 } }, "ejection.consecutiveFailures"],
    ["ejection.consecutiveFailures null", { targets, ejection: { consecutiveFailures: null } }, "ejection.consecutiveFailures"],
    ["ejection.baseEjectionMs -1", { targets, ejection: { baseEjectionMs: -1 } }, "ejection.baseEjectionMs"],
    ["ejection.baseEjectionMs NaN", { targets, ejection: { baseEjectionMs: Number.NaN } }, "ejection.baseEjectionMs"],
    ["ejection.maxEjectionMs below the base", { targets, ejection: { baseEjectionMs: 100, maxEjectionMs: 10 } }, "ejection.maxEjectionMs"],
    ["ejection.maxEjectionMs null", { targets, ejection: { maxEjectionMs: null } }, "ejection.maxEjectionMs"],
    ["longestPrefix null", { targets, longestPrefix: null }, "longestPrefix"],
    ["longestPrefix an array", { targets, longestPrefix: [] }, "longestPrefix"],
    ["longestPrefix.blockSize 1", { targets, longestPrefix: { blockSize: 1 } }, "longestPrefix.blockSize"],
    ["longestPrefix.maxInputLength null", { targets, longestPrefix: { maxInputLength: null } }, "longestPrefix.maxInputLength"],
    ["longestPrefix.loadFactor 0.5", { targets, longestPrefix: { loadFactor: 0.5 } }, "longestPrefix.loadFactor"],
    ["longestPrefix.loadFactor null", { targets, longestPrefix: { loadFactor: null } }, "longestPrefix.loadFactor"],
    ["longestPrefix.exclusive a string", { targets, longestPrefix: { exclusive: "yes" } }, "longestPrefix.exclusive"],
    ["longestPrefix.ttlMs -1", { targets, longestPrefix: { ttlMs: -1 } }, "longestPrefix.ttlMs"],
    ["logger null", { targets, logger: null }, "logger"],
    ["logger without error", { targets, logger: { debug() {}, info() {}, warn() {} } }, "logger.error"],
    ["loadView null", { targets, loadView: null }, "loadView"],
    ["loadView unknown", { targets, loadView: "gossip" }, "loadView"],
    ["loadView a number", { targets, loadView: 3 }, "loadView"],
    ["loadView.source unknown", { targets, loadView: { source: "etcd" } }, "loadView"],
    ["loadView redis url null", { targets, loadView: { source: "redis", url: null } }, "loadView.url"],
    ["loadView redis url http", { targets, loadView: { source: "redis", url: "http://127.0.0.1:6379" } }, "loadView.url"],
    ["loadView redis leaseTtlMs null", { targets, loadView: { source: "redis", leaseTtlMs: null } }, "loadView.leaseTtlMs"],
    ["loadView redis leaseTtlMs 999", { targets, loadView: { source: "redis", leaseTtlMs: 999 } }, "loadView.leaseTtlMs"],
    ["loadView redis refreshIntervalMs 4", { targets, loadView: { source: "redis", refreshIntervalMs: 4 } }, "loadView.refreshIntervalMs"],
    ["loadView redis refreshIntervalMs NaN", { targets, loadView: { source: "redis", refreshIntervalMs: Number.NaN } }, "loadView.refreshIntervalMs"],
    ["loadView redis idle below busy", { targets, loadView: { source: "redis", refreshIntervalMs: 50, idleRefreshIntervalMs: 10 } }, "loadView.idleRefreshIntervalMs"],
    ["loadView redis keyPrefix empty", { targets, loadView: { source: "redis", keyPrefix: "" } }, "loadView.keyPrefix"],
    ["loadView redis test timers without clearTimeout", { targets, loadView: withTimers({ source: "redis" }, { setTimeout() {} } as never) }, "loadView[TEST_TIMERS]"],
    ["loadView engine intervalMs 9", { targets: openaiTargets, loadView: { source: "engine", intervalMs: 9 } }, "loadView.intervalMs"],
    ["loadView engine intervalMs null", { targets: openaiTargets, loadView: { source: "engine", intervalMs: null } }, "loadView.intervalMs"],
    ["loadView engine metrics.running empty", { targets: openaiTargets, loadView: { source: "engine", metrics: { running: [] } } }, "loadView.metrics.running"],
    ["loadView engine headers with a number", { targets: openaiTargets, loadView: { source: "engine", headers: { authorization: 5 } } }, "loadView.headers.authorization"],
    ["loadView engine maxBodyBytes 0", { targets: openaiTargets, loadView: { source: "engine", maxBodyBytes: 0 } }, "loadView.maxBodyBytes"],
    ["loadView engine maxBodyBytes null", { targets: openaiTargets, loadView: { source: "engine", maxBodyBytes: null } }, "loadView.maxBodyBytes"],
    ["loadView engine maxBodyBytes 2^31", { targets: openaiTargets, loadView: { source: "engine", maxBodyBytes: 2 ** 31 } }, "loadView.maxBodyBytes"],
    ["loadView engine metricsURL a string", { targets: openaiTargets, loadView: { source: "engine", metricsURL: "http://x/metrics" } }, "loadView.metricsURL"],
    ["loadView engine, a target without baseURL", { targets, loadView: { source: "engine" } }, "metricsURL"],
    ["loadView engine, a target's metricsURL ftp", { targets: [{ id: "a", metricsURL: "ftp://x/metrics" }], loadView: { source: "engine" } }, "metricsURL"],
    ["membership null", { targets, membership: null }, "membership"],
    ["membership without targets", { targets, membership: {} }, "membership.targets"],
    ["membership intervalMs 99", { targets, membership: { targets: () => targets, intervalMs: 99 } }, "membership.intervalMs"],
    ["membership timeoutMs null", { targets, membership: { targets: () => targets, timeoutMs: null } }, "membership.timeoutMs"],
    ["healthCheck null", { targets: openaiTargets, healthCheck: null }, "healthCheck"],
    ["healthCheck a string", { targets: openaiTargets, healthCheck: "/health" }, "healthCheck"],
    ["healthCheck.path relative", { targets: openaiTargets, healthCheck: { path: "health" } }, "healthCheck.path"],
    ["healthCheck.intervalMs 0", { targets: openaiTargets, healthCheck: { intervalMs: 0 } }, "healthCheck.intervalMs"],
    ["healthCheck.headers with a number", { targets: openaiTargets, healthCheck: { headers: { authorization: 5 } } }, "healthCheck.headers.authorization"],
    ["healthCheck.maxBodyBytes 0", { targets: openaiTargets, healthCheck: { maxBodyBytes: 0 } }, "healthCheck.maxBodyBytes"],
    ["healthCheck.maxBodyBytes 1.5", { targets: openaiTargets, healthCheck: { maxBodyBytes: 1.5 } }, "healthCheck.maxBodyBytes"],
    ["healthCheck.failuresBeforeDown null", { targets: openaiTargets, healthCheck: { failuresBeforeDown: null } }, "healthCheck.failuresBeforeDown"],
    ["healthCheck, a target without baseURL", { targets, healthCheck: true }, "healthURL"],
  ];
  it.each(cases)("%s", async (_name, options, option) => {
    await rejection(createRouter(options as unknown as RouterOptions), option);
  });

  it.each([
    ["null", null],
    ["a number", 42],
    ["a string", "targets"],
  ])("options %s", async (_name, options) => {
    await expect(createRouter(options as unknown as RouterOptions)).rejects.toThrow(/Expected router options to be an object, got /);
  });

  it.each([
    ["null", null, "dnsTargets options"],
    ["hostname empty", { hostname: "", port: 8000 }, "dnsTargets.hostname"],
    ["port missing", { hostname: "vllm" }, "dnsTargets.port"],
    ["port 0", { hostname: "vllm", port: 0 }, "dnsTargets.port"],
    ["port 65536", { hostname: "vllm", port: 65_536 }, "dnsTargets.port"],
    ["protocol ftp", { hostname: "vllm", port: 8000, protocol: "ftp" }, "dnsTargets.protocol"],
    ["path relative", { hostname: "vllm", port: 8000, path: "v1" }, "dnsTargets.path"],
    ["family 5", { hostname: "vllm", port: 8000, family: 5 }, "dnsTargets.family"],
    ["resolver without resolve6", { hostname: "vllm", port: 8000, resolver: { resolve4: async () => [] } }, "dnsTargets.resolver"],
  ])("dnsTargets %s", (_name, options, option) => {
    expect(() => dnsTargets(options as never)).toThrow(expected(option));
    try {
      dnsTargets(options as never);
    } catch (e) {
      expect(["TypeError", "RangeError"]).toContain((e as Error).name);
      expect((e as Error).message).toMatch(/got /);
    }
  });

  it.each([
    ["loadFactor 0", { loadFactor: 0 }, "boundedLoad options.loadFactor"],
    ["loadWindow null", { loadWindow: null }, "boundedLoad options.loadWindow"],
    ["options null", null, "boundedLoad options"],
  ])("boundedLoad %s", (_name, options, option) => {
    expect(() => boundedLoad("prefix-aware", options as unknown as { loadFactor?: number })).toThrow(expected(option));
  });
});

describe("createRoutedFetch and routeOpenAI: adapter options", () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ["attempts null", { attempts: null }, "attempts"],
    ["attempts 0", { attempts: 0 }, "attempts"],
    ["attempts 17", { attempts: 17 }, "attempts"],
    ["attempts 1.5", { attempts: 1.5 }, "attempts"],
    ["baseURL null", { baseURL: null }, "baseURL"],
    ["baseURL ftp", { baseURL: "ftp://fleet/v1" }, "baseURL"],
    ["baseURL relative", { baseURL: "/v1" }, "baseURL"],
    ["baseURL javascript:", { baseURL: "javascript:alert(1)" }, "baseURL"],
    ["fetch null", { fetch: null }, "fetch"],
    ["fetch a string", { fetch: "fetch" }, "fetch"],
    ["onRequestEnd null", { onRequestEnd: null }, "onRequestEnd"],
    ["redirect null", { redirect: null }, "redirect"],
    ["redirect follow", { redirect: "follow" }, "redirect"],
    ["targetHeader null", { targetHeader: null }, "targetHeader"],
    ["targetHeader a string", { targetHeader: "yes" }, "targetHeader"],
    ["target baseURL missing", { targets: [{ id: "a" }] }, "targets[0].baseURL"],
    ["target baseURL file:", { targets: [{ id: "a", baseURL: "file:///etc/passwd" }] }, "targets[0].baseURL"],
    ["target baseURL data:", { targets: [{ id: "a", baseURL: "data:text/plain,hi" }] }, "targets[0].baseURL"],
    ["target baseURL not a URL", { targets: [{ id: "a", baseURL: "vllm-0:8000" }] }, "targets[0].baseURL"],
    ["target headers null", { targets: [{ id: "a", baseURL: "http://a/v1", headers: null }] }, "targets[0].headers"],
    ["target headers an array", { targets: [{ id: "a", baseURL: "http://a/v1", headers: [["x", "y"]] }] }, "targets[0].headers"],
    ["target header value a number", { targets: [{ id: "a", baseURL: "http://a/v1", headers: { x: 1 } }] }, 'targets[0].headers["x"]'],
    ["target header name with a space", { targets: [{ id: "a", baseURL: "http://a/v1", headers: { "x y": "v" } }] }, 'targets[0].headers["x y"]'],
    ["target header name with a colon", { targets: [{ id: "a", baseURL: "http://a/v1", headers: { "x:y": "v" } }] }, 'targets[0].headers["x:y"]'],
    ["target header value with CR LF", { targets: [{ id: "a", baseURL: "http://a/v1", headers: { x: "a\r\nInjected: 1" } }] }, 'targets[0].headers["x"]'],
    ["target header value with LF", { targets: [{ id: "a", baseURL: "http://a/v1", headers: { x: "a\nb" } }] }, 'targets[0].headers["x"]'],
    ["target header value with NUL", { targets: [{ id: "a", baseURL: "http://a/v1", headers: { x: "a\u0000b" } }] }, 'targets[0].headers["x"]'],
  ];
  it.each(cases)("createRoutedFetch: %s", async (_name, options, option) => {
    await rejection(createRoutedFetch({ targets: openaiTargets, fetch: noFetch, ...options } as never), option);
  });
  it.each(cases)("routeOpenAI: %s", async (_name, options, option) => {
    const client = new OpenAI({ apiKey: "k", baseURL: "http://fleet.invalid/v1", fetch: noFetch });
    await rejection(routeOpenAI(client, { targets: openaiTargets, ...options } as never), option);
  });

  it("never echoes a secret: credentials in a baseURL, an Authorization header with CR LF", async () => {
    const withPassword = await rejection(createRoutedFetch({ targets: [{ id: "a", baseURL: "http://user:hunter2@a/v1" }], fetch: noFetch }), "targets[0].baseURL");
    expect(withPassword.message).not.toContain("hunter2");
    const header = await rejection(
      createRoutedFetch({ targets: [{ id: "a", baseURL: "http://a/v1", headers: { authorization: "Bearer sk-secret\r\nx: y" } }], fetch: noFetch }),
      'targets[0].headers["authorization"]',
    );
    expect(header.message).not.toContain("sk-secret");
  });
});

describe("setTargets validates as the constructor does, and keeps the old set on failure", () => {
  it.each([
    ["a sparse array", sparse(2, { 0: { id: "a" } }), "targets[1]"],
    ["a duplicate id", [{ id: "a" }, { id: "a" }], "target ids"],
    ["null", null, "targets"],
  ])("core router: %s", async (_name, next, option) => {
    const router = await createRouter({ targets });
    expect(() => router.setTargets(next as never)).toThrow(expected(option));
    expect(router.targets()).toEqual(targets);
  });

  it.each([
    ["an ftp baseURL", [{ id: "a", baseURL: "ftp://a/v1" }], "targets[0].baseURL"],
    ["a header value with CR LF", [{ id: "a", baseURL: "http://a/v1", headers: { x: "1\r\n2" } }], 'targets[0].headers["x"]'],
    ["a missing baseURL", [{ id: "a" }], "targets[0].baseURL"],
  ])("OpenAI router: %s", async (_name, next, option) => {
    const { router } = await createRoutedFetch({ targets: openaiTargets, fetch: noFetch });
    expect(() => router.setTargets(next as never)).toThrow(`Expected \`${option}`);
    expect(router.targets()).toEqual(openaiTargets);
  });

  it.each([
    ["a missing endpointName", [{ id: "a" }], "targets[0].endpointName"],
    ["an empty targetVariant", [{ id: "a", endpointName: "e", targetVariant: "" }], "targets[0].targetVariant"],
  ])("SageMaker router: %s", async (_name, next, option) => {
    const client = new SageMakerRuntimeClient({ region: "us-east-1", credentials: { accessKeyId: "a", secretAccessKey: "b" } });
    const routed = await routeSageMaker(client, { targets: [{ id: "a", endpointName: "e" }] });
    expect(() => routed.router.setTargets(next as never)).toThrow(`Expected \`${option}`);
    expect(routed.router.targets()).toEqual([{ id: "a", endpointName: "e" }]);
  });
});

describe("routeSageMaker: adapter options", () => {
  const client = new SageMakerRuntimeClient({ region: "us-east-1", credentials: { accessKeyId: "a", secretAccessKey: "b" } });
  it.each([
    ["canonicalizeBody null", { canonicalizeBody: null }, "canonicalizeBody"],
    ["canonicalizeBody a string", { canonicalizeBody: "yes" }, "canonicalizeBody"],
    ["attempts null", { attempts: null }, "attempts"],
    ["attempts 0", { attempts: 0 }, "attempts"],
    ["mode null", { mode: null }, "mode"],
    ["mode upper case", { mode: "TEXT" }, "mode"],
    ["mode tokens", { mode: "tokens" }, "mode"],
    ["endpointName empty", { targets: [{ id: "a", endpointName: "" }] }, "targets[0].endpointName"],
    ["inferenceComponentName a number", { targets: [{ id: "a", endpointName: "e", inferenceComponentName: 5 }] }, "targets[0].inferenceComponentName"],
    ["target client without send", { targets: [{ id: "a", endpointName: "e", client: {} }] }, "targets[0].client"],
    ["targets sparse", { targets: sparse(2, { 1: { id: "a", endpointName: "e" } }) }, "targets[0]"],
  ])("%s", async (_name, options, option) => {
    await rejection(routeSageMaker(client, { targets: [{ id: "a", endpointName: "e" }], ...options } as never), option);
  });
});

describe("route(): hostile per-call options, nothing counted", () => {
  it.each([
    ["attempt 0", { attempt: 0 }, "attempt"],
    ["attempt -1", { attempt: -1 }, "attempt"],
    ["attempt 1.5", { attempt: 1.5 }, "attempt"],
    ["attempt a string", { attempt: "2" }, "attempt"],
    ["attempt null", { attempt: null }, "attempt"],
    ["attempt 1025", { attempt: 1025 }, "attempt"],
    ["exclude a string", { exclude: "a" }, "exclude"],
    ["exclude with a number", { exclude: ["a", 1] }, "exclude"],
    ["exclude a Set with a number", { exclude: new Set([1]) }, "exclude"],
    ["exclude null", { exclude: null }, "exclude"],
    ["exclude an object", { exclude: { a: true } }, "exclude"],
  ])("%s", async (_name, options, option) => {
    const router = await createRouter({ targets });
    expect(() => router.route({ body: { prompt: "x" } }, options as never)).toThrow(`Expected \`${option}\``);
    expect(router.stats().totals).toMatchObject({ inflight: 0, routed: 0 });
  });

  it.each([["null", null], ["a number", 5], ["a string", "a"]])("route options %s", async (_name, options) => {
    const router = await createRouter({ targets });
    expect(() => router.route({}, options as never)).toThrow("Expected route options to be an object");
    expect(router.stats().totals.routed).toBe(0);
  });
});

describe("release(): hostile outcome and token counts, the lease stays open until a valid release", () => {
  it.each([
    ["outcome unknown", ["ok"], "outcome"],
    ["outcome a number", [200], "outcome"],
    ["outcome null", [null], "outcome"],
    ["info null", ["success", null], "release `info`"],
    ["info a number", ["success", 5], "release `info`"],
    ["promptTokens -1", ["success", { promptTokens: -1 }], "promptTokens"],
    ["promptTokens 1.5", ["success", { promptTokens: 1.5 }], "promptTokens"],
    ["promptTokens NaN", ["success", { promptTokens: Number.NaN }], "promptTokens"],
    ["promptTokens Infinity", ["success", { promptTokens: Number.POSITIVE_INFINITY }], "promptTokens"],
    ["promptTokens a string", ["success", { promptTokens: "10" }], "promptTokens"],
    ["cachedTokens -1", ["success", { cachedTokens: -1 }], "cachedTokens"],
    ["cachedTokens above promptTokens", ["success", { promptTokens: 10, cachedTokens: 11 }], "cachedTokens"],
  ])("%s", async (_name, args, option) => {
    const router = await createRouter({ targets });
    const lease = router.route({ body: { prompt: "x" } });
    expect(() => (lease.release as (...a: unknown[]) => void)(...args)).toThrow(`Expected ${option.startsWith("release") ? option : `\`${option}\``}`);
    expect(lease.released).toBe(false);
    expect(router.stats().totals.inflight).toBe(1);
    lease.release("success", { promptTokens: 10, cachedTokens: 4 });
    expect(router.stats().totals).toMatchObject({ inflight: 0, cachedTokenRatio: 0.4 });
  });
});
