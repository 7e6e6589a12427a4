import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalize, createRouter, isRouterError, routingInput, LIMITS } from "prefix-router";
import { PrefixWriter } from "../../src/routing/prefix-writer.js";
import { bytesPrefix, textPrefix, truncateCodePoints } from "../../src/routing/routing-input.js";
import { writeTextInput } from "../../src/routing/prompt-text.js";
import { oracleBytesPrefix } from "../bytes-prefix-oracle.js";
import { jsonText, mutated, rawString } from "../json-texts.js";
import { codeOf } from "../support.js";

const enc = new TextEncoder();
const bytes = (body: unknown, prefixLength = 1024) => routingInput(body, { mode: "bytes", prefixLength });
const text = (body: unknown, prefixLength = 4096) => routingInput(body, { mode: "text", prefixLength });
const codePoints = (s: string) => [...s].length;


describe("bytes mode", () => {
  const body = { model: "m", messages: [{ role: "user", content: "héllo" }], temperature: 0 };
  const canonical = enc.encode('{"messages":[{"content":"héllo","role":"user"}],"model":"m","temperature":0}');

  it("reads the canonical JSON bytes of an object, of JSON text and of JSON bytes alike", () => {
    expect(bytes(body)).toEqual(canonical);
    const pretty = JSON.stringify({ temperature: 0, messages: body.messages, model: "m" }, null, 2);
    expect(bytes(pretty)).toEqual(canonical);
    expect(bytes(enc.encode(pretty))).toEqual(canonical);
    expect(bytes(Buffer.from(pretty))).toEqual(canonical);
    expect(bytes(enc.encode(pretty).buffer)).toEqual(canonical);
    expect(bytes(new DataView(enc.encode(` ${pretty}`).buffer, 1))).toEqual(canonical);
  });

  it("reads raw bytes for CSV, plain text and binary bodies", () => {
    const csv = "id,question\n1,what is the refund policy?\n";
    expect(bytes(csv)).toEqual(enc.encode(csv));
    expect(bytes(enc.encode(csv))).toEqual(enc.encode(csv));
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0xff, 0x00]);
    expect(bytes(png)).toEqual(png);
    // Starts like JSON but is not: raw bytes, no error.
    expect(bytes("123abc")).toEqual(enc.encode("123abc"));
    expect(bytes('{"a":1')).toEqual(enc.encode('{"a":1'));
    // Starts like JSON, invalid UTF-8 inside: raw bytes.
    const broken = new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]);
    expect(bytes(broken)).toEqual(broken);
  });

  it("keeps the first prefixLength bytes", () => {
    const long = { a: "x".repeat(5000), b: 1 };
    const full = enc.encode(canonicalize(long));
    expect(bytes(long, 1024)).toEqual(full.subarray(0, 1024));
    expect(bytes(long, 4096)).toEqual(full.subarray(0, 4096));
    const raw = new Uint8Array(70_000).map((_, i) => i % 251);
    expect(bytes(raw, LIMITS.prefixLength.max)).toEqual(raw.subarray(0, LIMITS.prefixLength.max));
    expect(bytes(raw, LIMITS.prefixLength.min).length).toBe(LIMITS.prefixLength.min);
    // Bytes mode counts bytes: a multi-byte character may be cut.
    const e = "é".repeat(600); // 1,200 bytes
    expect(bytes(e, 1025)).toEqual(enc.encode(e).subarray(0, 1025));
  });

  it("shares the input of bodies with a long shared system prompt and different questions", () => {
    const system = "You are the support assistant of ACME. Policy: ".padEnd(5000, "lorem ipsum ");
    const ask = (q: string) => ({ model: "m", messages: [{ role: "system", content: system }, { role: "user", content: q }] });
    expect(bytes(ask("refunds?"), 4096)).toEqual(bytes(ask("shipping?"), 4096));
    expect(bytes(ask("refunds?"), 8192)).not.toEqual(bytes(ask("shipping?"), 8192));
  });
});

