/** `prefix-router advise` on log files: formats, streaming, output, errors. */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { adviseLog, adviseRequests } from "prefix-router/advise";
import { driftLog } from "./logs.js";
import { parseAdviseArgs, runAdviseCommand } from "../../../tools/advise/cli.js";

const dir = mkdtempSync(join(tmpdir(), "prefix-router-advise-"));

function file(name: string, lines: readonly unknown[]): string {
  const path = join(dir, name);
  writeFileSync(path, lines.map((l) => (typeof l === "string" ? l : JSON.stringify(l))).join("\r\n") + "\n");
  return path;
}

function io() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) } };
}

describe("prefix-router advise", () => {
  it("reads a file line by line (CRLF, blank lines) and finds what it finds in memory", async () => {
    const log = driftLog("timestamp", 300);
    const path = file("timestamp.jsonl", [...log.slice(0, 100), "", ...log.slice(100)]);
    const fromFile = await adviseLog(path, { simulate: false });
    const fromMemory = await adviseRequests(log, { simulate: false });
    expect(fromFile.requests).toBe(300);
    expect({ ...fromFile, source: "" }).toEqual({ ...fromMemory, source: "" });
    expect(fromFile.timestamps).toBe(true);
    expect(fromFile.durationMs).toBe(149_501);
  });

  it("prints the finding and the recommendation, and --json - writes the report to stdout", async () => {
    const path = file("cli.jsonl", driftLog("timestamp", 200));
    const a = io();
    expect(await runAdviseCommand([path, "--strategies", "random,prefix-aware", "--prefix-length", "4096", "-q"], a.io)).toBe(0);
    const text = a.out.join("\n");
    expect(text).toContain("a timestamp at character 48 of the system prompt");
    expect(text).toContain("Recommendation:");
    const b = io();
    expect(await runAdviseCommand([path, "--drift-only", "--json", "-", "-q"], b.io)).toBe(0);
    const json = JSON.parse(b.out.join("\n")) as { findings: { field: string }[]; rows: unknown[] };
    expect(json.findings[0]!.field).toBe("the system prompt");
    expect(json.rows).toEqual([]);
    expect(b.err.join("\n")).toContain("a timestamp at character 48");
  });

  it("reads OpenAI chat and Responses bodies, SageMaker payloads and wrappers with tenants and timestamps", async () => {
    const system = "You are the assistant of a bank. Follow the policy below. ".repeat(40);
    const report = await adviseRequests(
      [
        { timestamp: "2025-06-01T10:00:00Z", tenant: "acme", body: { model: "m", messages: [{ role: "system", content: system }, { role: "user", content: "a" }] } },
        { timestamp: "2025-06-01T10:00:01Z", body: JSON.stringify({ model: "m", instructions: system, input: [{ role: "user", content: [{ type: "input_text", text: "b" }] }], prompt_cache_key: "globex" }) },
        { timestamp: "2025-06-01T10:00:02Z", Body: JSON.stringify({ inputs: `${system}c`, parameters: { max_new_tokens: 20 } }), PrefixAwareId: "initech" },
        { timestamp: "2025-06-01T10:00:03Z", custom_id: "r4", method: "POST", url: "/v1/chat/completions", body: { model: "m", messages: [{ role: "developer", content: system }, { role: "user", content: "d" }] } },
      ],
      { simulate: false },
    );
    expect(report).toMatchObject({ requests: 4, tenants: 3, timestamps: true, durationMs: 3001, kind: "requests" });
    expect(report.findings).toEqual([]);
    // The chat, Responses and batch requests share the system prompt: the second and fourth hit it.
    expect(report.ceilingHitRate).toBeGreaterThan(0.4);
  });

  it("fails on a line that is no request, naming the file and the line; 2 on a usage error", async () => {
    const path = file("bad.jsonl", [{ model: "m", messages: [{ role: "user", content: "x" }] }, { hello: "world" }]);
    const a = io();
    expect(await runAdviseCommand([path, "-q", "--drift-only"], a.io)).toBe(1);
    expect(a.err[0]).toBe(`prefix-router advise: ${path}:2: expected a request body with \`messages\`, \`input\`, \`prompt\` or \`inputs\` (line: {"hello":"world"})`);
    const b = io();
    expect(await runAdviseCommand([join(dir, "missing.jsonl")], b.io)).toBe(1);
    expect(b.err[0]).toMatch(/Cannot read request log .*missing\.jsonl/);
    const c = io();
    expect(await runAdviseCommand([], c.io)).toBe(2);
    expect(c.err[0]).toBe("prefix-router advise: Expected one request log file, got none");
    expect(() => parseAdviseArgs(["x.jsonl", "--instances", "two"])).toThrow('Expected `--instances` to hold integers, got "two"');
    expect(parseAdviseArgs(["x.jsonl", "--capacity", "600k", "--rate", "2", "--drift-only"]).options).toEqual({ capacityTokens: 600_000, rateMultiplier: 2, simulate: false });
  });
});

