// CommonJS: the same package through `require` (its .d.cts declarations).
import OpenAI = require("openai");
import prefixRouter = require("prefix-router");
import openaiAdapter = require("prefix-router/openai");
import fleet = require("prefix-router/fleet");

export async function main(): Promise<unknown> {
  const client = await openaiAdapter.routeOpenAI(new OpenAI.OpenAI({ apiKey: "x" }), { targets: [{ id: "a", baseURL: "http://127.0.0.1:8000/v1" }] });
  return [client.responses, prefixRouter.canonicalize({ a: 1 }), fleet.startFleet];
}