describe("text mode", () => {
  it("renders chat messages in order with role and content markers", () => {
    expect(
      text({
        model: "m",
        messages: [
          { role: "system", content: "S" },
          { role: "user", name: "bob", content: "Q" },
        ],
      }),
    ).toBe("\u0000msystem\u0000c\u0000tS\u0000muser\u0000nbob\u0000c\u0000tQ");
  });

  it("puts tools first, whatever the key order of the body", () => {
    const tools = [{ type: "function", function: { name: "lookup", parameters: { type: "object" } } }];
    const expected = `\u0000T${canonicalize(tools)}\u0000muser\u0000c\u0000thi`;
    expect(text({ messages: [{ role: "user", content: "hi" }], tools })).toBe(expected);
    expect(text({ tools, messages: [{ role: "user", content: "hi" }] })).toBe(expected);
  });

  it("reads text parts of array contents and an identifier for other parts", () => {
    const body = {
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "look" },
            { type: "image_url", image_url: { url: "https://x/cat.png", detail: "low" } },
            { type: "file", file: { file_id: "file-123" } },
            { type: "file", file: { filename: "a.pdf", file_data: "data:application/pdf;base64,AAA" } },
            { type: "input_audio", input_audio: { data: "UklGR", format: "wav" } },
            { type: "refusal", refusal: "no" },
          ],
        },
      ],
    };
    expect(text(body)).toBe(
      "\u0000muser\u0000c\u0000tlook\u0000ghttps://x/cat.png\u0000ffile-123\u0000fa.pdf\u0000fdata:application/pdf;base64,AAA\u0000aUklGR\u0000tno",
    );
  });

  it("follows assistant tool calls and tool results", () => {
    const calls = [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }];
    const body = {
      messages: [
        { role: "assistant", content: null, tool_calls: calls },
        { role: "tool", tool_call_id: "c1", content: "42" },
      ],
    };
    expect(text(body)).toBe(`\u0000massistant\u0000c\u0000F${canonicalize(calls)}\u0000mtool\u0000c\u0000t42\u0000Ic1`);
  });

  it("reads completions `prompt`, responses `instructions` then `input`, embeddings `input`", () => {
    expect(text({ model: "m", prompt: "Once upon" })).toBe("\u0000pOnce upon");
    expect(text({ prompt: ["a", "b"] })).toBe("\u0000pa\u0000pb");
    expect(text({ prompt: [1, 2, 3] })).toBe("\u0000p1\u0000p2\u0000p3");
    expect(text({ prompt: [[1, 2], [3]] })).toBe("\u0000p[1,2]\u0000p[3]");
    expect(text({ input: "Q", instructions: "Be brief" })).toBe("\u0000SBe brief\u0000iQ");
    expect(
      text({ instructions: "I", input: [{ role: "user", content: [{ type: "input_text", text: "hi" }] }] }),
    ).toBe("\u0000SI\u0000muser\u0000c\u0000thi");
    expect(text({ model: "e", input: "embed me" })).toBe("\u0000iembed me");
    expect(text({ model: "e", input: ["a", "b"] })).toBe("\u0000ia\u0000ib");
  });

  it("reads a Responses API body as instructions, then input items, then tools; chat keeps tools first", () => {
    const tools = [{ type: "function", name: "lookup", parameters: { type: "object" } }];
    const input = [
      { role: "user", content: [{ type: "input_text", text: "hi" }] },
      { type: "function_call", call_id: "c1", name: "lookup", arguments: "{}" },
      { type: "function_call_output", call_id: "c1", output: "42" },
    ];
    expect(text({ model: "m", tools, instructions: "I", input })).toBe(
      `\u0000SI\u0000muser\u0000c\u0000thi\u0000o${canonicalize(input[1])}\u0000o${canonicalize(input[2])}\u0000T${canonicalize(tools)}`,
    );
    // A long shared instructions text routes alike whatever the tools: they come last.
    const long = "policy ".repeat(1000);
    const cut = (b: object) => routingInput(b, { mode: "text", prefixLength: 1024 });
    expect(cut({ instructions: long, input: "q", tools })).toBe(cut({ instructions: long, input: "q" }));
    const chatTools = [{ type: "function", function: { name: "lookup" } }];
    expect(text({ tools: chatTools, messages: [{ role: "user", content: "hi" }] })).toBe(`\u0000T${canonicalize(chatTools)}\u0000muser\u0000c\u0000thi`);
  });

  it("reads JSON text and JSON bytes like the object", () => {
    const body = { messages: [{ role: "user", content: "hi" }] };
    expect(text(JSON.stringify(body))).toBe(text(body));
    expect(text(enc.encode(JSON.stringify(body)))).toBe(text(body));
  });

  it("rejects bodies it cannot read with typed errors", () => {
    expect(codeOf(() => text([1, 2]))).toBe("ERR_INVALID_BODY");
    expect(codeOf(() => text(42))).toBe("ERR_INVALID_BODY");
    expect(codeOf(() => text(null))).toBe("ERR_INVALID_BODY");
    expect(codeOf(() => text("not json"))).toBe("ERR_INVALID_JSON");
    expect(codeOf(() => text(new Uint8Array([0x7b, 0xff, 0x7d])))).toBe("ERR_INVALID_JSON");
  });

  it("returns an empty input for a body without prompt text", () => {
    expect(text({ model: "m" })).toBe("");
  });

  it("counts the prefix in code points and never splits a surrogate pair", () => {
    // "\u0000muser\u0000c\u0000t" is 10 code points of markers and role.
    const emoji = "😀".repeat(3000);
    const out = text({ messages: [{ role: "user", content: emoji }] }, 1024);
    expect(codePoints(out)).toBe(1024);
    expect(out).toBe(`\u0000muser\u0000c\u0000t${"😀".repeat(1024 - 10)}`);
    // The cut falls exactly between the two units of a pair: the pair is kept whole, not split.
    const ascii = "a".repeat(1024 - 10 - 1);
    const cut = text({ messages: [{ role: "user", content: `${ascii}😀b` }] }, 1024);
    expect(cut.endsWith("a😀")).toBe(true);
    expect(codePoints(cut)).toBe(1024);
  });

  it("truncateCodePoints keeps exactly n code points, as a prefix, pairs whole (property)", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 60 }), fc.integer({ min: 0, max: 70 }), (s, n) => {
        const out = truncateCodePoints(s, n);
        expect(s.startsWith(out)).toBe(true);
        expect(codePoints(out)).toBe(Math.min(n, codePoints(s)));
        const last = out.charCodeAt(out.length - 1);
        const next = s.charCodeAt(out.length);
        // Never a high surrogate at the end with its low half left behind.
        expect(last >= 0xd800 && last <= 0xdbff && next >= 0xdc00 && next <= 0xdfff).toBe(false);
      }),
    );
  });

  it("markers cannot be confused with content: content that spells a marker stays distinct", () => {
    const two = { messages: [{ role: "user", content: "x" }, { role: "user", content: "y" }] };
    const forged = { messages: [{ role: "user", content: "x\u0000muser\u0000c\u0000ty" }] };
    expect(text(forged)).not.toBe(text(two));
    const named = { messages: [{ role: "user", name: "n", content: "c" }] };
    const forgedName = { messages: [{ role: "user\u0000nn", content: "c" }] };
    expect(text(forgedName)).not.toBe(text(named));
    const part = { messages: [{ role: "user", content: [{ type: "text", text: "a" }] }] };
    expect(text({ messages: [{ role: "user", content: "\u0000ta" }] })).not.toBe(text(part));
  });

  it("different message structures give different inputs (property)", () => {
    // Strings built from NUL and marker letters, so collisions would be easy if escaping failed.
    const tricky = fc.string({ unit: fc.constantFrom("\u0000", "m", "c", "n", "t", "T", "u", "x"), maxLength: 8 });
    const message = fc.record(
      { role: tricky, content: fc.oneof(tricky, fc.array(fc.record({ type: fc.constant("text"), text: tricky }), { maxLength: 3 })), name: tricky },
      { requiredKeys: ["role", "content"] },
    );
    const messages = fc.array(message, { maxLength: 4 });
    const normalize = (ms: unknown[]) => JSON.stringify(ms, ["role", "name", "content", "type", "text"]);
    fc.assert(
      fc.property(messages, messages, (a, b) => {
        fc.pre(normalize(a) !== normalize(b));
        expect(text({ messages: a }, LIMITS.prefixLength.max)).not.toBe(text({ messages: b }, LIMITS.prefixLength.max));
      }),
      { numRuns: 500 },
    );
  });

  it("shares the input of bodies with a long shared system prompt and different questions", () => {
    const system = "You are the support assistant of ACME. Policy: ".padEnd(5000, "lorem ipsum ");
    const ask = (q: string) => ({ model: "m", messages: [{ role: "system", content: system }, { role: "user", content: q }] });
    expect(text(ask("refunds?"), 4096)).toBe(text(ask("what about shipping?"), 4096));
    expect(codePoints(text(ask("refunds?"), 4096))).toBe(4096);
    // Past the system prompt, the key scope decides: the system prompt alone ("auto"), or the question too.
    expect(text(ask("refunds?"), 8192)).toBe(text(ask("what about shipping?"), 8192));
    const prefixScope = (q: string) => routingInput(ask(q), { mode: "text", prefixLength: 8192, keyScope: "prefix" });
    expect(prefixScope("refunds?")).not.toBe(prefixScope("what about shipping?"));
  });
});

