// CommonJS: the SageMaker adapter through `require` (its .d.cts declarations).
import sdk = require("@aws-sdk/client-sagemaker-runtime");
import sagemaker = require("prefix-router/sagemaker");

export async function main(): Promise<unknown> {
  const client = await sagemaker.routeSageMaker(new sdk.SageMakerRuntimeClient({}), { targets: [{ id: "a", endpointName: "llm" }] });
  return client.router.targets();
}
