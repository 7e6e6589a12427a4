/**
 * The SageMaker adapter's vocabulary that needs no AWS SDK types: a target's endpoint fields,
 * the adapter's own options and the tenant header. route-sagemaker.ts adds the SDK-typed parts
 * (a target's own `client`); the root entry point's peer-free exports (deprecated.ts) reuse these.
 */
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

/** The SageMaker adapter's own options, beside the router's. */
export interface SageMakerAdapterOptions {
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
   * connection failure before any response, `ServiceUnavailable`, `ModelNotReadyException`),
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
