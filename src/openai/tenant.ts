/**
 * The tenant of an OpenAI-compatible request (see adapter/tenant.ts): resolved once, set as the
 * routing key's tenant, and written into the body of generation requests as `prompt_cache_key`
 * and, with `isolation: "tenant"`, vLLM's `cache_salt` — fields the request already carries are
 * left as they are.
 */
import { type TenantIdentity, withFields } from "../adapter/tenant.js";
import type { RouteRequest } from "../types.js";

/** What a `tenant` function of the OpenAI adapter is called with. */
export interface OpenAITenantRequest {
  /** The request's URL, before it is rewritten onto a target. */
  readonly url: URL;
  /** The request's headers. */
  readonly headers: Headers;
  /** The body when it is a JSON object, else `undefined`. */
  readonly body: Readonly<Record<string, unknown>> | undefined;
}

/** Paths whose bodies take `prompt_cache_key` and `cache_salt`: chat, completions, responses. */
const GENERATION_PATH = /\/(?:chat\/completions|completions|responses)$/;

/**
 * Sets `route.tenant` and returns the `init` to send: the same one, or one whose body carries the
 * tenant's fields. `path` is the request's path relative to the client's base.
 */
export function applyTenant(
  identity: TenantIdentity<OpenAITenantRequest>,
  route: RouteRequest,
  url: URL,
  init: RequestInit,
  path: string,
): RequestInit {
  const body = isPlainObject(route.body) ? route.body : undefined;
  const carried = typeof body?.["prompt_cache_key"] === "string" ? (body["prompt_cache_key"] as string) : undefined;
  const tenant = identity.of(carried, () => ({ url, headers: new Headers(init.headers), body }));
  if (tenant === undefined) return init;
  route.tenant = tenant;
  if (body === undefined || !GENERATION_PATH.test(path)) return init;
  const stamped = withFields(body, { prompt_cache_key: tenant, cache_salt: identity.salt(tenant) });
  if (stamped === body) return init;
  const headers = new Headers(init.headers);
  headers.delete("content-length");
  return { ...init, headers, body: JSON.stringify(stamped) };
}

function isPlainObject(value: unknown): value is Readonly<Record<string, unknown>> {
  return value !== null && typeof value === "object" && !Array.isArray(value) && !ArrayBuffer.isView(value);
}
