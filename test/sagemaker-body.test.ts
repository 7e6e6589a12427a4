/**
 * The SageMaker adapter's pure parts: what goes on the wire (canonical JSON or untouched bytes),
 * how request bodies are read, how usage is found in a streamed response however its payload
 * parts are cut, and how failures are judged.
 */
import { Readable } from "node:stream";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalize } from "prefix-router";
import { StreamUsage, prepareBody, readBody, usageOfBody } from "../src/sagemaker/body.js";
import { judgeSageMakerError } from "../src/sagemaker/errors.js";

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const dec = (b: unknown): string => (typeof b === "string" ? b : new TextDecoder().decode(b as Uint8Array));

describe("prepareBody", () => {
  it("sends any JSON value, however it is spelled, as its canonical bytes, and routes on the value", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.integer({ min: 0, max: 4 }), fc.boolean(), (value, indent, asBytes) => {
        const spelled = JSON.stringify(value, null, indent);
        const { wire, routing } = prepareBody(asBytes ? enc(spelled) : spelled, "application/json", true);
        expect(dec(wire)).toBe(canonicalize(value));
        expect(canonicalize(routing)).toBe(canonicalize(value));
      }),
    );
  });

  it.each([
    ["application/json", true],
    ["application/json; charset=utf-8", true],
    ["APPLICATION/JSON", true],
    ["text/json", true],
    ["application/vnd.api+json", true],
    [undefined, true],
    ["text/csv", false],
    ["text/plain", false],
    ["application/jsonlines", false],
    ["application/x-ndjson", false],
    ["application/octet-stream", false],
  ])("content type %s: canonicalized = %s", (contentType, canonical) => {
    const body = '{ "b": 1.50, "a": [1, 2] }';
    const { wire } = prepareBody(body, contentType, true);
    expect(dec(wire)).toBe(canonical ? '{"a":[1,2],"b":1.5}' : body);
  });

  it("keeps bodies that are not JSON, and everything when canonicalizeBody is off, as the same object", () => {
    const bytes = enc("1.50,2\n3,4\n");
    for (const body of [bytes, "not json", '{"a":1} trailing', enc("\u00ff{")]) {
      expect(prepareBody(body, "application/json", true).wire).toBe(body);
    }
    const json = enc('{ "b": 1, "a": 2 }');
    expect(prepareBody(json, "application/json", false)).toEqual({ wire: json, routing: json });
    expect(prepareBody(undefined, "application/json", true)).toEqual({ wire: undefined, routing: undefined });
  });

  it("fails like the router does on a body it cannot canonicalize", () => {
    const deep = "[".repeat(2000) + "]".repeat(2000);
    expect(() => prepareBody(deep, "application/json", true)).toThrowError(expect.objectContaining({ code: "ERR_TOO_DEEP" }));
  });
});

describe("readBody", () => {
  const text = '{"inputs":"hello ☃"}';
  it.each([
    ["a string", () => text],
    ["bytes", () => enc(text)],
    ["an ArrayBuffer", () => enc(text).buffer],
    ["a DataView", () => new DataView(enc(`xx${text}`).buffer, 2)],
    ["a Blob", () => new Blob([text])],
    ["a Node.js Readable", () => Readable.from([enc(text.slice(0, 5)), text.slice(5)])],
    [
      "a web ReadableStream",
      () =>
        new ReadableStream<Uint8Array>({
          start(c) {
            c.enqueue(enc(text.slice(0, 3)));
            c.enqueue(enc(text.slice(3)));
            c.close();
          },
        }),
    ],
  ])("reads %s", async (_name, make) => {
    expect(dec(await readBody(make()))).toBe(text);
  });

  it("keeps strings and byte arrays without copying, and rejects what is not a body", async () => {
    const bytes = enc(text);
    expect(await readBody(bytes)).toBe(bytes);
    expect(await readBody(undefined)).toBeUndefined();
    await expect(readBody(42)).rejects.toThrow("Expected the command's `Body` to be a string, bytes, a Blob or a stream, got 42");
    await expect(readBody(Readable.from([{ a: 1 }]))).rejects.toThrow("Expected the command's `Body` stream to yield strings or bytes, got an object");
  });
});

