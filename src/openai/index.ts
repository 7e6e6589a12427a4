/**
 * `prefix-router/openai`: the OpenAI adapter — `routeOpenAI` for openai-node clients and
 * `createRoutedFetch` for anything that takes a `fetch` (the Vercel AI SDK, LangChain). Its
 * types need no `openai` package: the client is typed by what the adapter uses of it.
 * @packageDocumentation
 */
export { routeOpenAI } from "./client.js";
export type { RoutableClient, RouteOpenAIOptions } from "./client.js";
export { createRoutedFetch } from "./routed-fetch.js";
export type { FetchLike, OpenAITarget, RedirectPolicy, RoutedFetch, RoutedFetchOptions, RoutedRequestInfo } from "./types.js";
export { DEFAULT_REDIRECT, MAX_REDIRECTS } from "./redirects.js";
export type { OpenAITenantRequest } from "./tenant.js";
export { DEFAULT_ISOLATION } from "../adapter/tenant.js";
export type { TenantIsolation, TenantOptions } from "../adapter/tenant.js";
export { REASON_HEADER, TARGET_HEADER } from "./body.js";
export { DEFAULT_RESPONSE_AFFINITY } from "./responses.js";
export type { ResponseAffinityOptions } from "./responses.js";
export { DEFAULT_RESPONSE_STORE } from "./response-store.js";
export type { ResponseStoreOptions } from "./response-store.js";
export type { ResponseAffinityStats, ResponseStoreStats } from "./stats.js";
export { DEFAULT_ATTEMPTS, MAX_ATTEMPTS, getRouter } from "../adapter/handle.js";
