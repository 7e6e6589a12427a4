/**
 * Route an existing SageMakerRuntimeClient across several SageMaker targets, streaming included,
 * and print what the router saw.
 *
 *   npx tsx examples/sagemaker-routed-client.ts
 *       starts a 7-instance emulated fleet on loopback (speaking the SageMaker Runtime protocol,
 *       200× faster than real time); each instance stands for one endpoint, so each target
 *       carries a client pointed at it.
 *   SAGEMAKER_ENDPOINTS=llm-a,llm-b,llm-c AWS_REGION=us-east-1 npx tsx examples/sagemaker-routed-client.ts
 *       routes across your own endpoints (one target per endpoint, the default credentials chain).
 *       The bodies are OpenAI-style chat requests: use endpoints whose container takes them.
 *
 * Workload: 8 tenants, each with its own long policy document as system prompt, ask 6 rounds of
 * questions, every tenant at once in each round, half of them streamed. Each tenant's requests
 * land on one target (`PrefixAwareId` is the tenant id), whose prefix cache then serves the
 * policy document from the second round on.
 */
import {
  InvokeEndpointCommand,
  InvokeEndpointWithResponseStreamCommand,
  SageMakerRuntimeClient,
  type SageMakerRuntimeClientConfig,
} from "@aws-sdk/client-sagemaker-runtime";
import { type SageMakerTarget, routeSageMaker } from "prefix-router/sagemaker";
import { startFleet } from "prefix-router/fleet";

const endpoints = process.env.SAGEMAKER_ENDPOINTS?.split(",").filter((e) => e.length > 0);
const fleet = endpoints === undefined ? await startFleet({ instances: 7, timeScale: 0.005, defaultMaxTokens: 24 }) : undefined;

// Loopback endpoints take any credentials; real ones use the default chain. `maxAttempts: 1`:
// a failing target is left for the next one at once instead of after the SDK's own backoff.
const config = (endpoint?: string): SageMakerRuntimeClientConfig => ({
  region: process.env.AWS_REGION ?? "us-east-1",
  maxAttempts: 1,
  ...(endpoint === undefined ? {} : { endpoint, credentials: { accessKeyId: "local", secretAccessKey: "local" } }),
});

// The client the application already has.
const client = new SageMakerRuntimeClient(config(fleet?.urls[0]));

const targets: SageMakerTarget[] =
  endpoints?.map((endpointName) => ({ id: endpointName, endpointName })) ??
  fleet!.instances.map((inst, i) => ({
    id: inst.id,
    endpointName: "support-llm",
    // The first target uses the wrapped client; the others stand for endpoints elsewhere.
    ...(i === 0 ? {} : { client: new SageMakerRuntimeClient(config(inst.url)) }),
  }));

const sagemaker = await routeSageMaker(client, { targets, concurrencyThreshold: 8 });

function policy(tenant: string): string {
  const rules = Array.from({ length: 100 }, (_, i) => `${tenant} policy §${i}: refunds within ${i + 14} days, escalate case type ${i}.`);
  return `You are the support assistant of ${tenant}.\n${rules.join("\n")}`;
}

const tenants = ["acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne", "wonka"];
const decoder = new TextDecoder();
try {
  for (let round = 0; round < 6; round++) {
    await Promise.all(
      tenants.map(async (tenant, t) => {
        const body = JSON.stringify({
          messages: [
            { role: "system", content: policy(tenant) },
            { role: "user", content: `Question ${round}: can I return an opened item?` },
          ],
          max_tokens: 24,
        });
        const input = { EndpointName: "support-llm", Body: body, ContentType: "application/json", PrefixAwareId: tenant };
        if ((round + t) % 2 === 0) {
          const out = await sagemaker.send(new InvokeEndpointCommand(input));
          void decoder.decode(out.Body); // an application would parse the answer here
        } else {
          const out = await sagemaker.send(new InvokeEndpointWithResponseStreamCommand(input));
          for await (const event of out.Body ?? []) {
            // an application would render the PayloadPart bytes here; the lease ends with the stream
            void event.PayloadPart?.Bytes;
          }
        }
      }),
    );
  }

  const { targets: perTarget, totals } = sagemaker.router.stats();
  console.log("target  routed  share  spillover  cached-token ratio  TTFT p50 (ms)");
  for (const s of perTarget) {
    console.log(
      `${s.id.padEnd(7)} ${String(s.routed).padStart(6)}  ${(s.share * 100).toFixed(1).padStart(4)}%  ${String(s.spillover).padStart(9)}  ${
        s.cachedTokenRatio === null ? "—".padStart(18) : (s.cachedTokenRatio * 100).toFixed(1).padStart(17) + "%"
      }  ${s.ttftMs === null ? "—" : s.ttftMs.p50.toFixed(1)}`,
    );
  }
  console.log(
    `total: ${totals.routed} requests, ${totals.inflight} in flight, cached-token ratio ${
      totals.cachedTokenRatio === null ? "—" : `${(totals.cachedTokenRatio * 100).toFixed(1)}%`
    }, spillover rate ${(totals.spilloverRate * 100).toFixed(1)}%`,
  );
} finally {
  for (const t of targets) t.client?.destroy();
  client.destroy();
  await fleet?.stop();
}
