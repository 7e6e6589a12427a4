/**
 * Unknown options, at every public constructor and in every nested option object: a key the
 * option's type does not have (a misspelling, an option of another version) is refused with a
 * TypeError naming it, and the closest known key when one is near — never silently ignored. The
 * key lists are checked against the types at compile time (`keysOf`), so "not in the list" is
 * "not in the type".
 */
import { SageMakerRuntimeClient } from "@aws-sdk/client-sagemaker-runtime";
import fc from "fast-check";
import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { type TargetSpec, boundedLoad, createRouter, dnsTargets } from "prefix-router";
import { type FetchLike, type OpenAITarget, createRoutedFetch, getRouter, routeOpenAI } from "prefix-router/openai";
import { routeSageMaker } from "prefix-router/sagemaker";
import { EJECTION_OPTION_KEYS, ROUTER_OPTION_KEYS } from "../../src/options.js";
import { LONGEST_PREFIX_OPTION_KEYS } from "../../src/strategies/longest-prefix/options.js";
import { PREFIX_AWARE_OPTION_KEYS } from "../../src/strategies/prefix-aware/options.js";
import { PRECISE_PREFIX_OPTION_KEYS } from "../../src/strategies/precise-prefix/options.js";
import { BOUNDED_LOAD_OPTION_KEYS } from "../../src/strategies/bounded-load.js";
import { CLOSED_LOOP_OPTION_KEYS } from "../../src/closed-loop/closed-loop.js";
import { TELEMETRY_OPTION_KEYS } from "../../src/telemetry/load.js";
import { ENGINE_LOAD_VIEW_OPTION_KEYS, ENGINE_METRIC_NAME_KEYS, REDIS_LOAD_VIEW_OPTION_KEYS } from "../../src/load-view/options.js";
import { MEMBERSHIP_OPTION_KEYS } from "../../src/background/membership.js";
import { HEALTH_CHECK_OPTION_KEYS } from "../../src/background/health-check.js";
import { DNS_TARGETS_OPTION_KEYS } from "../../src/background/dns-targets.js";
import { ROUTED_FETCH_OPTION_KEYS } from "../../src/openai/routed-fetch.js";
import { RESPONSE_AFFINITY_OPTION_KEYS } from "../../src/openai/responses.js";
import { RESPONSE_STORE_OPTION_KEYS } from "../../src/openai/response-store.js";
import { ROUTE_SAGEMAKER_OPTION_KEYS } from "../../src/sagemaker/route-sagemaker.js";

/** A fetch that must never be called. */
const noFetch: FetchLike = () => {
  throw new Error("nothing may be sent");
};
const targets: TargetSpec[] = [{ id: "a" }, { id: "b" }];
const openaiTargets: OpenAITarget[] = [{ id: "a", baseURL: "http://127.0.0.1:9/v1" }];
const sagemakerTargets = [{ id: "a", endpointName: "e" }];
const openai = () => new OpenAI({ apiKey: "unused", baseURL: "http://fleet.invalid/v1", fetch: noFetch });
const sagemaker = () => new SageMakerRuntimeClient({ region: "us-east-1", credentials: { accessKeyId: "x", secretAccessKey: "x" } });

type Options = Record<string, unknown>;
/** Builds what takes the option object at `path` (given `o` there); resolves to its close. */
type Open = (o: Options) => Promise<() => Promise<unknown>>;

const router: Open = async (o) => {
  const r = await createRouter({ targets, ...o });
  return () => r.close();
};
const routerWith = (name: string, base: Options = {}): Open => async (o) => router({ [name]: { ...base, ...o } });
const routedFetch: Open = async (o) => {
  const { router: r } = await createRoutedFetch({ targets: openaiTargets, fetch: noFetch, ...o });
  return () => r.close();
};
const routedOpenAI: Open = async (o) => {
  const client = await routeOpenAI(openai(), { targets: openaiTargets, ...o });
  return () => getRouter(client)!.close();
};
const routedSageMaker: Open = async (o) => {
  const client = await routeSageMaker(sagemaker(), { targets: sagemakerTargets, ...o });
  return () => client.router.close();
};
const sync = (f: (o: Options) => unknown): Open => async (o) => {
  f(o);
  return async () => undefined;
};

