/**
 * `prefix-router/sagemaker`: the SageMaker Runtime adapter, typed with the AWS SDK's own types.
 * Type-checking it needs `@aws-sdk/client-sagemaker-runtime` installed (an optional peer); the
 * root entry point and `prefix-router/openai` never do.
 * @packageDocumentation
 */
export { DEFAULT_SAGEMAKER_MODE, PREFIX_AWARE_ID_HEADER, routeSageMaker } from "./route-sagemaker.js";
export type { RouteSageMakerOptions, RoutedSageMakerClient, SageMakerTarget } from "./route-sagemaker.js";
export type { SageMakerTenantRequest } from "./target.js";
export { DEFAULT_ATTEMPTS, MAX_ATTEMPTS, getRouter } from "../adapter/handle.js";
export { DEFAULT_ISOLATION } from "../adapter/tenant.js";
export type { TenantIsolation, TenantOptions } from "../adapter/tenant.js";
