/**
 * The tenant of an OpenAI-compatible request (see adapter/tenant.ts): resolved once, set as the
 * routing key's tenant, and written into the body of generation requests as `prompt_cache_key`
 * and, with `isolation: "tenant"`, vLLM's `cache_salt`. The fields are appended to the body's
 * text, which is otherwise sent as it came; a field the request already carries is left as it is
 * (under isolation a request whose fields disagree with its tenant is refused before that).
 */
import { type TenantIdentity, appendMembers, missingFields } from "../adapter/tenant.js";
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

/** The call whose tenant {@link applyTenant} resolves: its route, URL, init and raw body. */
export interface TenantCall {
  readonly route: RouteRequest;
  readonly url: URL;
  readonly init: RequestInit;
  /** The body's text (or bytes) that `route.body` was parsed from. */
  readonly raw: string | Uint8Array | undefined;
}

/**
 * Sets `route.tenant` and returns the `init` to send: the same one, or one whose body carries the
 * tenant's fields. `path` is the request's path relative to the client's base.
 *
 * @throws {RouterError} `ERR_TENANT_MISMATCH` (see {@link TenantIdentity.resolve})
 */
export function applyTenant(identity: TenantIdentity<OpenAITenantRequest>, call: TenantCall, path: string): RequestInit {
  const { route, url, init, raw } = call;
  const body = isPlainObject(route.body) ? route.body : undefined;
  const { tenant, salt } = identity.resolve(
    { id: body?.["prompt_cache_key"], idField: "prompt_cache_key", salt: body?.["cache_salt"] },
    () => ({ url, headers: new Headers(init.headers), body }),
  );
  if (tenant === undefined) return init;
  route.tenant = tenant;
  if (body === undefined || raw === undefined || !GENERATION_PATH.test(path)) return init;
  const added = missingFields(body, { prompt_cache_key: tenant, cache_salt: salt });
  if (added.length === 0) return init;
  const headers = new Headers(init.headers);
  headers.delete("content-length");
  return { ...init, headers, body: appendMembers(raw, body, added) as BodyInit };
}

function isPlainObject(value: unknown): value is Readonly<Record<string, unknown>> {
  return value !== null && typeof value === "object" && !Array.isArray(value) && !ArrayBuffer.isView(value);
}
