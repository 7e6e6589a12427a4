import { describe, expectTypeOf, it } from "vitest";
import { createRouter, isRouterError, routingInput, type Decision, type Lease, type PickKind, type Ranking, type RouteRequest, type Router, type RouterError, type RouterErrorCode, type RouterOptions, type RouterStats, type TargetSpec } from "prefix-router";

interface Replica extends TargetSpec {
  readonly url: string;
  readonly zone: "a" | "b";
}

const replicas: Replica[] = [
  { id: "r0", url: "http://10.0.0.1:8000", zone: "a" },
  { id: "r1", url: "http://10.0.0.2:8000", zone: "b", weight: 2, models: ["llama"] },
];

describe("public API types", () => {
  it("a custom target type flows from createRouter through Router, Lease, Ranking and Decision", async () => {
    const router = await createRouter({
      targets: replicas,
      onDecision: (d) => {
        expectTypeOf(d).toEqualTypeOf<Decision<Replica>>();
        expectTypeOf(d.target.url).toBeString();
      },
    });
    expectTypeOf(router).toEqualTypeOf<Router<Replica>>();
    const lease = router.route({ body: { messages: [{ role: "user", content: "hi" }] } });
    expectTypeOf(lease).toEqualTypeOf<Lease<Replica>>();
    expectTypeOf(lease.target).toEqualTypeOf<Replica>();
    expectTypeOf(lease.target.zone).toEqualTypeOf<"a" | "b">();
    expectTypeOf(lease.kind).toEqualTypeOf<PickKind>();
    expectTypeOf(lease.key).toEqualTypeOf<string | undefined>();
    expectTypeOf(lease.release).parameters.toMatchTypeOf<[("success" | "cancelled" | "client-error" | "server-error" | "connect-error")?, { promptTokens?: number; cachedTokens?: number }?]>();
    expectTypeOf(router.rank({})).toEqualTypeOf<Ranking<Replica>>();
    expectTypeOf(router.rank({}).targets).toEqualTypeOf<Replica[]>();
    expectTypeOf(router.targets()).toEqualTypeOf<readonly Replica[]>();
    expectTypeOf(router.setTargets).parameter(0).toEqualTypeOf<readonly Replica[]>();
    expectTypeOf(router.stats()).toEqualTypeOf<RouterStats>();
    lease.release();
  });

  it("plain targets default to TargetSpec", async () => {
    const router = await createRouter({ targets: [{ id: "a" }, { id: "b", weight: 0 }] });
    expectTypeOf(router.route({}).target).toMatchTypeOf<TargetSpec>();
    expectTypeOf(router.route({}).target.id).toBeString();
    expectTypeOf<Router>().toEqualTypeOf<Router<TargetSpec>>();
  });

  it("options and requests are checked", () => {
    expectTypeOf(createRouter<Replica>).parameter(0).toEqualTypeOf<RouterOptions<Replica>>();
    expectTypeOf<{ targets: Replica[]; strategy: "fastest" }>().not.toMatchTypeOf<RouterOptions<Replica>>();
    expectTypeOf<{ targets: Replica[]; mode: "chars" }>().not.toMatchTypeOf<RouterOptions<Replica>>();
    expectTypeOf<{ targets: { url: string }[] }>().not.toMatchTypeOf<RouterOptions>();
    expectTypeOf<{ body: unknown; tenant: string; model: string }>().toMatchTypeOf<RouteRequest>();
    expectTypeOf<{ tenant: number }>().not.toMatchTypeOf<RouteRequest>();
    expectTypeOf(createRouter).returns.toEqualTypeOf<Promise<Router<TargetSpec>>>();
  });

  it("routingInput returns a string in text mode and bytes in bytes mode", () => {
    expectTypeOf(routingInput({}, { mode: "text", prefixLength: 4096 })).toEqualTypeOf<string>();
    expectTypeOf(routingInput({}, { mode: "bytes", prefixLength: 4096 })).toEqualTypeOf<Uint8Array>();
  });

  it("isRouterError narrows to RouterError with a typed code", () => {
    const e: unknown = new Error("x");
    if (isRouterError(e)) {
      expectTypeOf(e).toEqualTypeOf<RouterError>();
      expectTypeOf(e.code).toEqualTypeOf<RouterErrorCode>();
      expectTypeOf(e.position).toEqualTypeOf<number | undefined>();
    }
    expectTypeOf<"ERR_CYCLE">().toMatchTypeOf<RouterErrorCode>();
    expectTypeOf<"ERR_SOMETHING">().not.toMatchTypeOf<RouterErrorCode>();
  });
});
