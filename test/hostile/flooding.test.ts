/**
 * Hash flooding: anyone who knows the targets and the seed can compute, offline, which prompts
 * land on which target (the algorithm is public). These tests play the attacker: with the default
 * seed a prompt pinned to a chosen target takes a few tries; a secret seed spreads the same
 * prompts; spillover keeps a flooded target at `concurrencyThreshold`, for every ranking strategy;
 * and the `x-prefix-router-target` header — an online oracle of where each prompt went — is off
 * unless asked for.
 */
import fc from "fast-check";
import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { type Lease, type Router, boundedLoad, createRouter } from "prefix-router";
import type { StrategySpec } from "../../src/strategies/strategy.js";
import { TARGET_HEADER, createRoutedFetch, routeOpenAI } from "prefix-router/openai";
import { useServer } from "./servers.js";

const EIGHT = Array.from({ length: 8 }, (_, i) => ({ id: `t${i}` }));
const prompt = (n: number) => ({ model: "m", prompt: `attacker prompt number ${n} `.repeat(60) });

/** The first `count` prompts whose first choice is one of `victims`, as the attacker finds them; and how many tries it took. */
function craft(router: Router, victims: readonly string[], count: number): { bodies: ReturnType<typeof prompt>[]; tries: number } {
  const bodies: ReturnType<typeof prompt>[] = [];
  let n = 0;
  while (bodies.length < count) {
    const body = prompt(n++);
    if (victims.includes(router.rank({ body }).targets[0]?.id as string)) bodies.push(body);
  }
  return { bodies, tries: n };
}

describe("hash flooding", () => {
  it("with the default seed a pinned prompt takes a few tries; a secret seed spreads the same prompts", async () => {
    const known = await createRouter({ targets: EIGHT });
    const { bodies, tries } = craft(known, ["t3"], 40);
    // About 8 tries per pinned prompt: the attack costs nothing.
    expect(tries).toBeLessThan(40 * 8 * 2);
    const secret = await createRouter({ targets: EIGHT, seed: 0x9f3a_51c7_02d4_e86bn });
    const onVictim = bodies.filter((body) => secret.rank({ body }).targets[0]?.id === "t3").length;
    // Binomial(40, 1/8): mean 5; 15 or more has probability below 1e-4.
    expect(onVictim).toBeLessThan(15);
  });

  const STRATEGIES: [string, StrategySpec][] = [
    ["prefix-aware", "prefix-aware"],
    ["longest-prefix", "longest-prefix"],
    ["boundedLoad(prefix-aware)", boundedLoad("prefix-aware")],
  ];

  it.each(STRATEGIES)("%s: a flood on two of eight targets keeps each at the threshold while others have room", async (_name, strategy) => {
    const threshold = 4;
    const attacker = await createRouter({ targets: EIGHT });
    const { bodies } = craft(attacker, ["t1", "t2"], 64);
    const router = await createRouter({ targets: EIGHT, strategy, concurrencyThreshold: threshold });
    const held: Lease[] = [];
    const inflight = () => new Map(router.stats().targets.map((t) => [t.id, t.inflight]));
    for (const body of bodies.slice(0, 8 * threshold)) {
      held.push(router.route({ body }));
      for (const n of inflight().values()) expect(n).toBeLessThanOrEqual(threshold);
    }
    // Every target full: the rest go to the least loaded, evenly.
    for (const body of bodies.slice(8 * threshold)) held.push(router.route({ body }));
    const counts = [...inflight().values()];
    expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
    for (const lease of held) lease.release();
    expect(router.stats().totals.inflight).toBe(0);
  });

  it.each(STRATEGIES)("%s: under any interleaving, no pick goes above the threshold while another target is open", async (_name, strategy) => {
    const attacker = await createRouter({ targets: EIGHT });
    const { bodies } = craft(attacker, ["t5"], 16);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(fc.nat(15).map((i) => ({ route: i })), fc.nat(63).map((i) => ({ release: i }))), { maxLength: 120 }), async (ops) => {
        const router = await createRouter({ targets: EIGHT, strategy, concurrencyThreshold: 3 });
        const held: Lease[] = [];
        for (const op of ops) {
          if ("release" in op) {
            held.splice(op.release % Math.max(1, held.length), 1)[0]?.release();
            continue;
          }
          const before = new Map(router.stats().targets.map((t) => [t.id, t.inflight]));
          const lease = router.route({ body: bodies[op.route] });
          const anyOpen = [...before.values()].some((n) => n < 3);
          if (anyOpen) expect(before.get(lease.target.id)).toBeLessThan(3);
          held.push(lease);
        }
        for (const lease of held) lease.release();
        expect(router.stats().totals.inflight).toBe(0);
      }),
      { numRuns: 60 },
    );
  });
});

describe("the x-prefix-router-target header is opt-in", () => {
  const served = useServer();

  it("createRoutedFetch: absent by default, the target's id with targetHeader: true", async () => {
    const targets = [{ id: "only", baseURL: `${served().origin}/v1` }];
    const quiet = await createRoutedFetch({ targets });
    const res = await quiet.fetch("http://fleet.invalid/v1/chat/completions", { method: "POST", body: JSON.stringify(prompt(1)) });
    await res.text();
    expect(res.headers.get(TARGET_HEADER)).toBeNull();
    const told = await createRoutedFetch({ targets, targetHeader: true });
    const res2 = await told.fetch("http://fleet.invalid/v1/chat/completions", { method: "POST", body: JSON.stringify(prompt(1)) });
    await res2.text();
    expect(res2.headers.get(TARGET_HEADER)).toBe("only");
  });

  it("the openai client: absent by default, so a service that forwards response headers leaks nothing", async () => {
    const client = await routeOpenAI(new OpenAI({ apiKey: "k", baseURL: "http://fleet.invalid/v1", maxRetries: 0 }), {
      targets: [{ id: "only", baseURL: `${served().origin}/v1` }],
    });
    const { response } = await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] }).withResponse();
    expect(response.headers.get(TARGET_HEADER)).toBeNull();
  });
});
