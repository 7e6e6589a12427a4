/** The JSON sniffer both adapters read request bodies with. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { firstNonSpace, mayBeJson, parseObject } from "../../src/adapter/json.js";

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

  it("reads invalid UTF-8 inside a JSON string as replacement characters, as fetch does", () => {
    const bytes = new Uint8Array([...enc('{"a":"'), 0xff, ...enc('"}')]);
    expect(parseObject(bytes)).toEqual({ a: "\ufffd" });
  });

  it("is undefined for JSON that is no object, for broken JSON and for anything else", () => {
    for (const body of ["[1]", "null", "1", '"{}"', '{"a":', "{} x", "not json", "\u00a0{}", enc("\ufeff{}")]) {
      expect(parseObject(body)).toBeUndefined();
    }
  });
});

describe("firstNonSpace", () => {
  it("skips exactly JSON's four whitespace characters", () => {
    expect(firstNonSpace(" \t\r\nx")).toBe(0x78);
    expect(firstNonSpace(enc(" \u00a0"))).toBe(0xc2);
    expect(firstNonSpace(" \t")).toBe(-1);
  });
});
