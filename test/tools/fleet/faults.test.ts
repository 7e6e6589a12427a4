import OpenAI from "openai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DEFAULT_MODEL, startFleet, type LiveFleet } from "prefix-router/fleet";

let fleet: LiveFleet;
let client: OpenAI;

beforeEach(async () => {
  fleet = await startFleet({ instances: 2, timeScale: 0.005, seed: 3 });
  client = new OpenAI({ baseURL: `${fleet.urls[0]}/v1`, apiKey: "unused", maxRetries: 0 });
});
afterEach(() => fleet.stop());

/** Polls `cond` every 5 ms (bounded: 10 s), for states reached through the network. */
async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 2000 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(cond()).toBe(true);
}

const ask = (content: string, max_tokens = 4) => client.chat.completions.create({ model: DEFAULT_MODEL, messages: [{ role: "user", content }], max_tokens });

describe("fault knobs", () => {
  it("down refuses connections and aborts in-flight requests; up serves again on the same port", async () => {
    const inst = fleet.instance("i0");
    const inflight = ask("long answer please", 100_000 - 100);
    // It fails while `down` takes effect, before the assertion below looks at it.
    inflight.catch(() => {});
    await until(() => inst.stats().running === 1);
    await inst.setFaults({ down: true });
    await expect(inflight).rejects.toBeInstanceOf(OpenAI.APIConnectionError);
    const refused = await ask("anyone there?").catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.APIConnectionError);
    expect(String((refused as { cause?: { cause?: { code?: string } } }).cause?.cause?.code ?? (refused as Error).cause)).toMatch(/ECONNREFUSED/);
    expect(inst.stats()).toMatchObject({ running: 0, waiting: 0 });
    expect(inst.engine.stats().aborted).toBe(1);
    // The other instance is unaffected.
    const other = new OpenAI({ baseURL: `${fleet.urls[1]}/v1`, apiKey: "unused", maxRetries: 0 });
    await expect(other.chat.completions.create({ model: DEFAULT_MODEL, messages: [{ role: "user", content: "x" }], max_tokens: 1 })).resolves.toBeDefined();
    await inst.setFaults({ down: false });
    expect((await ask("back?")).choices).toHaveLength(1);
    expect(inst.url).toBe(fleet.urls[0]);
  });

  it("errorRate answers HTTP 500 or 503, drawn from the seeded source", async () => {
    const inst = fleet.instance("i0");
    await inst.setFaults({ errorRate: 1 });
    await expect(ask("x")).rejects.toMatchObject({ status: 500 });
    await inst.setFaults({ errorStatus: 503 });
    const err = await ask("x").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect(err).toMatchObject({ status: 503 });
    await inst.setFaults({ errorRate: 0.5 });
    const outcomes: boolean[] = [];
    for (let i = 0; i < 40; i++) outcomes.push(await ask(`q${i}`, 1).then(() => true, () => false));
    const ok = outcomes.filter(Boolean).length;
    expect(ok).toBeGreaterThan(5);
    expect(ok).toBeLessThan(35);
    await inst.setFaults({ errorRate: 0 });
    expect(inst.stats().requests).toBe(ok);
  });

  it("resetStreamRate cuts the connection in the middle of a stream", async () => {
    await fleet.instance("i0").setFaults({ resetStreamRate: 1 });
    const stream = await client.chat.completions.create({ model: DEFAULT_MODEL, messages: [{ role: "user", content: "stream" }], max_tokens: 10, stream: true });
    const got: string[] = [];
    const err = await (async () => {
      try {
        for await (const c of stream) got.push(c.choices[0]?.delta.content ?? "");
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(Error);
    expect(got.join("").length).toBe(5 * 4); // role chunk + 5 of 10 tokens
    await until(() => fleet.instance("i0").engine.stats().aborted === 1);
    // Non-streaming responses are not affected by this knob.
    expect((await ask("whole")).choices[0]?.finish_reason).toBe("length");
  });

  it("streamErrorRate ends a stream with an in-band error the client raises", async () => {
    await fleet.instance("i0").setFaults({ streamErrorRate: 1 });
    const stream = await client.chat.completions.create({ model: DEFAULT_MODEL, messages: [{ role: "user", content: "stream" }], max_tokens: 4, stream: true });
    const err = await (async () => {
      try {
        for await (const _ of stream) void _;
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(String((err as Error).message)).toMatch(/Injected fault/);
  });

  it("slowdown multiplies the model TTFT", async () => {
    const ttft = async (url: string, content: string): Promise<number> => {
      const c = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 });
      const r = await c.chat.completions.create({ model: DEFAULT_MODEL, messages: [{ role: "user", content }], max_tokens: 1 }).withResponse();
      return Number(r.response.headers.get("x-prefix-router-ttft-ms"));
    };
    const text = "a cold prompt of fixed length ".repeat(300);
    const normal = await ttft(fleet.urls[0]!, text);
    await fleet.instance("i1").setFaults({ slowdown: 4 });
    const slow = await ttft(fleet.urls[1]!, text);
    expect(slow / normal).toBeCloseTo(4, 2);
  });

  it("notReady fails health checks and requests with 503 until cleared", async () => {
    const inst = fleet.instance("i0");
    await inst.setFaults({ notReady: true });
    expect((await fetch(`${inst.url}/health`)).status).toBe(503);
    await expect(ask("x")).rejects.toMatchObject({ status: 503 });
    await inst.setFaults({ notReady: false });
    expect((await fetch(`${inst.url}/health`)).status).toBe(200);
    expect((await ask("x")).choices).toHaveLength(1);
  });

  it("validates knobs", async () => {
    await expect(fleet.instance("i0").setFaults({ errorRate: 2 })).rejects.toThrow(/`errorRate`/);
    await expect(fleet.instance("i0").setFaults({ slowdown: 0 })).rejects.toThrow(/`slowdown`/);
    expect(fleet.instance("i0").faults.errorRate).toBe(0);
  });
});
