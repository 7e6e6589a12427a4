import {
  InvokeEndpointCommand,
  InvokeEndpointWithResponseStreamCommand,
  ModelError,
  ModelNotReadyException,
  ModelStreamError,
  SageMakerRuntimeClient,
  ServiceUnavailable,
  ValidationError,
} from "@aws-sdk/client-sagemaker-runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_MODEL, startFleet, type LiveFleet } from "prefix-router/fleet";
import { fillerText } from "../../../tools/fleet/tokenizer.js";

const DOC = "Retrieved document: the warranty covers parts and labour for two years. ".repeat(40);

let fleet: LiveFleet;
let client: SageMakerRuntimeClient;

beforeAll(async () => {
  fleet = await startFleet({
    instances: 1,
    timeScale: 0.005,
    models: [DEFAULT_MODEL, "adapter-b"],
    sagemaker: { variants: ["AllTraffic", "Canary"], inferenceComponents: { "ic-b": "adapter-b", "ic-a": DEFAULT_MODEL } },
  });
  client = new SageMakerRuntimeClient({
    endpoint: fleet.urls[0],
    region: "us-east-1",
    credentials: { accessKeyId: "x", secretAccessKey: "y" },
    maxAttempts: 1,
  });
});
afterAll(async () => {
  client.destroy();
  await fleet.stop();
});

const encode = (v: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(v));
const decode = (b: Uint8Array | undefined): string => new TextDecoder().decode(b);

function attributes(s: string | undefined): Record<string, string> {
  return Object.fromEntries((s ?? "").split(",").map((kv) => kv.split("=") as [string, string]));
}

async function collect(body: AsyncIterable<{ PayloadPart?: { Bytes?: Uint8Array } }> | undefined): Promise<string> {
  let out = "";
  for await (const ev of body!) out += decode(ev.PayloadPart?.Bytes);
  return out;
}

