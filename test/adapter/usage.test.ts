/**
 * The one usage reader both adapters use: OpenAI's SSE and JSON bodies, SageMaker's payload
 * parts (SSE, JSON lines, one object per part) and whole response bodies.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { splitAt as split } from "../support.js";
import {
  JSON_TAIL_BYTES,
  JsonUsageScanner,
  MAX_LINE,
  SseUsageScanner,
  StreamUsageScanner,
  findUsage,
  scannerFor,
  usageOf,
  usageOfBody,
} from "../../src/adapter/usage.js";

const enc = new TextEncoder();


const chunk = (content: string) =>
  `data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content } }], usage: null })}\n\n`;
const usageChunk = `data: ${JSON.stringify({
  id: "x",
  choices: [],
  usage: { prompt_tokens: 900, completion_tokens: 5, total_tokens: 905, prompt_tokens_details: { cached_tokens: 768 } },
})}\n\n`;

describe("stream usage scanner on server-sent events", () => {
  it("finds the usage chunk however the stream is cut, multi-byte text included", () => {
    const body = enc.encode(chunk("héllo ✓ 🙂") + chunk('"usage": {"prompt_tokens": 1} in text') + usageChunk + "data: [DONE]\n\n");
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 12 }), (cuts) => {
        const scanner = scannerFor("text/event-stream; charset=utf-8");
        for (const part of split(body, cuts)) scanner?.push(part);
        expect(scanner?.result()).toEqual({ promptTokens: 900, cachedTokens: 768 });
        expect(scanner?.sawError).toBe(false);
      }),
    );
  });

  it("reads the Responses API's response.completed event and CRLF line ends", () => {
    const event = {
      type: "response.completed",
      response: { id: "r", usage: { input_tokens: 50, output_tokens: 3, input_tokens_details: { cached_tokens: 32 } } },
    };
    const scanner = scannerFor("text/event-stream");
    scanner?.push(enc.encode(`event: response.completed\r\ndata: ${JSON.stringify(event)}\r\n\r\n`));
    expect(scanner?.result()).toEqual({ promptTokens: 50, cachedTokens: 32 });
  });

  it("reports nothing when the server does not report cached tokens", () => {
    const scanner = scannerFor("text/event-stream");
    scanner?.push(enc.encode(`data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 10, total_tokens: 12 } })}\n\n`));
    expect(scanner?.result()).toBeUndefined();
  });

  it("flags an in-band error event", () => {
    const scanner = scannerFor("text/event-stream");
    scanner?.push(enc.encode(chunk("a") + `data: {"error": {"message": "boom", "code": 500}}\n\ndata: [DONE]\n\n`));
    scanner?.result();
    expect(scanner?.sawError).toBe(true);
  });

  it("skips a line longer than MAX_LINE, cut or whole, and reads the lines after it", () => {
    const long = `data: {"usage": {"prompt_tokens": 5, "prompt_tokens_details": {"cached_tokens": 5}}, "pad": "${"x".repeat(MAX_LINE)}"}\n`;
    for (const parts of [[long], [long.slice(0, 1000), long.slice(1000)]]) {
      const scanner = new StreamUsageScanner();
      for (const part of parts) scanner.push(enc.encode(part));
      expect(scanner.result()).toBeUndefined();
      const next = new StreamUsageScanner();
      for (const part of [...parts, usageChunk]) next.push(enc.encode(part));
      expect(next.result()).toEqual({ promptTokens: 900, cachedTokens: 768 });
    }
  });

  it("joins an event's data lines and reads CR-only line ends, as the SSE format defines them", () => {
    const usage = { prompt_tokens: 70, prompt_tokens_details: { cached_tokens: 64 } };
    const multiLine = `data: {"choices": [],\ndata: "usage": ${JSON.stringify(usage)}}\n\n`;
    const crOnly = `: keep-alive\r\rdata: ${JSON.stringify({ choices: [], usage })}\r\r`;
    for (const body of [multiLine, crOnly, `\uFEFF${multiLine}`]) {
      const scanner = scannerFor("text/event-stream");
      scanner?.push(enc.encode(body));
      expect(scanner?.result()).toEqual({ promptTokens: 70, cachedTokens: 64 });
    }
  });

  it("flags the Responses API's error and response.failed events", () => {
    for (const event of ["error", "response.failed"]) {
      const scanner = scannerFor("text/event-stream");
      scanner?.push(enc.encode(`event: ${event}\ndata: {"type": "${event}", "message": "boom"}\n\n`));
      scanner?.result();
      expect(scanner?.sawError).toBe(true);
    }
  });

  it("hands every event to an observer before reading it", () => {
    const seen: (string | undefined)[] = [];
    const scanner = new SseUsageScanner((e) => seen.push(e.event));
    scanner.push(enc.encode(`event: response.created\ndata: {}\n\ndata: {}\n\n`));
    scanner.result();
    expect(seen).toEqual(["response.created", undefined]);
  });

  it("handles a final line without a newline", () => {
    const scanner = scannerFor("text/event-stream");
    scanner?.push(enc.encode(usageChunk.trimEnd()));
    expect(scanner?.result()).toEqual({ promptTokens: 900, cachedTokens: 768 });
  });
});

describe("JSON usage scanner", () => {
  const completion = (content: string) => ({
    id: "c",
    object: "chat.completion",
    choices: [{ index: 0, message: { role: "assistant", content } }],
    usage: { prompt_tokens: 4000, completion_tokens: 20, total_tokens: 4020, prompt_tokens_details: { cached_tokens: 3984 } },
  });

  it("finds usage after a body larger than the tail it keeps, however it is cut", () => {
    const body = enc.encode(JSON.stringify(completion("x".repeat(JSON_TAIL_BYTES * 3))));
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 8 }), (cuts) => {
        const scanner = scannerFor("application/json");
        for (const part of split(body, cuts)) scanner?.push(part);
        expect(scanner?.result()).toEqual({ promptTokens: 4000, cachedTokens: 3984 });
      }),
      { numRuns: 30 },
    );
  });

  it("skips a quoted \"usage\" in the content and a usage without counts", () => {
    expect(findUsage(JSON.stringify(completion('see "usage": {"prompt_tokens": 1} here')))).toEqual({
      promptTokens: 4000,
      cachedTokens: 3984,
    });
    expect(findUsage(JSON.stringify({ usage: { prompt_tokens: 3 }, metadata: { usage: "none" } }))).toBeUndefined();
    expect(findUsage('{"usage": {"prompt_tokens": 3, "prompt_tokens_details": {"cached_tokens": 1}')).toBeUndefined();
  });

  it("usageOf rejects counts no server could mean: negative, non-numeric, fractional, infinite, more cached than prompt", () => {
    const of = (prompt: unknown, cached: unknown) => usageOf({ usage: { prompt_tokens: prompt, prompt_tokens_details: { cached_tokens: cached } } });
    expect(of(-1, 0)).toBeUndefined();
    expect(of("9", 0)).toBeUndefined();
    expect(of(10.5, 0)).toBeUndefined();
    expect(of(1e308 * 10, 0)).toBeUndefined();
    expect(of(10, 11)).toBeUndefined();
    expect(of(10, 10)).toEqual({ promptTokens: 10, cachedTokens: 10 });
    expect(usageOf(null)).toBeUndefined();
  });

  it("says a stream completed once its usage or [DONE] went past, and not before", () => {
    const scanner = new StreamUsageScanner();
    scanner.push(enc.encode('data: {"choices":[{"delta":{"content":"hi"}}]}\n\n'));
    expect(scanner.completed).toBe(false);
    scanner.push(enc.encode(`data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 5, prompt_tokens_details: { cached_tokens: 2 } } })}\n\n`));
    expect(scanner.completed).toBe(true);
    const done = new StreamUsageScanner();
    done.push(enc.encode("data: [DONE]"));
    expect(done.completed).toBe(false);
    done.push(enc.encode("\n\n"));
    expect(done.completed).toBe(true);
    expect(new JsonUsageScanner().completed).toBe(false);
  });

  it("has no scanner for bodies that carry no usage", () => {
    expect(scannerFor(null)).toBeUndefined();
    expect(scannerFor("text/plain")).toBeUndefined();
  });
});

describe("stream usage scanner on SageMaker payload parts, and whole bodies", () => {
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
        const bytes = enc.encode(payload);
        const cuts = [...new Set(rawCuts.map((c) => c % bytes.length))].sort((a, b) => a - b);
        const scanner = new StreamUsageScanner();
        let from = 0;
        for (const cut of [...cuts, bytes.length]) {
          scanner.push(bytes.subarray(from, cut));
          from = cut;
        }
        expect(scanner.result()).toEqual(expected);
      }),
    );
  });

  it("finds usage in parts that are each one JSON object without newlines, and keeps the last report", () => {
    const scanner = new StreamUsageScanner();
    scanner.push(enc.encode(JSON.stringify({ token: "a" })));
    scanner.push(enc.encode(JSON.stringify({ usage: { prompt_tokens: 1, prompt_tokens_details: { cached_tokens: 0 } } })));
    scanner.push(enc.encode(JSON.stringify({ token: "b" })));
    scanner.push(enc.encode(JSON.stringify({ usage })));
    expect(scanner.result()).toEqual(expected);
  });

  it("tells SSE from JSON lines by the first byte, leading whitespace and empty parts aside", () => {
    for (const payload of [sse, jsonLines]) {
      const scanner = new StreamUsageScanner();
      scanner.push(new Uint8Array(0));
      scanner.push(enc.encode("\n  "));
      scanner.push(enc.encode(payload));
      expect(scanner.result()).toEqual(expected);
    }
  });

  it("reports nothing without cached tokens (a server that does not count them) or without usage", () => {
    const scanner = new StreamUsageScanner();
    scanner.push(enc.encode(`data: ${JSON.stringify({ usage: { prompt_tokens: 10 } })}\n\n`));
    expect(scanner.result()).toBeUndefined();
    expect(new StreamUsageScanner().result()).toBeUndefined();
  });

  it("reads usage at the end of a whole JSON response body", () => {
    expect(usageOfBody(enc.encode(JSON.stringify({ generated_text: "x".repeat(100_000), usage })))).toEqual(expected);
    expect(usageOfBody(enc.encode('[{"generated_text":"no usage"}]'))).toBeUndefined();
    expect(usageOfBody(enc.encode("not json"))).toBeUndefined();
    expect(usageOfBody(undefined)).toBeUndefined();
  });
});
