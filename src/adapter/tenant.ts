/**
 * One tenant identity per request, resolved in one place and written to every field that
 * carries it — so the routing key, the OpenAI `prompt_cache_key`, vLLM's `cache_salt` and
 * SageMaker's `PrefixAwareId` can never disagree. Both adapters use it.
 *
 * Resolution: the id the request itself carries (OpenAI `prompt_cache_key`, SageMaker
 * `PrefixAwareId`) wins; otherwise the adapter's `tenant` option — a fixed id, or a function of
 * the request. The router checks the result like every tenant id: 1–64 printable ASCII characters.
 *
 * Isolation: with `isolation: "tenant"`, a request with a tenant also gets vLLM's `cache_salt`,
 * which makes the engine keep that tenant's prefix-cache blocks apart from every other tenant's
 * (vLLM mixes the salt into the hash of the first block, so no block of one tenant can match a
 * block of another). That closes the prefix-cache timing side channel between tenants
 * (CVE-2025-46570) at the price of recomputing prefixes that tenants share. The salt is the
 * tenant id itself, or, with `cacheSaltSecret`, HMAC-SHA256(secret, tenant) in base64url — 43
 * characters, the length vLLM recommends — so that knowing a tenant id does not give its salt.
 */
import { createHmac } from "node:crypto";
import { checkOneOf, describe } from "../internal/validate.js";
import { validateTenant } from "../routing/routing-key.js";

/** Whether tenants share the engines' prefix caches (`"none"`) or each gets its own (`"tenant"`, vLLM `cache_salt`). */
export type TenantIsolation = "none" | "tenant";

/** The isolation when none is given: tenants share the engines' prefix caches. */
export const DEFAULT_ISOLATION: TenantIsolation = "none";

/** The tenant options both adapters take; `R` is what the adapter passes to a `tenant` function. */
export interface TenantOptions<R> {
  /**
   * The tenant of each request: a fixed id, or a function of the request returning an id (or
   * `undefined` for none). An id carried by the request itself (OpenAI `prompt_cache_key`,
   * SageMaker `PrefixAwareId`) takes precedence. It feeds the routing key, `prompt_cache_key`
   * (OpenAI), `PrefixAwareId` (SageMaker) and, with `isolation: "tenant"`, `cache_salt`.
   * 1–64 printable ASCII characters; anything else fails the request with `ERR_INVALID_TENANT`.
   * @default undefined — only ids carried by the requests
   */
  tenant?: string | ((request: R) => string | undefined);
  /**
   * `"tenant"` also sends vLLM's `cache_salt`, so each tenant gets its own prefix-cache namespace
   * on the engines; `"none"` lets tenants share cached prefixes (a timing side channel between
   * them, and more cache hits). See docs/tenants.md.
   * @default "none"
   */
  isolation?: TenantIsolation;
  /**
   * With `isolation: "tenant"`: the salt becomes HMAC-SHA256(secret, tenant) in base64url instead
   * of the tenant id, so a client that can reach the engines and knows a tenant id still cannot
   * share that tenant's cache. At least 16 characters.
   * @default undefined — the salt is the tenant id
   */
  cacheSaltSecret?: string;
}

/** Resolves the tenant of each request and the values derived from it; see the file header. */
export class TenantIdentity<R> {
  private constructor(
    private readonly fixed: string | undefined,
    private readonly derive: ((request: R) => string | undefined) | undefined,
    /** The isolation setting. */
    readonly isolation: TenantIsolation,
    private readonly secret: string | undefined,
  ) {}

  /**
   * Validates the tenant options of an adapter.
   * @throws TypeError / RangeError naming the option
   */
  static from<R>(options: TenantOptions<R>): TenantIdentity<R> {
    const { tenant, isolation = DEFAULT_ISOLATION, cacheSaltSecret } = options;
    if (tenant !== undefined && typeof tenant !== "string" && typeof tenant !== "function") {
      throw new TypeError(`Expected \`tenant\` to be a tenant id or a function of the request, got ${describe(tenant)}`);
    }
    if (typeof tenant === "string") {
      try {
        validateTenant(tenant);
      } catch {
        throw new RangeError(`Expected \`tenant\` to be 1 to 64 printable ASCII characters, got ${describe(tenant)}`);
      }
    }
    checkOneOf("isolation", isolation, ["none", "tenant"] as const);
    if (cacheSaltSecret !== undefined && (typeof cacheSaltSecret !== "string" || cacheSaltSecret.length < 16)) {
      throw new (typeof cacheSaltSecret === "string" ? RangeError : TypeError)(
        `Expected \`cacheSaltSecret\` to be a string of at least 16 characters, got ${typeof cacheSaltSecret === "string" ? `${cacheSaltSecret.length} characters` : describe(cacheSaltSecret)}`,
      );
    }
    return new TenantIdentity<R>(
      typeof tenant === "string" ? tenant : undefined,
      typeof tenant === "function" ? tenant : undefined,
      isolation,
      cacheSaltSecret,
    );
  }

  /**
   * The request's tenant: `carried` (the id the request carries) when present, else the option's
   * (`request` is called only for a `tenant` function). Not validated here: the router checks
   * every tenant id and fails the request with `ERR_INVALID_TENANT`.
   */
  of(carried: string | undefined, request: () => R): string | undefined {
    if (carried !== undefined) return carried;
    return this.derive === undefined ? this.fixed : this.derive(request());
  }

  /** vLLM's `cache_salt` for `tenant` under `isolation: "tenant"`; `undefined` otherwise or without a tenant. */
  salt(tenant: string | undefined): string | undefined {
    if (this.isolation !== "tenant" || tenant === undefined) return undefined;
    return this.secret === undefined ? tenant : createHmac("sha256", this.secret).update(tenant).digest("base64url");
  }
}

/**
 * `body` with each field of `fields` that has a value and that `body` lacks added; `body` itself
 * when nothing is added. A value the request already carries is never replaced.
 */
export function withFields(
  body: Readonly<Record<string, unknown>>,
  fields: Readonly<Record<string, string | undefined>>,
): Readonly<Record<string, unknown>> {
  let out: Record<string, unknown> | undefined;
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined || body[name] !== undefined) continue;
    out ??= { ...body };
    out[name] = value;
  }
  return out ?? body;
}
