/**
 * The SageMaker adapter as the root entry point (`prefix-router`) exports it, for code written
 * before `prefix-router/sagemaker` existed: the same function, typed without the AWS SDK so that
 * the root entry point type-checks where `@aws-sdk/client-sagemaker-runtime` is not installed.
 * A target's `client` is any object here; `prefix-router/sagemaker` types it as the SDK's client.
 */
import type { RouterOptions } from "../options.js";
import type { Router } from "../types.js";
import { routeSageMaker as route } from "./route-sagemaker.js";
import type { SageMakerAdapterOptions, SageMakerTargetFields } from "./target.js";

/**
 * A SageMaker destination, typed without the AWS SDK.
 * @deprecated Import `SageMakerTarget` from `prefix-router/sagemaker`, where `client` is a `SageMakerRuntimeClient`.
 */
export interface SageMakerTarget extends SageMakerTargetFields {
  /**
   * The `SageMakerRuntimeClient` that sends to this target.
   * @default the client passed to {@link routeSageMaker}
   */
  readonly client?: object;
}

/**
 * Options of the root entry point's {@link routeSageMaker}.
 * @deprecated Import `RouteSageMakerOptions` from `prefix-router/sagemaker`.
 */
export interface RouteSageMakerOptions extends Omit<RouterOptions<SageMakerTarget>, "mode">, SageMakerAdapterOptions {
  /** The targets. Ids non-empty and unique; each with a non-empty `endpointName`. */
  targets: readonly SageMakerTarget[];
}

/**
 * A routed SageMaker client, typed without the AWS SDK.
 * @deprecated Import `RoutedSageMakerClient` from `prefix-router/sagemaker`.
 */
export type RoutedSageMakerClient<C extends object = object> = C & { readonly router: Router<SageMakerTarget> };

/**
 * `routeSageMaker`, typed without the AWS SDK: the same function as `prefix-router/sagemaker`'s.
 * @deprecated Import `routeSageMaker` from `prefix-router/sagemaker`, whose types are the AWS
 * SDK's own; this export is kept for existing imports and will be removed in a future release.
 */
export const routeSageMaker = route as unknown as <C extends object>(client: C, options: RouteSageMakerOptions) => Promise<RoutedSageMakerClient<C>>;
