import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalize, canonicalizeJson, isRouterError, routingInput, LIMITS } from "prefix-router";
import { canonicalPrefix } from "../../src/routing/canonical-json.js";
import { parseJsonText } from "../../src/internal/json-parse.js";
import { codeOf } from "../support.js";
import { Rng } from "../../tools/sim/random.js";

/** A seeded PRNG (the package's sfc32), so generated data is reproducible from its seed. */
function prng(seed: number): () => number {
  return new Rng(seed).asFunction();
}

/** A deep copy of a JSON value with the keys of every object inserted in a shuffled order. */
function shuffleKeys(value: unknown, random: () => number): unknown {
  if (Array.isArray(value)) return value.map((v) => shuffleKeys(v, random));
  if (value === null || typeof value !== "object") return value;
  const keys = Object.keys(value);
  for (let i = keys.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [keys[i], keys[j]] = [keys[j] as string, keys[i] as string];
  }
  const out: Record<string, unknown> = {};
  for (const k of keys) {
    // defineProperty: a "__proto__" key must stay an own data member, as JSON.parse makes it.
    Object.defineProperty(out, k, {
      value: shuffleKeys((value as Record<string, unknown>)[k], random),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/** Compact JSON text of a value with random insignificant whitespace between tokens. */
function withWhitespace(value: unknown, random: () => number): string {
  const ws = () => [" ", "\n", "\t", "\r\n  ", ""][Math.floor(random() * 5)] as string;
  const go = (v: unknown): string => {
    if (Array.isArray(v)) return `[${ws()}${v.map((x) => go(x)).join(`${ws()},${ws()}`)}${ws()}]`;
    if (v !== null && typeof v === "object") {
      const members = Object.keys(v).map((k) => `${JSON.stringify(k)}${ws()}:${ws()}${go((v as Record<string, unknown>)[k])}`);
      return `{${ws()}${members.join(`${ws()},${ws()}`)}${ws()}}`;
    }
    return JSON.stringify(v);
  };
  return `${ws()}${go(value)}${ws()}`;
}

function nest(depth: number, kind: "array" | "object"): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = kind === "array" ? [v] : { a: v };
  return v;
}

const json = fc.jsonValue({ maxDepth: 5 });
/** Values JSON.stringify accepts; boxed primitives excluded (see the note in the law below). */
const jsLike = fc.anything({
  maxDepth: 4,
  withBoxedValues: false,
  withBigInt: false,
  withDate: true,
  withTypedArray: true,
  withSparseArray: true,
  withNullPrototype: true,
  withObjectString: true,
});

describe("canonicalize — laws", () => {
  it("is idempotent: canonicalizing canonical text changes nothing", () => {
    fc.assert(
      fc.property(json, (x) => {
        const once = canonicalize(x);
        expect(canonicalizeJson(once)).toBe(once);
        expect(canonicalize(parseJsonText(once))).toBe(once);
      }),
    );
  });

  it("is invariant under key reordering at every depth", () => {
    fc.assert(
      fc.property(json, fc.integer(), (x, seed) => {
        expect(canonicalize(shuffleKeys(x, prng(seed)))).toBe(canonicalize(x));
      }),
    );
  });

  it("JSON.parse(canonicalize(x)) deep-equals JSON.parse(JSON.stringify(x))", () => {
    // Read with parseJsonText: on Node.js 24 JSON.parse can misread an escaped key (nodejs/node#63785).
    // Boxed primitives (new Number(1)) are left out: fast-json-stable-stringify serializes them
    // as objects ({} / {"0":"a"}), JSON.stringify unboxes them. Request bodies never hold them.
    fc.assert(
      fc.property(jsLike, (x) => {
        const expected = JSON.stringify(x);
        if (expected === undefined) {
          expect(codeOf(() => canonicalize(x))).toBe("ERR_UNSERIALIZABLE");
          return;
        }
        expect(parseJsonText(canonicalize(x))).toEqual(parseJsonText(expected));
      }),
      { numRuns: 300 },
    );
  });

  it("two JSON texts that differ only in whitespace or key order canonicalize to the same string", () => {
    fc.assert(
      fc.property(json, fc.integer(), fc.integer(), (x, s1, s2) => {
        const a = withWhitespace(shuffleKeys(x, prng(s1)), prng(s2));
        const b = withWhitespace(shuffleKeys(x, prng(s2)), prng(s1));
        expect(canonicalizeJson(a)).toBe(canonicalizeJson(b));
        expect(canonicalizeJson(new TextEncoder().encode(a))).toBe(canonicalizeJson(b));
      }),
    );
  });
});

describe("canonicalize — explicit cases", () => {
  it("sorts keys by UTF-16 code units and drops insignificant whitespace", () => {
    expect(canonicalize({ b: 1, a: [true, undefined], B: null, é: 2, "10": 0, "2": 0 })).toBe(
      '{"10":0,"2":0,"B":null,"a":[true,null],"b":1,"é":2}',
    );
    expect(canonicalizeJson('{ "b": 1,\n  "a": 2 }')).toBe('{"a":2,"b":1}');
  });

  it("keeps __proto__ as an ordinary member and never touches a prototype", () => {
    const text = '{"z":1,"__proto__":{"polluted":true},"a":2}';
    expect(canonicalizeJson(text)).toBe('{"__proto__":{"polluted":true},"a":2,"z":1}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const parsed = JSON.parse(text) as object;
    expect(canonicalize(parsed)).toBe('{"__proto__":{"polluted":true},"a":2,"z":1}');
    // An object literal's __proto__ sets the prototype: not an own key, so not serialized.
    expect(canonicalize({ __proto__: { x: 1 }, a: 1 })).toBe('{"a":1}');
  });

  it("writes -0 as 0 and non-finite numbers as null", () => {
    expect(canonicalize(-0)).toBe("0");
    expect(canonicalize({ a: -0, b: [-0] })).toBe('{"a":0,"b":[0]}');
    expect(canonicalizeJson("-0")).toBe("0");
    expect(canonicalize([Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY])).toBe("[null,null,null]");
    expect(canonicalize(1e21)).toBe("1e+21");
  });

  it("escapes lone surrogates and keeps valid pairs", () => {
    expect(canonicalize("\ud800")).toBe('"\\ud800"');
    expect(canonicalize("x\udc00y")).toBe('"x\\udc00y"');
    expect(canonicalize({ "\ud83d": "\ude00" })).toBe('{"\\ud83d":"\\ude00"}');
    expect(canonicalize("😀")).toBe('"😀"');
    expect(canonicalizeJson('"\\ud83d\\ude00"')).toBe('"😀"');
    expect(canonicalizeJson('"\\ud800"')).toBe('"\\ud800"');
  });

  it("uses JSON's minimal escapes", () => {
    expect(canonicalize('"\\\b\f\n\r\t\u0000\u001f\u007f/')).toBe('"\\"\\\\\\b\\f\\n\\r\\t\\u0000\\u001f\u007f/"');
    expect(canonicalizeJson('"\\u0041\\/\\u00e9"')).toBe('"A/é"');
  });

  it("drops undefined, functions and symbols as JSON.stringify does, and honours toJSON", () => {
    expect(canonicalize({ a: undefined, f: () => 1, s: Symbol("x"), k: 1 })).toBe('{"k":1}');
    expect(canonicalize([undefined, () => 1, Symbol("x")])).toBe("[null,null,null]");
    expect(canonicalize({ d: new Date(0) })).toBe('{"d":"1970-01-01T00:00:00.000Z"}');
    expect(canonicalize({ v: { toJSON: () => ({ z: 1, y: 2 }) } })).toBe('{"v":{"y":2,"z":1}}');
    expect(codeOf(() => canonicalize(undefined))).toBe("ERR_UNSERIALIZABLE");
    expect(codeOf(() => canonicalize(() => 1))).toBe("ERR_UNSERIALIZABLE");
  });

  it("handles a 10 MB string", () => {
    const big = "ab\"c".repeat(2_500_000);
    const out = canonicalize({ s: big });
    expect(out.length).toBe(big.length + 2_500_000 + 8);
    expect(JSON.parse(out)).toEqual({ s: big });
    expect(canonicalizeJson(JSON.stringify({ s: big, a: 1 }))).toBe(`{"a":1,${out.slice(1)}`);
  });

  it(`accepts ${LIMITS.canonicalDepth} levels of nesting, and 1,000`, () => {
    expect(LIMITS.canonicalDepth).toBe(1024);
    for (const kind of ["array", "object"] as const) {
      for (const depth of [1000, 1024]) {
        const v = nest(depth, kind);
        expect(canonicalize(v)).toBe(JSON.stringify(v));
        expect(canonicalizeJson(JSON.stringify(v))).toBe(JSON.stringify(v));
      }
    }
  });

  it("rejects 1,025 levels with ERR_TOO_DEEP", () => {
    for (const kind of ["array", "object"] as const) {
      expect(codeOf(() => canonicalize(nest(1025, kind)))).toBe("ERR_TOO_DEEP");
      expect(codeOf(() => canonicalizeJson(JSON.stringify(nest(1025, kind))))).toBe("ERR_TOO_DEEP");
    }
  });

  it("rejects a 100,000-level nest with ERR_TOO_DEEP, not a stack overflow (values and text)", () => {
    expect(codeOf(() => canonicalize(nest(100_000, "array")))).toBe("ERR_TOO_DEEP");
    expect(codeOf(() => canonicalize(nest(100_000, "object")))).toBe("ERR_TOO_DEEP");
    expect(codeOf(() => canonicalizeJson("[".repeat(100_000) + "]".repeat(100_000)))).toBe("ERR_TOO_DEEP");
    expect(codeOf(() => canonicalizeJson('{"a":'.repeat(100_000) + "1" + "}".repeat(100_000)))).toBe("ERR_TOO_DEEP");
    expect(codeOf(() => canonicalizeJson(new TextEncoder().encode("[".repeat(100_000) + "]".repeat(100_000))))).toBe(
      "ERR_TOO_DEEP",
    );
  });

  it("rejects cycles in objects and arrays with ERR_CYCLE, but accepts shared (acyclic) references", () => {
    const o: Record<string, unknown> = { a: 1 };
    o.self = o;
    expect(codeOf(() => canonicalize(o))).toBe("ERR_CYCLE");
    const arr: unknown[] = [1];
    arr.push(arr);
    expect(codeOf(() => canonicalize(arr))).toBe("ERR_CYCLE");
    const deep: Record<string, unknown> = { x: { y: [{}] } };
    ((deep.x as { y: Record<string, unknown>[] }).y[0] as Record<string, unknown>).back = deep;
    expect(codeOf(() => canonicalize(deep))).toBe("ERR_CYCLE");
    // A toJSON that builds a fresh object around itself forever ends at the depth limit.
    const viaToJSON: Record<string, unknown> = { toJSON: () => ({ back: viaToJSON }) };
    expect(codeOf(() => canonicalize({ v: viaToJSON }))).toBe("ERR_TOO_DEEP");
    const shared = { s: 1 };
    expect(canonicalize({ a: shared, b: [shared, shared] })).toBe('{"a":{"s":1},"b":[{"s":1},{"s":1}]}');
  });

  it("rejects BigInt with ERR_UNSERIALIZABLE", () => {
    expect(codeOf(() => canonicalize(1n))).toBe("ERR_UNSERIALIZABLE");
    expect(codeOf(() => canonicalize({ a: [{ b: 2n }] }))).toBe("ERR_UNSERIALIZABLE");
  });

  it("rejects invalid JSON with ERR_INVALID_JSON and the position the parser reports", () => {
    const cases: { text: string; position: number }[] = [
      { text: '{"a":1,}', position: 7 },
      { text: '{"a":1} x', position: 8 },
      { text: '{"a" 1}', position: 5 },
      { text: '["abc', position: 5 },
      { text: "", position: 0 },
      { text: '{"a":', position: 5 },
    ];
    for (const { text, position } of cases) {
      let error: unknown;
      try {
        canonicalizeJson(text);
      } catch (e) {
        error = e;
      }
      expect(isRouterError(error), text).toBe(true);
      expect((error as { code: string }).code, text).toBe("ERR_INVALID_JSON");
      expect((error as { position?: number }).position, text).toBe(position);
      expect((error as Error).cause, text).toBeInstanceOf(SyntaxError);
    }
    // V8 names no position for an unexpected token; the code is still ERR_INVALID_JSON.
    expect(codeOf(() => canonicalizeJson('{"a":tru}'))).toBe("ERR_INVALID_JSON");
    expect(codeOf(() => canonicalizeJson("{'a':1}"))).toBe("ERR_INVALID_JSON");
  });

  it("rejects invalid UTF-8 bytes with ERR_INVALID_JSON", () => {
    const invalid = [
      [0x22, 0xff, 0x22], // 0xFF never appears in UTF-8
      [0x22, 0xc3, 0x22], // truncated 2-byte sequence
      [0x22, 0xc0, 0xaf, 0x22], // overlong "/"
      [0x22, 0xed, 0xa0, 0x80, 0x22], // encoded surrogate U+D800
      [0x22, 0xf4, 0x90, 0x80, 0x80, 0x22], // above U+10FFFF
    ];
    for (const bytes of invalid) expect(codeOf(() => canonicalizeJson(new Uint8Array(bytes)))).toBe("ERR_INVALID_JSON");
    expect(canonicalizeJson(new Uint8Array([0x22, 0xc3, 0xa9, 0x22]))).toBe('"é"');
    expect(canonicalizeJson(new TextEncoder().encode('{"b":"😀","a":1}'))).toBe('{"a":1,"b":"😀"}');
  });

  it("rejects a non-text argument with a TypeError", () => {
    expect(() => canonicalizeJson(42 as unknown as string)).toThrow(TypeError);
  });
});

describe("canonicalPrefix — the beginning of canonicalize, written lazily (bytes-mode routing)", () => {
  const anyValue = fc.oneof(json, jsLike, fc.constantFrom(new Number(5), new String("ab"), { a: Symbol("s"), b: () => 1 }));

  it("is a prefix of canonicalize(x) at least n units long, or all of it (property)", () => {
    fc.assert(
      fc.property(anyValue, fc.integer({ min: 1, max: 400 }), (x, n) => {
        let full: string;
        try {
          full = canonicalize(x);
        } catch {
          return; // values canonicalize rejects are covered below
        }
        const head = canonicalPrefix(x, n);
        expect(full.startsWith(head)).toBe(true);
        expect(head.length).toBeGreaterThanOrEqual(Math.min(n, full.length));
      }),
    );
  });

  it("cuts long strings without splitting a surrogate pair", () => {
    const s = `${"a".repeat(9)}😀${"b".repeat(1000)}`;
    for (const n of [5, 10, 11, 12, 13, 50]) {
      const head = canonicalPrefix({ s }, n);
      expect(canonicalize({ s }).startsWith(head), String(n)).toBe(true);
      expect(head.length).toBeGreaterThanOrEqual(n);
    }
  });

  it("reads a 10 MB string only as far as the prefix", () => {
    const big = "x".repeat(10_000_000);
    // `{"a":` is 5 units; 59 more are needed, so 60 characters of the string are read.
    expect(canonicalPrefix({ a: big, b: 1 }, 64)).toBe(`{"a":"${"x".repeat(60)}`);
  });

  it("stops before what it does not need, and still rejects what it reads", () => {
    const cyclic: Record<string, unknown> = { z: null };
    cyclic.z = cyclic;
    expect(canonicalPrefix({ a: "x".repeat(100), z: cyclic }, 50)).toBe(`{"a":"${"x".repeat(46)}`);
    expect(codeOf(() => canonicalPrefix({ a: 1, z: cyclic }, 4096))).toBe("ERR_CYCLE");
    expect(codeOf(() => canonicalPrefix({ a: 1n }, 4096))).toBe("ERR_UNSERIALIZABLE");
    expect(codeOf(() => canonicalPrefix(nest(LIMITS.canonicalDepth + 1, "array"), 1_000_000))).toBe("ERR_TOO_DEEP");
    expect(codeOf(() => canonicalPrefix(undefined, 10))).toBe("ERR_UNSERIALIZABLE");
  });

  it("gives bytes-mode routing input identical to the canonical bytes' prefix (property)", () => {
    const enc = new TextEncoder();
    fc.assert(
      fc.property(json, fc.integer({ min: LIMITS.prefixLength.min, max: LIMITS.prefixLength.min + 512 }), (x, n) => {
        const expected = enc.encode(canonicalize(x)).slice(0, n);
        // A string body is JSON *text*; any other value is serialized.
        if (typeof x !== "string") expect(routingInput(x, { mode: "bytes", prefixLength: n })).toEqual(expected);
        expect(routingInput(JSON.stringify(x, null, 2), { mode: "bytes", prefixLength: n })).toEqual(expected);
      }),
    );
  });
});