describe("text mode — equivalent content shapes", () => {
  const input = (content: unknown) =>
    routingInput({ messages: [{ role: "user", content }] }, { mode: "text", prefixLength: 4096 });

  it("string content and a single text part give the same input, as chat templates render them alike", () => {
    expect(input("hello")).toBe(input([{ type: "text", text: "hello" }]));
    expect(input("")).toBe(input(null));
    expect(input("")).toBe(input([]));
  });

  it("a long message is cut before escaping: the result equals escaping the whole message", () => {
    const big = `a\u0000b${"x".repeat(200_000)}`;
    const out = input(big);
    expect(out.startsWith("\u0000muser\u0000c\u0000ta\u0000\u0000bxxx")).toBe(true);
    expect([...out].length).toBe(4096);
  });
});

// ---------------------------------------------------------------------------------------------
// Identity with the implementation before the JSON scanner (test/bytes-prefix-oracle.ts).

/** The same text as every body form bytes mode reads: string, bytes at an odd offset, Buffer, ArrayBuffer, DataView. */
function forms(text: string): unknown[] {
  const bytes = enc.encode(text);
  const odd = new Uint8Array(bytes.length + 3);
  odd.set(bytes, 3);
  return [text, bytes, odd.subarray(3), Buffer.from(bytes), bytes.slice().buffer, new DataView(odd.buffer, 3, bytes.length)];
}