/** Where each option object sits, its known keys, and what builds it. */
const PLACES: [constructor: string, path: string, known: readonly string[], open: Open][] = [
  ["createRouter", "", ROUTER_OPTION_KEYS, router],
  ["createRoutedFetch", "", ROUTED_FETCH_OPTION_KEYS, routedFetch],
  ["routeOpenAI", "", ROUTED_FETCH_OPTION_KEYS, routedOpenAI],
  ["routeSageMaker", "", ROUTE_SAGEMAKER_OPTION_KEYS, routedSageMaker],
  ["createRouter", "ejection", EJECTION_OPTION_KEYS, routerWith("ejection")],
  ["createRouter", "longestPrefix", LONGEST_PREFIX_OPTION_KEYS, routerWith("longestPrefix")],
  ["createRouter", "prefixAware", PREFIX_AWARE_OPTION_KEYS, routerWith("prefixAware")],
  ["createRouter", "precisePrefix", PRECISE_PREFIX_OPTION_KEYS, routerWith("precisePrefix")],
  ["createRouter", "closedLoop", CLOSED_LOOP_OPTION_KEYS, routerWith("closedLoop")],
  ["createRouter", "telemetry", TELEMETRY_OPTION_KEYS, routerWith("telemetry")],
  ["createRouter", "loadView", ENGINE_LOAD_VIEW_OPTION_KEYS, routerWith("loadView", { source: "engine" })],
  ["createRouter", "loadView", REDIS_LOAD_VIEW_OPTION_KEYS, routerWith("loadView", { source: "redis" })],
  ["createRouter", "loadView", ["source"], routerWith("loadView", { source: "local" })],
  ["createRouter", "loadView.metrics", ENGINE_METRIC_NAME_KEYS, async (o) => router({ loadView: { source: "engine", metrics: o } })],
  ["createRouter", "membership", MEMBERSHIP_OPTION_KEYS, routerWith("membership", { targets: () => targets })],
  ["createRouter", "healthCheck", HEALTH_CHECK_OPTION_KEYS, routerWith("healthCheck")],
  ["dnsTargets", "dnsTargets", DNS_TARGETS_OPTION_KEYS, sync((o) => dnsTargets({ hostname: "vllm.invalid", port: 8000, ...o }))],
  ["boundedLoad", "boundedLoad options", BOUNDED_LOAD_OPTION_KEYS, sync((o) => boundedLoad("prefix-aware", o))],
  ["routeOpenAI", "responseAffinity", RESPONSE_AFFINITY_OPTION_KEYS, async (o) => routedOpenAI({ responseAffinity: o })],
  ["routeOpenAI", "responseAffinity.store", RESPONSE_STORE_OPTION_KEYS, async (o) => routedOpenAI({ responseAffinity: { store: { source: "redis", ...o } } })],
];

/** The error `open(o)` fails with (the test fails if it succeeds). */
async function failure(open: Open, o: Options): Promise<Error> {
  let close: (() => Promise<unknown>) | undefined;
  try {
    close = await open(o);
  } catch (e) {
    return e as Error;
  }
  await close();
  throw new Error(`accepted ${JSON.stringify(Object.keys(o))}`);
}

