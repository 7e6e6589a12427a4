/**
 * What the examples of README.md and docs/ may use without importing or declaring it (the test
 * in doc-examples.test.ts gives each block every name below that it does not import itself):
 * the packages they name, a prompt (`model`, `messages`, `body`, …), `targets` and a routed
 * `client` on an emulated fleet this module starts, and stand-ins for the reader's own code
 * (`callReplica`, `billingService`, `fixtures`, …). A block that starts with its imports and
 * declares what it uses needs none of it: the quick starts do.
 */
import { expect } from "vitest";
import OpenAI from "openai";
import { SageMakerRuntimeClient } from "@aws-sdk/client-sagemaker-runtime";
import { PrometheusExporter } from "@opentelemetry/exporter-prometheus";
import { MeterProvider } from "@opentelemetry/sdk-metrics";
import { type RoutingStrategy, type TargetSpec, boundedLoad, createRouter, mergeStats } from "prefix-router";
import { getRouter, routeOpenAI } from "prefix-router/openai";
import { routeSageMaker } from "prefix-router/sagemaker";
import { DEFAULT_MODEL, type VirtualResult, startFleet } from "prefix-router/fleet";

export { OpenAI, SageMakerRuntimeClient, PrometheusExporter, MeterProvider, boundedLoad, createRouter, getRouter, mergeStats, routeOpenAI, routeSageMaker };
export type { RoutingStrategy };

/** The emulated fleet the running examples reach: 7 instances, 100× faster than real time. */
export const fleet = await startFleet({ instances: 7, timeScale: 0.01, port: 0, models: [DEFAULT_MODEL, "llama-3.1-70b", "llama-3.1-70b:support-lora"] });

export const model = DEFAULT_MODEL;
export const policyDocument = "You answer questions about Example Corp's refund policy. Refunds are granted within 30 days. ".repeat(20);
export const policy = policyDocument;
export const question = "Can I return an opened item?";
export const followUp = "And a gift?";
export const q = question;
export const messages: { role: "system" | "user"; content: string }[] = [
  { role: "system", content: policyDocument },
  { role: "user", content: question },
];
export const body = { model, messages };
export const bodyA = body;
export const bodyB = body;
export const apiKey = "unused";
export const baseURL = "http://vllm-fleet/v1";
export const region = "us-east-1";
/** The time a test's fake clock reads. */
export const fakeNow = 0;

/** A target with a zone, as the custom-strategy examples read it. */
export interface Target extends TargetSpec {
  baseURL: string;
  zone: string;
}
export const targets: Target[] = fleet.instances.map((i, n) => ({ id: i.id, baseURL: `${i.url}/v1`, zone: n % 2 === 0 ? "eu-west-1a" : "eu-west-1b" }));
/** SageMaker targets: inference components of one endpoint (only the type-checked examples send to them). */
export const sagemakerTargets = [
  { id: "ic-a", endpointName: "support-llm", inferenceComponentName: "llama-70b-a" },
  { id: "ic-b", endpointName: "support-llm", inferenceComponentName: "llama-70b-b" },
];
export const client = await routeOpenAI(new OpenAI({ apiKey, baseURL }), { targets });

/** The application's own call to a replica: a chat completion on the fleet instance named `id`. */
export async function callReplica(id: string, request: unknown): Promise<unknown> {
  // A target id of the example's own ("a", "b", …) stands for one of the fleet's instances.
  const target = targets.find((t) => t.id === id) ?? targets[id.charCodeAt(0) % targets.length]!;
  const res = await fetch(`${target.baseURL}/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(request) });
  return res.json();
}

/** Two services that build the same request body. */
const service = { buildBody: (question: string) => ({ model, messages: [{ role: "system", content: policyDocument }, { role: "user", content: question }] }) };
export const billingService = service;
export const supportService = service;

/** A test framework's `test`, run at once; vitest's `expect`. */
export async function test(_name: string, fn: () => unknown): Promise<void> {
  await fn();
}
export { expect };

/** The application's request fixtures and the function that turns one into a body. */
export const fixtures = ["Can I return an opened item?", "How long do refunds take?", "Do you refund shipping?"];
export const buildRequestBody = (question: string) => ({ model, messages: [{ role: "system", content: policyDocument }, { role: "user", content: question }] });

/** Router processes serving their stats as JSON (here: one, as a data: URL). */
export const replicas = [`data:application/json,${encodeURIComponent(JSON.stringify(getRouter(client)!.stats()))}`];

/** A trace of arrivals and the picker a simulation routes them with. */
export const trace = [0, 5, 10, 15].map((arrivalMs, i) => ({ id: `r${i}`, arrivalMs, prompt: `${policyDocument}\n${question} (${i})` }));
export const pick = (r: { id: string }): string => (Number(r.id.slice(1)) % 2 === 0 ? "i0" : "i1");
export const results: VirtualResult[] = [];

/** Draws a streamed payload part. */
export function render(_bytes: Uint8Array | undefined): void {}