describe("hostile lines", () => {
  const chat = (content: string) => JSON.stringify({ model: "m", messages: [{ role: "user", content }] });
  /** A valid request nested `depth` levels deep in an unused field — built as text: no recursion. */
  const deep = (depth: number) => `{"model":"m","messages":[{"role":"user","content":"x"}],"metadata":${"[".repeat(depth - 1)}${"]".repeat(depth - 1)}}`;

  async function failure(promise: Promise<unknown>): Promise<{ code?: unknown; line?: unknown; message?: unknown } | undefined> {
    return promise.then(
      () => undefined,
      (e: unknown) => e as { code?: unknown; line?: unknown; message?: unknown },
    );
  }

  it("a line nested 50,000 levels deep is ERR_LOG_FORMAT naming its line, not a stack overflow; 1,024 levels are read", async () => {
    const path = file("deep.jsonl", [chat("a"), deep(50_000), chat("c")]);
    const error = await failure(adviseLog(path, { simulate: false }));
    expect(error).toMatchObject({ code: "ERR_LOG_FORMAT", line: 2 });
    expect(String(error?.message)).toContain(`${path}:2: nested deeper than 1,024 levels`);
    expect(await failure(adviseLog(file("deep-1024.jsonl", [chat("a"), deep(1024)]), { simulate: false }))).toBeUndefined();
    expect(await failure(adviseLog(file("deep-1025.jsonl", [chat("a"), deep(1025)]), { simulate: false }))).toMatchObject({ line: 2 });
    // In memory too: the same line as JSON text.
    expect(await failure(adviseRequests([chat("a"), deep(50_000)], { simulate: false }))).toMatchObject({ code: "ERR_LOG_FORMAT", line: 2 });
  });

  it("a line longer than maxLineBytes is ERR_LOG_FORMAT naming its line and the option, valid JSON or not", async () => {
    const long = chat("b".repeat(2 * 1024 * 1024));
    const path = file("long.jsonl", [chat("a"), long, chat("c")]);
    const error = await failure(adviseLog(path, { simulate: false, maxLineBytes: 1024 * 1024 }));
    expect(error).toMatchObject({ code: "ERR_LOG_FORMAT", line: 2 });
    expect(String(error?.message)).toBe(`${path}:2: the line is ${(long.length + 1).toLocaleString("en-US")} bytes, longer than the 1,048,576 a line may have (\`maxLineBytes\`); it was not read`);
    expect(await adviseLog(path, { simulate: false })).toMatchObject({ requests: 3, skippedLines: 0 });
  });

  it('badLines: "skip" leaves out and counts every bad line, naming the first ones; --skip-bad-lines is it on the command line', async () => {
    const path = file("mixed-bad.jsonl", [chat("a"), deep(2000), "{not json", chat("b".repeat(5000)), { hello: "world" }, chat("c")]);
    const report = await adviseLog(path, { simulate: false, badLines: "skip", maxLineBytes: 4096 });
    expect(report).toMatchObject({ requests: 2, skippedLines: 4 });
    expect(report.skipped.map((s) => s.line)).toEqual([2, 3, 4, 5]);
    expect(report.skipped[0]!.message).toContain(`${path}:2: nested deeper than 1,024 levels`);
    const a = io();
    expect(await runAdviseCommand([path, "--skip-bad-lines", "--max-line-bytes", "4096", "--strategies", "random", "-q"], a.io)).toBe(0);
    const text = a.out.join("\n");
    expect(text).toContain("Skipped 4 bad lines, the first 3:");
    expect(text).toContain(`${path}:3: not valid JSON`);
    const b = io();
    expect(await runAdviseCommand([path, "--drift-only", "-q"], b.io)).toBe(1);
    expect(b.err[0]).toContain(`${path}:2: nested deeper than 1,024 levels`);
    expect(() => parseAdviseArgs(["x.jsonl", "--max-line-bytes", "0"])).toThrow("Expected `--max-line-bytes` to be an integer from 1 to 268435456, got 0");
    expect(parseAdviseArgs(["x.jsonl", "--skip-bad-lines", "--max-line-bytes", "1000"]).options).toEqual({ badLines: "skip", maxLineBytes: 1000 });
  });
});

describe("the HTML report", () => {
  it("draws the reuse and drift charts and the strategies' CDF and shares, with the recommendation", async () => {
    const path = file("report.jsonl", driftLog("user-id", 150));
    const html = join(dir, "advice.html");
    const a = io();
    expect(await runAdviseCommand([path, "--strategies", "random,prefix-aware", "--prefix-length", "4096", "--report", html, "-q"], a.io)).toBe(0);
    const page = readFileSync(html, "utf8");
    expect(page.match(/<svg/g)).toHaveLength(4);
    expect(page).toContain("an id");
    expect(page).toContain("Reuse lost to each drift");
    expect(page).toContain("&#34;strategy&#34;");
  });
});
