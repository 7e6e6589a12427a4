import { describe, expect, it } from "vitest";
import { createRouter, type Lease, type Router } from "prefix-router";

const targets = ["a", "b", "c", "d"].map((id) => ({ id }));
const system = "You are the assistant of ACME. ".padEnd(3000, "policy text ");
const ask = (q: string) => ({ model: "m", messages: [{ role: "system", content: system }, { role: "user", content: q }] });

/** Two requests of one key at once on its first choice; the second is served `cached` tokens. Returns the second's target. */
function pair(router: Router, cached: number, i: number): string {
  const first: Lease = router.route({ body: ask(`first ${i}?`) });
  const second: Lease = router.route({ body: ask(`second ${i}?`) });
  second.release("success", { promptTokens: 800, cachedTokens: cached });
  first.release("success", { promptTokens: 800, cachedTokens: 700 });
  return second.target.id;
}

describe("prefix-aware — running keys", () => {
  it('"auto" (default) spreads a running key once its target served such second requests cold (a slot engine)', async () => {
    const router = await createRouter({ targets });
    const home = router.rank({ body: ask("x") }).targets[0]!.id;
    // Warm the key at home, then two concurrent pairs served cold: a private cache.
    router.route({ body: ask("warm") }).release("success", { promptTokens: 800, cachedTokens: 0 });
    expect(pair(router, 0, 1)).toBe(home);
    expect(pair(router, 0, 2)).toBe(home);
    const moved = pair(router, 0, 3);
    expect(moved).not.toBe(home);
    expect(moved).toBe(router.rank({ body: ask("x") }).targets[1]!.id);
    // Alone, the key still goes home.
    expect(router.route({ body: ask("alone") }).target.id).toBe(home);
  });

  it('"auto" keeps a running key on a target that serves second requests warm (a shared paged cache)', async () => {
    const router = await createRouter({ targets });
    const home = router.rank({ body: ask("x") }).targets[0]!.id;
    router.route({ body: ask("warm") }).release("success", { promptTokens: 800, cachedTokens: 0 });
    for (let i = 0; i < 10; i++) expect(pair(router, 700, i)).toBe(home);
  });

  it("true spreads at once, false never; in-flight counts end at zero", async () => {
    const always = await createRouter({ targets, prefixAware: { spreadRunningKeys: true } });
    const never = await createRouter({ targets, prefixAware: { spreadRunningKeys: false } });
    const home = always.rank({ body: ask("x") }).targets[0]!.id;
    expect(pair(always, 700, 0)).not.toBe(home);
    for (let i = 0; i < 5; i++) expect(pair(never, 0, i)).toBe(home);
    for (const r of [always, never]) expect(r.stats().targets.every((t) => t.inflight === 0)).toBe(true);
  });
});
