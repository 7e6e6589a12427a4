/** The JSON sniffer both adapters read request bodies with. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { firstNonSpace, isJsonBody, mayBeJson, parseObject } from "../../src/adapter/json.js";
import { codeOf } from "../support.js";

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

describe("mayBeJson", () => {
  it("is true for every JSON text, as a string or as UTF-8 bytes, whatever whitespace leads", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.stringMatching(/^[ \t\r\n]{0,4}$/), (value, lead) => {
        const text = lead + JSON.stringify(value);
        expect(mayBeJson(text)).toBe(true);
        expect(mayBeJson(enc(text))).toBe(true);
      }),
    );
  });

  it("is false for CSV, plain text, binary, empty bodies and whitespace JSON does not allow", () => {
    for (const body of ["a,b\n1,2", "hello", "", "  \n", "\u00a0{}", "\ufeff{}", new Uint8Array([0xff, 0xfe]), new Uint8Array()]) {
      expect(mayBeJson(body)).toBe(false);
    }
  });
});

describe("parseObject", () => {
  it("returns the object a string or UTF-8 bytes spell", () => {
    expect(parseObject(' \n{"model":"m","n":1}')).toEqual({ model: "m", n: 1 });
    expect(parseObject(enc('\t{"a":["é"]}'))).toEqual({ a: ["é"] });
  });

  it("refuses invalid UTF-8 with ERR_INVALID_JSON: the server would get those bytes, not replacement characters", () => {
    const bytes = new Uint8Array([...enc('{"a":"'), 0xff, ...enc('"}')]);
    expect(codeOf(() => parseObject(bytes))).toBe("ERR_INVALID_JSON");
  });

  it("throws ERR_INVALID_BODY for JSON that is no object, ERR_INVALID_JSON for anything that does not parse", () => {
    for (const body of ["[1]", "null", "1", '"{}"']) expect(codeOf(() => parseObject(body))).toBe("ERR_INVALID_BODY");
    for (const body of ['{"a":', "{} x", "not json", "\u00a0{}", "\ufeff{}"]) expect(codeOf(() => parseObject(body))).toBe("ERR_INVALID_JSON");
    // UTF-8 bytes may start with a byte order mark, which decoding drops.
    expect(parseObject(enc("\ufeff{}"))).toEqual({});
  });
});

describe("isJsonBody", () => {
  it("trusts a JSON content type, sniffs without one or with text/plain, and takes any other type at its word", () => {
    expect(isJsonBody("x", "application/json; charset=utf-8")).toBe(true);
    expect(isJsonBody("x", "application/vnd.api+json")).toBe(true);
    expect(isJsonBody('{"a":1}', undefined)).toBe(true);
    expect(isJsonBody('{"a":1}', null)).toBe(true);
    expect(isJsonBody('{"a":1}', "text/plain;charset=UTF-8")).toBe(true);
    expect(isJsonBody("hello", "text/plain")).toBe(false);
    expect(isJsonBody('{"a":1}', "multipart/form-data; boundary=x")).toBe(false);
    expect(isJsonBody('{"a":1}', "application/octet-stream")).toBe(false);
  });
});

describe("firstNonSpace", () => {
  it("skips exactly JSON's four whitespace characters", () => {
    expect(firstNonSpace(" \t\r\nx")).toBe(0x78);
    expect(firstNonSpace(enc(" \u00a0"))).toBe(0xc2);
    expect(firstNonSpace(" \t")).toBe(-1);
  });
});
