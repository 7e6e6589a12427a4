/**
 * One tenant identity per request, resolved in one place and written to every field that
 * carries it — so the routing key, the OpenAI `prompt_cache_key`, vLLM's `cache_salt` and
 * SageMaker's `PrefixAwareId` can never disagree. Both adapters use it.
 *
 * Resolution: without isolation, the id the request itself carries (OpenAI `prompt_cache_key`,
 * SageMaker `PrefixAwareId`) wins; otherwise the adapter's `tenant` option — a fixed id, or a
 * function of the request. Under `isolation: "tenant"` with a `tenant` option, the option alone
 * decides: the application derives it from its own authentication, while the body is whatever the
 * caller wrote, so a request whose `prompt_cache_key` / `PrefixAwareId` names another tenant, or
 * that brings its own `cache_salt`, is refused with `ERR_TENANT_MISMATCH` before anything is sent
 * (taking the body's word would hand one tenant another's cache namespace). The router checks the
 * result like every tenant id: 1–64 printable ASCII characters.
 *
 * Isolation: with `isolation: "tenant"`, a request with a tenant also gets vLLM's `cache_salt`,
 * which makes the engine keep that tenant's prefix-cache blocks apart from every other tenant's
 * (vLLM mixes the salt into the hash of the first block, so no block of one tenant can match a
 * block of another). That closes the prefix-cache timing side channel between tenants
 * (CVE-2025-46570) at the price of recomputing prefixes that tenants share. The salt is the
 * tenant id itself, or, with `cacheSaltSecret`, HMAC-SHA256(secret, tenant) in base64url — 43
 * characters, the length vLLM recommends — so that knowing a tenant id does not give its salt.
 * Only prefix-router writes `cache_salt` under isolation: a request that carries one (other than
 * the very salt its tenant gets) is refused, whether or not there is a `tenant` option.
 */
import { createHmac } from "node:crypto";
import { RouterError } from "../errors.js";
import { checkOneOf, describe, keysOf, quoteShort } from "../internal/validate.js";
import { validateTenant } from "../routing/routing-key.js";

/** Whether tenants share the engines' prefix caches (`"none"`) or each gets its own (`"tenant"`, vLLM `cache_salt`). */
export type TenantIsolation = "none" | "tenant";

/** The isolation when none is given: tenants share the engines' prefix caches. */
export const DEFAULT_ISOLATION: TenantIsolation = "none";

/** @internal Every key of {@link TenantOptions}. */
export const TENANT_OPTION_KEYS = keysOf<TenantOptions<unknown>>()(["tenant", "isolation", "cacheSaltSecret"]);

/** The tenant options both adapters take; `R` is what the adapter passes to a `tenant` function. */
export interface TenantOptions<R> {
  /**
   * The tenant of each request, from your authentication: an id, or a function of the request
   * returning one (or `undefined`). A carried `prompt_cache_key` / `PrefixAwareId` wins, except
   * under isolation, where this decides. 1–64 printable ASCII (`ERR_INVALID_TENANT`).
   * @default undefined — only ids carried by the requests
   */
  tenant?: string | ((request: R) => string | undefined);
  /**
   * `"tenant"` also sends vLLM's `cache_salt` (only prefix-router may), so each tenant gets its own
   * prefix-cache namespace; `"none"` lets tenants share cached prefixes (a timing side channel
   * between them, and more cache hits). See docs/tenants.md.
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
   * The request's tenant and `cache_salt` (see the file header for which source wins). `carried`
   * is what the request says itself: the id it names (`undefined` or `null`: none; any other
   * value is an id, which the router checks and refuses with `ERR_INVALID_TENANT` when it is no
   * valid one) and its own `cache_salt`. `request` is called only for a `tenant` function.
   *
   * @throws {RouterError} `ERR_TENANT_MISMATCH` under `isolation: "tenant"`: the request names
   * another tenant than the `tenant` option's, or carries a `cache_salt` other than its tenant's
   */
  resolve(carried: CarriedTenant, request: () => R): { tenant: string | undefined; salt: string | undefined } {
    const named = carried.id === undefined || carried.id === null ? undefined : carried.id;
    let tenant: string | undefined;
    if (this.isolation === "tenant" && (this.fixed !== undefined || this.derive !== undefined)) {
      tenant = this.option(request);
      if (named !== undefined && named !== tenant) {
        throw new RouterError(
          "ERR_TENANT_MISMATCH",
          `Under isolation the \`tenant\` option decides: \`${carried.idField}\` names ${quoteShort(named)}, the option ${tenant === undefined ? "none" : JSON.stringify(tenant)}`,
        );
      }
    } else {
      tenant = named !== undefined ? (named as string) : this.option(request);
    }
    const salt = this.salt(tenant);
    if (this.isolation === "tenant" && carried.salt !== undefined && carried.salt !== salt) {
      // Never echo a salt: with `cacheSaltSecret` it is the secret's output.
      throw new RouterError(
        "ERR_TENANT_MISMATCH",
        "Under isolation only prefix-router sets `cache_salt`: the request carries its own",
      );
    }
    return { tenant, salt };
  }

