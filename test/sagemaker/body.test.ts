/**
 * The SageMaker adapter's request bodies: what goes on the wire (canonical JSON or untouched
 * bytes) and how request bodies are read.
 */
import { Readable } from "node:stream";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalize } from "prefix-router";
import { prepareBody, readBody } from "../../src/sagemaker/body.js";

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

  it("sends a body nested deeper than canonicalize goes as it came, and routes on its raw bytes", () => {
    const deep = "[".repeat(2000) + "]".repeat(2000);
    const prepared = prepareBody(deep, "application/json", true);
    expect(prepared).toMatchObject({ routing: deep, wire: deep });
    // Still read as JSON, so that isolation can check and salt it.
    expect(Array.isArray(prepared.json)).toBe(true);
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
