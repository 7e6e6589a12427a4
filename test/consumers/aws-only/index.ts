// ESM: the SageMaker side, with the AWS SDK installed and no openai.
import { InvokeEndpointCommand, SageMakerRuntimeClient } from "@aws-sdk/client-sagemaker-runtime";
import { createRouter } from "prefix-router";
import { routeSageMaker as fromRoot } from "prefix-router/sagemaker";
import { PREFIX_AWARE_ID_HEADER, type SageMakerTarget, getRouter, routeSageMaker } from "prefix-router/sagemaker";
import { startFleet } from "prefix-router/fleet";

const base = new SageMakerRuntimeClient({ region: "us-east-1" });
const targets: SageMakerTarget[] = [{ id: "a", endpointName: "llm", client: base }];
const client = await routeSageMaker(base, { targets, canonicalizeBody: true });
const output = await client.send(new InvokeEndpointCommand({ EndpointName: "llm", Body: "{}", ContentType: "application/json" }));
const legacy = await fromRoot(base, { targets: [{ id: "b", endpointName: "llm" }] });
const sameClass: SageMakerRuntimeClient = legacy;
export const used = [output.Body, client.router.stats(), getRouter(client), PREFIX_AWARE_ID_HEADER, sameClass, createRouter, startFleet];