/** One edit away from `key`: a character dropped, doubled, swapped with the next, or changed in case. */
const nearMiss = (known: readonly string[]) =>
  fc
    .tuple(fc.constantFrom(...known), fc.nat(), fc.constantFrom("drop", "double", "swap", "case"))
    .map(([key, n, edit]) => {
      const i = n % key.length;
      if (edit === "drop") return key.slice(0, i) + key.slice(i + 1);
      if (edit === "double") return key.slice(0, i + 1) + key.slice(i);
      if (edit === "case") return key.slice(0, i) + (key[i] === key[i]!.toUpperCase() ? key[i]!.toLowerCase() : key[i]!.toUpperCase()) + key.slice(i + 1);
      return i + 1 < key.length ? key.slice(0, i) + key[i + 1] + key[i] + key.slice(i + 2) : `${key}x`;
    })
    .filter((k) => k.length >= 3 && !known.includes(k));

describe("unknown options", () => {
  it("createRouter names the misspelled option and the one meant", async () => {
    const error = await failure(router, { concurrencyTreshold: 8 });
    expect(error).toBeInstanceOf(TypeError);
    expect(error.message).toBe("Unknown option `concurrencyTreshold` — did you mean `concurrencyThreshold`?");
  });

  it("a nested object names its path; with nothing close, the keys it takes", async () => {
    expect((await failure(routerWith("prefixAware"), { saturaton: "tokens" })).message).toBe(
      "Unknown option `prefixAware.saturaton` — did you mean `prefixAware.saturation`?",
    );
    expect((await failure(routerWith("closedLoop"), { tolerance: 2 })).message).toBe(
      "Unknown option `closedLoop.tolerance`: `closedLoop` takes `misses`, `ratio`",
    );
  });

  it("an adapter suggests its own options too", async () => {
    expect((await failure(routedOpenAI, { atempts: 3 })).message).toBe("Unknown option `atempts` — did you mean `attempts`?");
    expect((await failure(routedSageMaker, { canonicaliseBody: false })).message).toBe(
      "Unknown option `canonicaliseBody` — did you mean `canonicalizeBody`?",
    );
  });

  it("`timers` is no option: the background features take test timers only under an internal symbol", async () => {
    const timers = { setTimeout: () => 0, clearTimeout: () => {} };
    for (const [open, path] of [
      [routerWith("membership", { targets: () => targets }), "membership"],
      [routerWith("healthCheck"), "healthCheck"],
      [routerWith("loadView", { source: "engine" }), "loadView"],
      [routerWith("loadView", { source: "redis" }), "loadView"],
    ] as const) {
      expect((await failure(open, { timers })).message).toContain(`Unknown option \`${path}.timers\``);
    }
  });

  it("a key that is no identifier is quoted and cut short", async () => {
    const error = await failure(router, { ["`".repeat(200)]: 1 });
    expect(error.message).toMatch(/^Unknown option "`{64}"… \(200 characters\): the options are those in the README's options table$/);
  });

  describe.each(PLACES)("%s: `%s`", (_, path, known, open) => {
    const name = (k: string) => (path === "" ? k : `${path}.${k}`);

    it("refuses any key not in its type", async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(fc.string({ maxLength: 40 }), nearMiss(known)).filter((k) => !known.includes(k)),
          async (key) => {
            const error = await failure(open, { [key]: 1 });
            expect(error).toBeInstanceOf(TypeError);
            expect(error.message).toMatch(/^Unknown option /);
          },
        ),
        { numRuns: 40 },
      );
    });

    it("names the known key one edit away", async () => {
      await fc.assert(
        fc.asyncProperty(nearMiss(known), async (key) => {
          const error = await failure(open, { [key]: 1 });
          const suggested = /did you mean `([^`]+)`\?$/.exec(error.message)?.[1];
          expect(known.map(name)).toContain(suggested);
        }),
        { numRuns: 20 },
      );
    });

    it("takes every key of its type (absent values: the defaults)", async () => {
      for (const key of known) {
        let close: (() => Promise<unknown>) | undefined;
        try {
          close = await open({ [key]: undefined });
        } catch (e) {
          // A required option left undefined is refused for its value, never as unknown.
          expect((e as Error).message).not.toMatch(/^Unknown option/);
        }
        await close?.();
      }
    });
  });
});