  private option(request: () => R): string | undefined {
    return this.derive === undefined ? this.fixed : this.derive(request());
  }

  /** vLLM's `cache_salt` for `tenant` under `isolation: "tenant"`; `undefined` otherwise or without a tenant. */
  salt(tenant: string | undefined): string | undefined {
    if (this.isolation !== "tenant" || tenant === undefined) return undefined;
    return this.secret === undefined ? tenant : createHmac("sha256", this.secret).update(tenant).digest("base64url");
  }
}

/** What a request carries of its own tenant fields (see {@link TenantIdentity.resolve}). */
export interface CarriedTenant {
  /** The tenant id the request names, as it names it: `undefined` or `null` for none. */
  readonly id: unknown;
  /** The field that names it, for messages: `prompt_cache_key` or `PrefixAwareId`. */
  readonly idField: string;
  /** The request's own `cache_salt`, as it has it: `undefined` for none. */
  readonly salt: unknown;
}

/** The members of `fields` that have a value and that `body` lacks, in order. A value the request already carries is never replaced. */
export function missingFields(
  body: Readonly<Record<string, unknown>>,
  fields: Readonly<Record<string, string | undefined>>,
): [string, string][] {
  const out: [string, string][] = [];
  for (const [name, value] of Object.entries(fields)) if (value !== undefined && body[name] === undefined) out.push([name, value]);
  return out;
}

const encoder = new TextEncoder();

/**
 * The JSON text of an object with `members` appended before its closing brace; the text before
 * is kept byte for byte. `text` must be the JSON text of `object` (valid, an object), and
 * `object` must lack every member: no parse, no re-serialization, so nesting of any depth costs
 * nothing and the body goes out as it came plus the members. Bytes in, bytes out.
 */
export function appendMembers<B extends string | Uint8Array>(text: B, object: Readonly<Record<string, unknown>>, members: readonly [string, string][]): B {
  if (members.length === 0) return text;
  let added = members.map(([name, value]) => `${JSON.stringify(name)}:${JSON.stringify(value)}`).join(",");
  if (Object.keys(object).length > 0) added = `,${added}`;
  // Valid JSON ends with the object's `}` and then only whitespace.
  let end = text.length - 1;
  while (end >= 0 && (typeof text === "string" ? text.charCodeAt(end) : (text[end] as number)) !== 0x7d) end--;
  if (end < 0) throw new TypeError("Expected the JSON text of an object");
  if (typeof text === "string") return (text.slice(0, end) + added + text.slice(end)) as B;
  const bytes = encoder.encode(added);
  const out = new Uint8Array(text.length + bytes.length);
  out.set(text.subarray(0, end), 0);
  out.set(bytes, end);
  out.set(text.subarray(end), end + bytes.length);
  return out as B;
}