function outcome(f: () => Uint8Array): Uint8Array | string {
  try {
    return new Uint8Array(f());
  } catch (e) {
    return isRouterError(e) ? e.code : String(e);
  }
}

describe("bytes mode — byte for byte the input of the parse-everything implementation", () => {
  const same = (body: unknown, n: number): void => {
    expect(outcome(() => bytesPrefix(body, n))).toEqual(outcome(() => oracleBytesPrefix(body, n)));
  };

  it("on any JSON text, in any body form, at any prefix length (property)", () => {
    fc.assert(
      fc.property(jsonText, fc.integer({ min: 1, max: 300 }), (t, n) => {
        for (const body of forms(t)) same(body, n);
      }),
      { numRuns: 3000 },
    );
  });

  it("on texts that are not JSON, or only nearly: raw bytes, as before (property)", () => {
    fc.assert(
      fc.property(mutated, fc.integer({ min: 1, max: 200 }), (t, n) => {
        for (const body of forms(t)) same(body, n);
      }),
      { numRuns: 3000 },
    );
  });

  it("on invalid UTF-8, lone surrogates in JSON text, BOMs and whitespace-only bodies", () => {
    const bad = [[0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82]];
    for (const b of bad) {
      for (const t of ['{"a":"x', '["', '"']) {
        const head = enc.encode(t);
        const body = Uint8Array.from([...head, ...b, ...enc.encode('"}'.slice(t.startsWith("[") ? 0 : 0))]);
        same(body, 64);
        same(Uint8Array.from([...enc.encode('{"a":"'), ...b, ...enc.encode('"}')]), 64);
      }
    }
    for (const t of ['{"a":"\ud800"}', '["\udfff x"]', '"\ud83d"', "\ud800", '{"\ud800":1}']) same(t, 64);
    for (const t of ["\ufeff{}", " \ufeff[1]", "", "   ", "\n\t", "{}", "[]", '""', "0", "-", "tru", "nul"]) {
      for (const body of forms(t)) same(body, 16);
    }
  });

  it("on deep nesting, with the same ERR_TOO_DEEP where the walk reaches it", () => {
    for (const depth of [999, 1000, 1023, 1024, 1025, 1026, 5000]) {
      for (const [open, close] of [["[", "]"], ['{"a":', "}"]] as const) {
        const t = open.repeat(depth) + "1" + close.repeat(depth);
        for (const n of [1024, 2000, 6000, 65_536]) same(enc.encode(t), n);
        same(enc.encode(`[${"1,".repeat(600)}${t}]`), 65_536);
      }
    }
  });

  it("on long strings with escapes spread through them, cut anywhere", () => {
    const doc = `${"policy text é ü 数据 😀 ".repeat(200)}\n\t"quoted" \\ back\\slash \u0001 / \u2028`.repeat(5);
    const body = JSON.stringify({ z: 1, messages: [{ role: "system", content: doc }, { content: doc.slice(7), role: "user" }], a: [1.5, -0, 1e21] });
    const escaped = body.replace(/é/g, "\\u00E9").replace(/\//g, "\\/");
    for (let n = 1; n < 30_000; n += 997) {
      same(enc.encode(body), n);
      same(enc.encode(escaped), n);
    }
  });

  it("on JavaScript values: the same prefix, the same errors (property)", () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    const values = fc.oneof(
      fc.jsonValue({ maxDepth: 4 }),
      fc.anything({ maxDepth: 3, withBoxedValues: false, withBigInt: true, withDate: true, withTypedArray: true, withSparseArray: true, withNullPrototype: true }),
      fc.constantFrom(cyclic, { b: 1, a: cyclic }, { toJSON: () => "x\ud800y" }, { a: () => 1, b: Symbol("s"), c: undefined }, [undefined, () => 1], new Date(0)),
      rawString.map((s) => ({ s, [s]: [s, { s }] })),
    );
    fc.assert(
      fc.property(values, fc.integer({ min: 1, max: 200 }), (v, n) => {
        same(v, n);
      }),
      { numRuns: 3000 },
    );
  });
});

