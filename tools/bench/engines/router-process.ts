/**
 * The entry point of one router process of `bench --engine … --routers N` (routers.ts starts
 * them): an application process with its own router (client.ts) in front of the engines. It is
 * started with an IPC channel and its {@link RouterProcessConfig} as JSON in `argv[2]`, reports
 * `{ type: "ready" }`, then plays each `{ type: "request", id, messages, maxTokens }` it is sent
 * and answers `{ type: "outcome", id, outcome }`. It exits when its parent closes the channel or
 * dies.
 */
import { RoutedClient, type Message, type RequestOutcome, type RoutedClientOptions } from "./client.js";

/** What a router process is told to be. */
export type RouterProcessConfig = RoutedClientOptions;

/** A message from the bench to a router process. */
export type RouterProcessRequest = { type: "request"; id: number; messages: Message[]; maxTokens: number };

/** A message from a router process to the bench. */
export type RouterProcessMessage = { type: "ready" } | { type: "error"; message: string } | { type: "outcome"; id: number; outcome: RequestOutcome };

function send(message: RouterProcessMessage): void {
  if (process.connected) process.send!(message);
}

async function main(): Promise<void> {
  process.on("disconnect", () => process.exit(0));
  if (process.send === undefined || !process.connected) {
    process.stderr.write("prefix-router bench router process: start it through the bench (it needs an IPC channel)\n");
    process.exit(2);
  }
  try {
    const config = JSON.parse(process.argv[2] ?? "{}") as RouterProcessConfig;
    const { default: OpenAI } = await import("openai");
    const client = await RoutedClient.open(OpenAI, config);
    process.on("message", (m: RouterProcessRequest) => {
      if (m.type !== "request") return;
      void client.send(m.messages, m.maxTokens).then((outcome) => send({ type: "outcome", id: m.id, outcome }));
    });
    send({ type: "ready" });
  } catch (err) {
    send({ type: "error", message: err instanceof Error ? err.message : String(err) });
    process.exit(1);
  }
}

void main();