describe("usage", () => {
  const usage = { prompt_tokens: 1200, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 1024 } };
  const expected = { promptTokens: 1200, cachedTokens: 1024 };
  const sse = [
    `data: ${JSON.stringify({ choices: [{ delta: { content: "Hi" } }] })}\n\n`,
    `data: ${JSON.stringify({ choices: [], usage })}\n\n`,
    "data: [DONE]\n\n",
  ].join("");
  const jsonLines = [
    `${JSON.stringify({ token: { text: "a" }, generated_text: null })}\n`,
    `${JSON.stringify({ token: { text: "b" }, generated_text: "ab", details: {}, usage })}\n`,
  ].join("");

  it("finds usage in SSE and JSON lines wherever the payload parts are cut", () => {
    fc.assert(
      fc.property(fc.constantFrom(sse, jsonLines), fc.uniqueArray(fc.nat(), { maxLength: 12 }), (payload, rawCuts) => {
        const bytes = enc(payload);
        const cuts = [...new Set(rawCuts.map((c) => c % bytes.length))].sort((a, b) => a - b);
        const scanner = new StreamUsage();
        let from = 0;
        for (const cut of [...cuts, bytes.length]) {
          scanner.feed(bytes.subarray(from, cut));
          from = cut;
        }
        expect(scanner.finish()).toEqual(expected);
      }),
    );
  });

  it("finds usage in parts that are each one JSON object without newlines, and keeps the last report", () => {
    const scanner = new StreamUsage();
    scanner.feed(enc(JSON.stringify({ token: "a" })));
    scanner.feed(enc(JSON.stringify({ usage: { prompt_tokens: 1, prompt_tokens_details: { cached_tokens: 0 } } })));
    scanner.feed(enc(JSON.stringify({ token: "b" })));
    scanner.feed(enc(JSON.stringify({ usage })));
    expect(scanner.finish()).toEqual(expected);
  });

  it("reports nothing without cached tokens (a server that does not count them) or without usage", () => {
    const scanner = new StreamUsage();
    scanner.feed(enc(`data: ${JSON.stringify({ usage: { prompt_tokens: 10 } })}\n\n`));
    expect(scanner.finish()).toBeUndefined();
    expect(new StreamUsage().finish()).toBeUndefined();
  });

  it("reads usage at the end of a whole JSON response body", () => {
    expect(usageOfBody(enc(JSON.stringify({ generated_text: "x".repeat(100_000), usage })))).toEqual(expected);
    expect(usageOfBody(enc('[{"generated_text":"no usage"}]'))).toBeUndefined();
    expect(usageOfBody(enc("not json"))).toBeUndefined();
    expect(usageOfBody(undefined)).toBeUndefined();
  });
});

describe("judgeSageMakerError", () => {
  const sdkError = (name: string, fault: "client" | "server", status: number, extra: object = {}) =>
    Object.assign(new Error(name), { name, $fault: fault, $metadata: { httpStatusCode: status } }, extra);
  const netError = (code: string, extra: object = {}) => Object.assign(new Error(code), { code }, extra);

  it.each([
    ["ServiceUnavailable", sdkError("ServiceUnavailable", "server", 503), { retry: true, outcome: "server-error" }],
    ["ModelNotReadyException", sdkError("ModelNotReadyException", "client", 429), { retry: true, outcome: "server-error" }],
    ["ECONNREFUSED", netError("ECONNREFUSED"), { retry: true, outcome: "connect-error" }],
    ["ECONNRESET before any response", netError("ECONNRESET"), { retry: true, outcome: "connect-error" }],
    ["ECONNREFUSED inside an AggregateError", new AggregateError([netError("ECONNREFUSED")]), { retry: true, outcome: "connect-error" }],
    ["the SDK's TimeoutError for a reset socket", Object.assign(netError("ECONNRESET"), { name: "TimeoutError" }), { retry: true, outcome: "connect-error" }],
    ["ECONNRESET after the response began", netError("ECONNRESET", { $response: { statusCode: 200 } }), { retry: false, outcome: "connect-error" }],
    ["a request timeout", Object.assign(new Error("t"), { name: "TimeoutError" }), { retry: false, outcome: "server-error" }],
    ["InternalFailure", sdkError("InternalFailure", "server", 500), { retry: false, outcome: "server-error" }],
    ["ModelError for a container 500", sdkError("ModelError", "client", 424, { OriginalStatusCode: 500 }), { retry: false, outcome: "server-error" }],
    ["ModelError for a container 400", sdkError("ModelError", "client", 424, { OriginalStatusCode: 400 }), { retry: false, outcome: "client-error" }],
    ["ValidationError", sdkError("ValidationError", "client", 400), { retry: false, outcome: "client-error" }],
    ["ModelStreamError", sdkError("ModelStreamError", "client", 200), { retry: false, outcome: "server-error" }],
    ["InternalStreamFailure", sdkError("InternalStreamFailure", "server", 200), { retry: false, outcome: "server-error" }],
    ["an abort", Object.assign(new Error("a"), { name: "AbortError" }), { retry: false, outcome: "cancelled" }],
    ["a local error (no credentials)", Object.assign(new Error("c"), { name: "CredentialsProviderError" }), { retry: false, outcome: "cancelled" }],
    ["a thrown string", "boom", { retry: false, outcome: "cancelled" }],
  ])("%s", (_name, error, verdict) => {
    expect(judgeSageMakerError(error)).toEqual(verdict);
  });
});
