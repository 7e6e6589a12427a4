/**
 * The emulated fleet's Responses API with the official openai client: JSON and streaming, the
 * store behind `previous_response_id` (an instance's own memory, as on vLLM) and the prefix
 * cache a second turn finds.
 */
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_MODEL, startFleet, type LiveFleet } from "prefix-router/fleet";
import { fillerText } from "../../../tools/fleet/tokenizer.js";

const INSTRUCTIONS = "You are the support assistant of Example Corp. Policy: ".repeat(60);

let fleet: LiveFleet;
let clients: OpenAI[];

beforeAll(async () => {
  fleet = await startFleet({ instances: 2, timeScale: 0.005 });
  clients = fleet.urls.map((url) => new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 }));
});
afterAll(() => fleet.stop());

describe("Responses API with the official client", () => {
  it("answers JSON with output_text and usage, and a second turn finds the first in the prefix cache", async () => {
    const [c0] = clients as [OpenAI];
    const first = await c0.responses.create({ model: DEFAULT_MODEL, instructions: INSTRUCTIONS, input: "What is the refund policy?" }).withResponse();
    expect(first.response.headers.get("x-prefix-router-instance")).toBe("i0");
    expect(first.data).toMatchObject({ object: "response", status: "completed", model: DEFAULT_MODEL, previous_response_id: null });
    expect(first.data.output_text).toBe(fillerText(64));
    expect(first.data.usage?.input_tokens_details.cached_tokens).toBe(0);
    const firstInput = first.data.usage?.input_tokens as number;

    const second = await c0.responses.create({
      model: DEFAULT_MODEL,
      instructions: INSTRUCTIONS,
      previous_response_id: first.data.id,
      input: [{ role: "user", content: [{ type: "input_text", text: "And for damaged goods?" }] }],
    });
    expect(second.previous_response_id).toBe(first.data.id);
    // The second prompt holds the first prompt and its answer: the first prompt's full blocks are cached.
    expect(second.usage?.input_tokens).toBeGreaterThan(firstInput + 64);
    expect(second.usage?.input_tokens_details.cached_tokens).toBe(Math.floor(firstInput / 16) * 16);

    expect((await c0.responses.retrieve(second.id)).output_text).toBe(second.output_text);
  });

  it("streams created and in_progress, one delta per token, then completed with usage", async () => {
    const [c0] = clients as [OpenAI];
    const stream = await c0.responses.create({ model: DEFAULT_MODEL, input: "Stream it", max_output_tokens: 5, stream: true });
    const types: string[] = [];
    let text = "";
    let final: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === "response.output_text.delta") text += event.delta;
      if (event.type === "response.incomplete" || event.type === "response.completed") final = event.response;
    }
    expect(types.slice(0, 4)).toEqual(["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]);
    expect(types.filter((t) => t === "response.output_text.delta")).toHaveLength(5);
    expect(types.at(-1)).toBe("response.incomplete");
    expect(text).toBe(fillerText(5));
    expect(final).toMatchObject({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" }, usage: { output_tokens: 5 } });
    expect(final?.usage?.input_tokens_details.cached_tokens).toBeTypeOf("number");
  });

  it("answers 404 for a previous_response_id another instance holds, or one not stored", async () => {
    const [c0, c1] = clients as [OpenAI, OpenAI];
    const first = await c0.responses.create({ model: DEFAULT_MODEL, input: "Hello" });
    const elsewhere = c1.responses.create({ model: DEFAULT_MODEL, input: "Again", previous_response_id: first.id });
    await expect(elsewhere).rejects.toMatchObject({ status: 404, message: expect.stringContaining(`Response with id '${first.id}' not found.`) });
    const unstored = await c0.responses.create({ model: DEFAULT_MODEL, input: "Forget me", store: false });
    await expect(c0.responses.create({ model: DEFAULT_MODEL, input: "x", previous_response_id: unstored.id })).rejects.toMatchObject({ status: 404 });
    await c0.responses.delete(first.id);
    await expect(c0.responses.retrieve(first.id)).rejects.toMatchObject({ status: 404 });
  });

  it("renders function calls and their outputs into the conversation, and rejects what it cannot render", async () => {
    const [c0] = clients as [OpenAI];
    const tools: OpenAI.Responses.Tool[] = [{ type: "function", name: "lookup", parameters: { type: "object", properties: {} }, strict: false }];
    const ok = await c0.responses.create({
      model: DEFAULT_MODEL,
      tools,
      input: [
        { role: "user", content: "Look it up" },
        { type: "function_call", call_id: "c1", name: "lookup", arguments: "{}" },
        { type: "function_call_output", call_id: "c1", output: "42" },
      ],
    });
    expect(ok.status).toBe("completed");
    await expect(c0.responses.create({ model: DEFAULT_MODEL, input: [{ type: "item_reference", id: "x" }] })).rejects.toMatchObject({ status: 400 });
    await expect(c0.responses.create({ model: DEFAULT_MODEL, input: [] })).rejects.toMatchObject({ status: 400 });
  });
});
