/**
 * The SageMaker adapter's vocabulary that needs no AWS SDK types: a target's endpoint fields,
 * the adapter's own options and the tenant header. route-sagemaker.ts adds the SDK-typed parts
 * (a target's own `client`); the root entry point's peer-free exports (deprecated.ts) reuse these.
 */
import type { TenantOptions } from "../adapter/tenant.js";
import type { TargetSpec } from "../types.js";

/** A SageMaker destination's endpoint fields. */
export interface SageMakerTargetFields extends TargetSpec {
  /** The endpoint's name (`EndpointName`). Non-empty. */
  readonly endpointName: string;
  /**
   * The production variant (`TargetVariant`).
   * @default undefined — SageMaker picks a variant by its weights
   */
  readonly targetVariant?: string;
  /**
   * The inference component (`InferenceComponentName`).
   * @default undefined — the endpoint's model
   */
  readonly inferenceComponentName?: string;
}

/** What a `tenant` function of the SageMaker adapter is called with. */
export interface SageMakerTenantRequest {
  /** The command's input (`EndpointName`, `Body`, `ContentType`, …), as the caller built it. */
  readonly input: Readonly<Record<string, unknown>>;
  /** The body: its parsed JSON value when it is JSON, else its bytes or text. */
  readonly body: unknown;
}

/**
 * The SageMaker adapter's own options, beside the router's, and the tenant of each request
 * (`tenant`, `isolation`, `cacheSaltSecret`; docs/tenants.md). With `isolation: "tenant"`, JSON
 * bodies get vLLM's `cache_salt` (so `canonicalizeBody` must stay on: the body is rewritten anyway).
 */
export interface SageMakerAdapterOptions extends TenantOptions<SageMakerTenantRequest> {
  /**
   * Send a JSON body (content type JSON or absent) as its canonical JSON, so that SageMaker's
   * own byte-prefix routing sees identical bytes for equivalent requests. Non-JSON bodies are
   * always sent untouched.
   * @default true
   */
  canonicalizeBody?: boolean;
  /**
   * Targets one request may try, the first included, from 1 to 16 (as the OpenAI adapter's
   * `attempts`). A request goes to the key's next target only when the model never ran it (a
   * connection that failed before the request was written, `ServiceUnavailable`,
   * `ModelNotReadyException`),
   * never once the response began. The SDK client's own retries (its `maxAttempts`) happen
   * first, inside each attempt, on the same target.
   * @default 2 (`DEFAULT_ATTEMPTS`, shared with the OpenAI adapter)
   */
  attempts?: number;
}

/**
 * The header SageMaker reads the tenant id (`PrefixAwareId`) from. SDK versions whose model
 * predates `PrefixAwareId` drop the input field; the routed client then sets this header itself.
 */
export const PREFIX_AWARE_ID_HEADER = "X-Amzn-SageMaker-Prefix-Aware-Id";