describe("text mode — the writer gives the UTF-16LE of textPrefix", () => {
  it("for any chat body and prefix length (property)", () => {
    const piece = fc.string({ unit: fc.constantFrom("a", "é", "😀", "\ud800", "\udc00", "\u0000", "x", "数"), maxLength: 30 });
    const long = fc.string({ unit: fc.constantFrom("a", "é", "😀", "\ud800", "\u0000", "数"), minLength: 100, maxLength: 400 });
    const content = fc.oneof(piece, long, fc.array(fc.oneof(piece, fc.record({ type: fc.constant("text"), text: piece }), fc.record({ type: fc.constant("image_url"), image_url: piece })), { maxLength: 3 }));
    const body = fc.record(
      {
        messages: fc.array(fc.record({ role: piece, content, name: piece }, { requiredKeys: ["role"] }), { maxLength: 4 }),
        tools: fc.array(fc.record({ name: piece }), { maxLength: 2 }),
        prompt: fc.oneof(piece, fc.array(piece, { maxLength: 3 })),
        instructions: piece,
      },
      { requiredKeys: [] },
    );
    const writer = new PrefixWriter();
    fc.assert(
      fc.property(body, fc.integer({ min: 1, max: 120 }), (b, n) => {
        writer.begin(4 * n);
        writeTextInput(b, n, writer);
        expect(Buffer.from(writer.bytes.subarray(0, writer.length)).equals(Buffer.from(textPrefix(b, n), "utf16le"))).toBe(true);
      }),
      { numRuns: 3000 },
    );
  });
});

describe("text mode reads only as much structure as the prefix needs", () => {
  const deep = (levels: number): unknown => {
    let v: unknown = "leaf";
    for (let i = 0; i < levels; i++) v = { nested: v };
    return v;
  };
  const body = (second: unknown) => ({
    model: "m",
    tools: [{ type: "function", function: { name: "lookup", description: "d".repeat(10_000) } }, second],
    messages: [{ role: "user", content: "hello" }],
  });

  it("a tool nested 5,000 levels deep past the prefix neither fails nor changes the routing input", async () => {
    const tail = { type: "function", function: { name: "deep", parameters: deep(5_000) } };
    expect(routingInput(body(tail), { mode: "text", prefixLength: 4096 })).toBe(
      routingInput(body({ type: "function", function: { name: "x" } }), { mode: "text", prefixLength: 4096 }),
    );
    const router = await createRouter({ targets: [{ id: "a" }, { id: "b" }, { id: "c" }] });
    const decisions: string[] = [];
    const other = await createRouter({ targets: [{ id: "a" }, { id: "b" }, { id: "c" }], onDecision: (d) => decisions.push(d.input) });
    const lease = other.route({ body: body(tail) });
    expect(decisions).toEqual(["canonical"]);
    expect(lease.key).toBe(router.rank({ body: body({ type: "function", function: { name: "x" } }) }).key);
    lease.release();
  });

  it("a reference cycle in a tool past the prefix is never visited", () => {
    const cyclic: Record<string, unknown> = { type: "function" };
    cyclic.self = cyclic;
    expect(() => routingInput(body(cyclic), { mode: "text", prefixLength: 4096 })).not.toThrow();
  });
});
