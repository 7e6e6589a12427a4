/**
 * Generators of JSON texts for the scanner's property tests: every spelling JSON allows
 * (whitespace, escapes in any case, `\/`, duplicate and `__proto__` keys, number forms, lone
 * surrogates) and near misses. Not a test file itself (vitest runs `*.test.ts` only).
 */
import fc from "fast-check";

/** A JSON string literal for `s`, each character written raw or escaped as `style` says (every legal spelling). */
export function spell(s: string, style: number[]): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const k = style[i % Math.max(1, style.length)] ?? 0;
    const hex = c.toString(16).padStart(4, "0");
    const u = `\\u${k % 2 === 0 ? hex : hex.toUpperCase()}`;
    const short: Record<number, string> = { 0x22: '\\"', 0x5c: "\\\\", 8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r" };
    if (c < 0x20 || c === 0x22 || c === 0x5c) out += k < 2 && short[c] !== undefined ? short[c] : u;
    else if (c === 0x2f && k === 3) out += "\\/";
    else out += k >= 2 ? u : s[i];
  }
  return `${out}"`;
}

const ws = fc.constantFrom("", "", " ", "\n", "\t", "\r\n  ");
export const rawString = fc.oneof(
  fc.string({ unit: "binary", maxLength: 12 }),
  fc.string({ unit: fc.constantFrom("a", "é", "😀", "\u0000", "\u001f", '"', "\\", "/", "\ud800", "\udc00", "\u2028", "\u007f"), maxLength: 8 }),
  fc.constantFrom("__proto__", "constructor", "toJSON", "a", "b", "A", "10", "2", ""),
);
export const spelled = fc.tuple(rawString, fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 6 })).map(([s, style]) => spell(s, style));
const numberText = fc.oneof(
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((x) => JSON.stringify(x)),
  fc.constantFrom("-0", "0", "-0.0", "0e0", "1E2", "1e+2", "1.50", "0.1e1", "1e400", "-1e400", "1e-400", "123456789012345678901234567890", "9007199254740993", "-123456789012345", "1234567890123456"),
);
/** JSON texts with every spelling JSON allows: whitespace, escapes, duplicate keys, number forms. */
export const jsonText: fc.Arbitrary<string> = fc.letrec<{ value: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    spelled,
    numberText,
    fc.constantFrom("true", "false", "null"),
    fc.tuple(ws, fc.array(fc.tuple(tie("value"), ws), { maxLength: 4 })).map(([w, xs]) => `[${w}${xs.map(([x, v]) => `${x}${v}`).join(",")}]`),
    fc.tuple(ws, fc.array(fc.tuple(spelled, ws, tie("value"), ws), { maxLength: 5 })).map(
      ([w, ms]) => `{${w}${ms.map(([k, a, v, b]) => `${k}${a}:${b}${v}${a}`).join(",")}}`,
    ),
  ),
})).value.chain((v) => fc.tuple(ws, ws).map(([a, b]) => `${a}${v}${b}`));

/** A JSON text made invalid (or not): a byte deleted, inserted, replaced, or the text cut. */
export const mutated = fc
  .tuple(jsonText, fc.nat(), fc.constantFrom("delete", "insert", "cut"), fc.constantFrom('"', "\\", ",", "}", "]", "{", "[", ":", "\u0001", "x", " ", "0", "-", "e", "."))
  .map(([t, at, op, c]) => {
    const i = t.length === 0 ? 0 : at % t.length;
    return op === "delete" ? t.slice(0, i) + t.slice(i + 1) : op === "insert" ? t.slice(0, i) + c + t.slice(i) : t.slice(0, i);
  });