describe("SageMaker Runtime API with the AWS SDK v3", () => {
  it("invokes with a TGI body: cached tokens 0 then the shared prefix, instance in CustomAttributes", async () => {
    const send = (q: string) =>
      client.send(
        new InvokeEndpointCommand({
          EndpointName: "fleet",
          ContentType: "application/json",
          Body: encode({ inputs: `${DOC}Question: ${q}`, parameters: { max_new_tokens: 5 } }),
        }),
      );
    const a = await send("how long?");
    expect(a.InvokedProductionVariant).toBe("AllTraffic");
    expect(a.ContentType).toBe("application/json");
    const bodyA = JSON.parse(decode(a.Body)) as { generated_text: string; details: { cached_tokens: number; prompt_tokens: number } };
    expect(bodyA.generated_text).toBe(fillerText(5));
    expect(bodyA.details.cached_tokens).toBe(0);
    expect(attributes(a.CustomAttributes)).toEqual({ instance: "i0", prompt_tokens: String(bodyA.details.prompt_tokens), cached_tokens: "0" });
    const b = await send("what is covered?");
    const cached = Number(attributes(b.CustomAttributes).cached_tokens);
    expect(cached).toBe(Math.floor(("<|begin_of_text|>" + DOC + "Question: ").length / 64) * 16);
  });

  it("streams PayloadPart events (TGI JSON lines) that the SDK decodes", async () => {
    const res = await client.send(
      new InvokeEndpointWithResponseStreamCommand({
        EndpointName: "fleet",
        ContentType: "application/json",
        Body: encode({ inputs: `${DOC}Stream please`, parameters: { max_new_tokens: 4 } }),
      }),
    );
    expect(res.InvokedProductionVariant).toBe("AllTraffic");
    expect(res.ContentType).toBe("application/jsonlines");
    const lines = (await collect(res.Body)).trim().split("\n").map((l) => JSON.parse(l) as { token: { text: string }; generated_text: string | null; details: unknown });
    expect(lines).toHaveLength(4);
    expect(lines.map((l) => l.token.text).join("")).toBe(fillerText(4));
    expect(lines.at(-1)!.generated_text).toBe(fillerText(4));
    expect(lines[0]!.generated_text).toBeNull();
    expect(Number(attributes(res.CustomAttributes).cached_tokens)).toBeGreaterThan(0);
  });

  it("serves the OpenAI messages style, streaming and not", async () => {
    const body = { messages: [{ role: "system", content: DOC }, { role: "user", content: "hi" }], max_tokens: 3 };
    const r = await client.send(new InvokeEndpointCommand({ EndpointName: "fleet", ContentType: "application/json", Body: encode(body) }));
    const json = JSON.parse(decode(r.Body)) as { choices: { message: { content: string } }[]; usage: { prompt_tokens_details: { cached_tokens: number } } };
    expect(json.choices[0]!.message.content).toBe(fillerText(3));
    const s = await client.send(new InvokeEndpointWithResponseStreamCommand({ EndpointName: "fleet", ContentType: "application/json", Body: encode(body) }));
    const text = await collect(s.Body);
    const events = text.split("\n\n").filter(Boolean);
    expect(events.at(-1)).toBe("data: [DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice("data: ".length)) as { choices: { delta: { content?: string } }[]; usage?: { prompt_tokens_details: { cached_tokens: number } } });
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe(fillerText(3));
    expect(json.usage.prompt_tokens_details.cached_tokens).toBe(0);
    const prefixChars = "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n".length + DOC.length;
    expect(chunks.at(-1)!.usage!.prompt_tokens_details.cached_tokens).toBeGreaterThanOrEqual(Math.floor(prefixChars / 64) * 16);
  });

  it("honours the target variant and inference component headers", async () => {
    const body = encode({ inputs: `${DOC} component`, parameters: { max_new_tokens: 1 } });
    const canary = await client.send(new InvokeEndpointCommand({ EndpointName: "fleet", Body: body, ContentType: "application/json", TargetVariant: "Canary" }));
    expect(canary.InvokedProductionVariant).toBe("Canary");
    // Same text on another inference component (another model): no shared cache.
    const other = await client.send(new InvokeEndpointCommand({ EndpointName: "fleet", Body: body, ContentType: "application/json", InferenceComponentName: "ic-b" }));
    expect(attributes(other.CustomAttributes).cached_tokens).toBe("0");
    const same = await client.send(new InvokeEndpointCommand({ EndpointName: "fleet", Body: body, ContentType: "application/json", InferenceComponentName: "ic-a" }));
    expect(Number(attributes(same.CustomAttributes).cached_tokens)).toBeGreaterThan(0);
    await expect(
      client.send(new InvokeEndpointCommand({ EndpointName: "fleet", Body: body, ContentType: "application/json", TargetVariant: "Nope" })),
    ).rejects.toBeInstanceOf(ValidationError);
    await expect(
      client.send(new InvokeEndpointCommand({ EndpointName: "fleet", Body: body, ContentType: "application/json", InferenceComponentName: "nope" })),
    ).rejects.toBeInstanceOf(ValidationError);
  });

  it("maps model errors, not-ready and unavailable to the SDK's classes", async () => {
    const bad = client.send(new InvokeEndpointCommand({ EndpointName: "fleet", Body: encode({ nothing: 1 }), ContentType: "application/json" }));
    await expect(bad).rejects.toBeInstanceOf(ModelError);
    await expect(bad).rejects.toMatchObject({ OriginalStatusCode: 400, $metadata: { httpStatusCode: 424 } });
    const inst = fleet.instance("i0");
    const ok = encode({ inputs: "ping", parameters: { max_new_tokens: 1 } });
    await inst.setFaults({ notReady: true });
    await expect(client.send(new InvokeEndpointCommand({ EndpointName: "fleet", Body: ok }))).rejects.toBeInstanceOf(ModelNotReadyException);
    expect((await fetch(`${fleet.urls[0]}/ping`)).status).toBe(503);
    await inst.setFaults({ notReady: false, errorRate: 1, errorStatus: 503 });
    const unavailable = client.send(new InvokeEndpointCommand({ EndpointName: "fleet", Body: ok }));
    await expect(unavailable).rejects.toBeInstanceOf(ServiceUnavailable);
    await expect(unavailable).rejects.toMatchObject({ message: "Injected fault: service unavailable." });
    await inst.setFaults({ errorStatus: 500 });
    await expect(client.send(new InvokeEndpointCommand({ EndpointName: "fleet", Body: ok }))).rejects.toMatchObject({
      name: "ModelError",
      OriginalStatusCode: 500,
    });
    await inst.setFaults({ errorRate: 0 });
    expect((await fetch(`${fleet.urls[0]}/ping`)).status).toBe(200);
  });

  it("raises ModelStreamError from a mid-stream fault", async () => {
    const inst = fleet.instance("i0");
    await inst.setFaults({ streamErrorRate: 1 });
    try {
      const res = await client.send(
        new InvokeEndpointWithResponseStreamCommand({ EndpointName: "fleet", Body: encode({ inputs: "abc", parameters: { max_new_tokens: 6 } }) }),
      );
      const got: string[] = [];
      const err = await (async () => {
        try {
          for await (const ev of res.Body!) got.push(decode(ev.PayloadPart?.Bytes));
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(err).toBeInstanceOf(ModelStreamError);
      expect(err).toMatchObject({ ErrorCode: "ModelStreamError" });
      expect(got).toHaveLength(3);
    } finally {
      await inst.setFaults({ streamErrorRate: 0 });
    }
  });
});
