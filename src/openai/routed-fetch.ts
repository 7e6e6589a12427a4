/**
 * A `fetch` that routes OpenAI-compatible requests across a fleet.
 *
 * Per call: read the outgoing request (URL path relative to the client's base URL, method, JSON
 * body), route it (text mode: `prompt_cache_key` is the tenant, `model` drives eligibility, a
 * request without prompt text goes by least-outstanding), join the URL onto the chosen target's
 * `baseURL` (path suffix and query string kept; a result not under that base is refused, see
 * targets.ts), merge the target's `headers`, call the underlying `fetch` without following
 * redirects elsewhere (redirects.ts), and return the response with its body wrapped so the
 * lease ends when the body has been read, cancelled or has failed (see body.ts).
 *
 * A text-mode JSON body that does not parse, or is no object, is refused before anything is sent
 * (`ERR_INVALID_JSON`, `ERR_INVALID_BODY`).
 *
 * Retries: a connection that failed before the request was written (refused, DNS, unreachable,
 * connect timeout) is retried on the key's next target, up to `attempts` in total, through the
 * shared `withAttempts`. Any other connection failure may come after the request was written: it
 * is not retried and surfaces as `ERR_CONNECTION_LOST`, so no request runs twice.
 *
 * Responses API: a request that refers to a stored response goes to the target that served it
 * (response affinity, responses.ts).
 */
import { type AttemptFacts, withAttempts } from "../adapter/attempts.js";
import { DEFAULT_ATTEMPTS, carryRouter, checkAttempts } from "../adapter/handle.js";
import { isJsonBody, parseObject } from "../adapter/json.js";
import { type LeaseRegistry, newLeaseRegistry } from "../adapter/leased-body.js";
import { adapterRouter } from "../adapter/targets.js";
import { TENANT_OPTION_KEYS, TenantIdentity } from "../adapter/tenant.js";
import { RouterError, isRouterError } from "../errors.js";
import { checkBoolean, checkFunction, checkKnownKeys, describe, keysOf } from "../internal/validate.js";
import { createRouterWith } from "../router/router.js";
import { ROUTER_OPTION_KEYS, knownRouterKeys } from "../options.js";
import type { Clock, Lease, RouteRequest } from "../types.js";
import type { Router } from "../router/types.js";
import { reportAttempt, trackResponse } from "./body.js";
import { judgeFetchError, surfaceFetchError } from "./failures.js";
import { checkRedirect, sendWithRedirects } from "./redirects.js";
import { type ResponseAffinity, type ResponsesCall, createResponseAffinity, responseAffinityOf, responsesCall } from "./responses.js";
import { type OpenAITenantRequest, applyTenant } from "./tenant.js";
import { type Base, type Relative, joinTarget, parseBase, relativeTo, validateOpenAITargets } from "./targets.js";
import type { FetchLike, OpenAITarget, RedirectPolicy, RoutedFetch, RoutedFetchOptions, RoutedRequestInfo } from "./types.js";

// Kept for modules that import these types from here (tools/demo/demo.ts); their home is ./types.ts.


/**
 * Creates a `fetch` that routes OpenAI-compatible requests across `options.targets`, and the
 * router behind it. Use it with any client that accepts a `fetch` (the Vercel AI SDK's
 * `createOpenAI({ fetch })`, LangChain, a hand-written call); for the openai client,
 * {@link routeOpenAI} does the wiring.
 *
 * Routing errors (`ERR_NO_ELIGIBLE_TARGET` for a model no target serves, `ERR_INVALID_TENANT`
 * for a bad `prompt_cache_key`, `ERR_TENANT_MISMATCH` (isolation, docs/tenants.md),
 * `ERR_INVALID_JSON` for a body that does not parse,
 * `ERR_CROSS_ORIGIN` for a URL that would leave the target) reject the call with a
 * {@link RouterError}, and nothing is sent. A connection refused everywhere rejects with the
 * underlying fetch's error once the attempts are used up; a connection that failed after the
 * request may have been written rejects with `ERR_CONNECTION_LOST` (its `cause` is the fetch
 * error) and is not retried.
 *
 * @example
 * const { fetch, router } = await createRoutedFetch({
 *   targets: [{ id: "a", baseURL: "http://10.0.0.1:8000/v1" }, { id: "b", baseURL: "http://10.0.0.2:8000/v1" }],
 * });
 * const res = await fetch("http://fleet/v1/chat/completions", { method: "POST", body: JSON.stringify(body) });
 * router.stats().targets; // TTFT percentiles, share, spillover rate, cached-token ratio
 */
export async function createRoutedFetch<T extends OpenAITarget>(options: RoutedFetchOptions<T>): Promise<RoutedFetch<T>> {
  return buildRoutedFetch(options, false);
}

/** @internal Every key of {@link RoutedFetchOptions} (and so of `routeOpenAI`'s options): the router's, the tenant's and the adapter's own. */
export const ROUTED_FETCH_OPTION_KEYS = keysOf<RoutedFetchOptions>()([
  ...ROUTER_OPTION_KEYS, ...TENANT_OPTION_KEYS,
  "fetch", "baseURL", "attempts", "onRequestEnd", "redirect", "targetHeader", "explainHeader", "responseAffinity",
]);

/** @internal `errorsAsResponses`: answer routing errors with an OpenAI-style error response (see routeOpenAI). */
export async function buildRoutedFetch<T extends OpenAITarget>(options: RoutedFetchOptions<T>, errorsAsResponses: boolean): Promise<RoutedFetch<T>> {
  if (options === null || typeof options !== "object") {
    throw new TypeError(`Expected options to be an object, got ${describe(options)}`);
  }
  checkKnownKeys("", options, knownRouterKeys(ROUTED_FETCH_OPTION_KEYS));
  validateOpenAITargets(options.targets);
  const underlying: FetchLike =
    options.fetch === undefined ? globalThis.fetch : checkFunction<FetchLike>("fetch", options.fetch);
  if (typeof underlying !== "function") {
    throw new TypeError("Expected `fetch` to be a function: globalThis.fetch is not available, pass `fetch`");
  }
  const attempts = checkAttempts(options.attempts === undefined ? DEFAULT_ATTEMPTS : options.attempts);
  const clientBase = options.baseURL === undefined ? undefined : parseBase("baseURL", options.baseURL);
  const report =
    options.onRequestEnd === undefined
      ? undefined
      : checkFunction<(info: RoutedRequestInfo<T>) => void>("onRequestEnd", options.onRequestEnd);
  const identity = TenantIdentity.from<OpenAITenantRequest>(options);
  const affinityConfig = responseAffinityOf(options.responseAffinity);
  const sending: Sending = {
    redirect: checkRedirect(options.redirect),
    targetHeader: options.targetHeader === undefined ? false : checkBoolean("targetHeader", options.targetHeader),
    reasonHeader: options.explainHeader === undefined ? false : checkBoolean("explainHeader", options.explainHeader),
  };
  const {
    fetch: _fetch,
    baseURL: _baseURL,
    attempts: _attempts,
    onRequestEnd: _onRequestEnd,
    redirect: _redirect,
    targetHeader: _targetHeader,
    explainHeader: _explainHeader,
    tenant: _tenant,
    isolation: _isolation,
    cacheSaltSecret: _cacheSaltSecret,
    responseAffinity: _affinity,
    ...routerOptions
  } = options;
  const core = await createRouterWith<T>(routerOptions, { targetCheck: validateOpenAITargets });
  const clock = options.clock ?? performance;
  let affinity: ResponseAffinity | undefined;
  try {
    affinity = affinityConfig === undefined ? undefined : await createResponseAffinity(affinityConfig, clock);
  } catch (error) {
    await core.close();
    throw error;
  }
  const router =
    affinity === undefined
      ? adapterRouter(core)
      : adapterRouter(core, { stats: (stats) => ({ ...stats, responseAffinity: affinity.stats() }), close: () => affinity.close() });
  const sender = new RoutedSender<T>(router, { underlying, attempts, clientBase, report, clock, errorsAsResponses, sending, identity, affinity });
  const fetch: FetchLike = carryRouter((input, init) => sender.fetch(input, init), router);
  return { fetch, router };
}

/** How requests go out, beyond routing. */
interface Sending {
  redirect: RedirectPolicy;
  targetHeader: boolean;
  reasonHeader: boolean;
}

/**
 * HTTP status of the OpenAI-style error response a routing error becomes under routeOpenAI;
 * any other code is a 400. Every such response says `x-should-retry: false`.
 */
const ROUTING_ERROR_STATUS: Partial<Record<string, number>> = {
  ERR_NO_TARGETS: 503,
  ERR_NO_ELIGIBLE_TARGET: 404,
  ERR_CONNECTION_LOST: 502,
  ERR_TARGET_GONE: 404,
};

/** The outgoing request, read once. */
interface Outgoing {
  url: URL;
  init: RequestInit;
  signal: AbortSignal | null | undefined;
  route: RouteRequest;
  /** The body's text or bytes, when it was read. */
  raw: string | Uint8Array | undefined;
  replayable: boolean;
  /** The body asks for a stream (`stream: true`). */
  streaming: boolean;
}

/** What a {@link RoutedSender} sends with beside its router. */
interface SenderParts<T extends OpenAITarget> {
  readonly underlying: FetchLike;
  readonly attempts: number;
  readonly clientBase: Base | undefined;
  readonly report: ((info: RoutedRequestInfo<T>) => void) | undefined;
  readonly clock: Clock;
  readonly errorsAsResponses: boolean;
  readonly sending: Sending;
  readonly identity: TenantIdentity<OpenAITenantRequest>;
  readonly affinity: ResponseAffinity | undefined;
}

class RoutedSender<T extends OpenAITarget> {
  private readonly bases = new WeakMap<T, Base>();
  private readonly registry: LeaseRegistry = newLeaseRegistry();

  constructor(
    readonly router: Router<T>,
    private readonly parts: SenderParts<T>,
  ) {}

  async fetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
    try {
      const out = await this.read(input, init);
      if (out.signal?.aborted === true) throw abortReason(out.signal);
      const relative = relativeTo(this.parts.clientBase, out.url);
      if (relative === undefined) return await this.parts.underlying.call(undefined, out.url.href, out.init);
      out.init = applyTenant(this.parts.identity, out, relative.path);
      const call = responsesCall(relative.path, out.init.method, out.route.body as Record<string, unknown> | undefined);
      // Only the replica that served a stored response can continue it: one attempt, there.
      const pinned = call?.refersTo === undefined ? undefined : await this.pinned(call.refersTo);
      const attempts = { request: out.route, maxAttempts: out.replayable && pinned === undefined ? this.parts.attempts : 1, facts: this.factsOf(out, relative), target: pinned, explain: this.parts.sending.reasonHeader };
      return await withAttempts(
        this.router,
        attempts,
        (lease, traceHeaders) => this.send(lease, out, relative, call, traceHeaders),
        (error) => judgeFetchError(error, out.signal),
      );
    } catch (error) {
      if (this.parts.errorsAsResponses && isRouterError(error)) return routingErrorResponse(error, ROUTING_ERROR_STATUS[error.code] ?? 400);
      throw error;
    }
  }

  private async send(
    lease: Lease<T>,
    out: Outgoing,
    relative: Relative,
    call: ResponsesCall | undefined,
    traceHeaders: Record<string, string>,
  ): Promise<Response> {
    const target = lease.target;
    const startMs = this.parts.clock.now();
    let response: Response;
    try {
      const base = this.baseOf(target);
      // Refused (ERR_CROSS_ORIGIN) before anything is sent when the URL would leave the target.
      const url = joinTarget(base, relative, target.id);
      const headers = new Headers(out.init.headers);
      for (const [name, value] of Object.entries(traceHeaders)) headers.set(name, value);
      if (target.headers !== undefined) for (const [name, value] of Object.entries(target.headers)) headers.set(name, value);
      const send = (to: string, init: RequestInit): Promise<Response> => this.parts.underlying.call(undefined, to, init);
      response = await sendWithRedirects(send, url, { ...out.init, headers }, { policy: this.parts.sending.redirect, base, replayable: out.replayable });
    } catch (error) {
      const verdict = judgeFetchError(error, out.signal);
      if (this.parts.report !== undefined) {
        const durationMs = this.parts.clock.now() - startMs;
        reportAttempt(this.parts.report, lease, { status: undefined, outcome: verdict.outcome, streaming: false, ttftMs: null, durationMs, info: undefined, error });
      }
      throw surfaceFetchError(error, verdict);
    }
    return trackResponse(response, {
      lease,
      signal: out.signal,
      clock: this.parts.clock,
      startMs,
      registry: this.registry,
      report: this.parts.report,
      targetHeader: this.parts.sending.targetHeader,
      reasonHeader: this.parts.sending.reasonHeader,
      responses: call?.creates === true ? { onId: this.rememberer(lease.target.id) } : undefined,
    });
  }

  /** The target that served stored response `id`: this process's map, else the shared store (bounded wait), else none. */
  private async pinned(id: string): Promise<string | undefined> {
    const affinity = this.parts.affinity;
    if (affinity === undefined) return undefined;
    const local = affinity.targetOf(id);
    if (local !== undefined || !affinity.shared) return local;
    return affinity.fromStore(id, (targetId) => this.router.targets().some((t) => t.id === targetId));
  }

  /**
   * Remembers which target served a created response, when response affinity is on, and returns
   * the store's acknowledgement (bounded by its `timeoutMs`), if it has a store.
   */
  private rememberer(targetId: string): ((id: string) => Promise<void> | void) | undefined {
    const affinity = this.parts.affinity;
    return affinity === undefined ? undefined : (id) => affinity.rememberAndWait(id, targetId);
  }

  /** What the request's trace records: the GenAI operation (from the path), the model, streaming, each target's host. */
  private factsOf(out: Outgoing, relative: Relative): AttemptFacts {
    return {
      operation: operationOf(relative.path),
      provider: "openai",
      model: out.route.model,
      streaming: out.streaming,
      server: (target) => {
        const url = new URL(this.baseOf(target as T).origin);
        return { address: url.hostname, port: url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port) };
      },
    };
  }

  /** Reads URL, init and routing facts from `fetch`'s arguments. */
  private async read(input: string | URL | Request, init: RequestInit | undefined): Promise<Outgoing> {
    let url: string;
    let merged: RequestInit;
    if (typeof input === "string" || input instanceof URL) {
      url = String(input);
      merged = init ?? {};
    } else if (input !== null && typeof input === "object" && typeof (input as Request).url === "string") {
      const request = input as Request;
      url = request.url;
      const fromRequest: RequestInit = {
        method: request.method,
        headers: request.headers,
        signal: request.signal,
        redirect: request.redirect,
      };
      if (request.body !== null && init?.body === undefined) fromRequest.body = await request.arrayBuffer();
      merged = { ...fromRequest, ...init };
    } else {
      throw new TypeError(`Expected fetch input to be a URL string, a URL or a Request, got ${describe(input)}`);
    }
    const contentType = new Headers(merged.headers).get("content-type");
    const { parsed, raw, replayable } = readBody(merged.body, contentType, this.router.mode === "text");
    const route: RouteRequest = {};
    if (parsed !== undefined) {
      route.body = parsed;
      if (typeof parsed.model === "string") route.model = parsed.model;
      // Any value but null is the tenant, and must be a valid one (ERR_INVALID_TENANT otherwise).
      if (parsed.prompt_cache_key !== undefined && parsed.prompt_cache_key !== null) route.tenant = parsed.prompt_cache_key as string;
    } else if (raw !== undefined && this.router.mode === "bytes") {
      route.body = raw;
    }
    return { url: parseRequestURL(url), init: merged, signal: merged.signal, route, raw, replayable, streaming: parsed?.stream === true };
  }

  private baseOf(target: T): Base {
    let base = this.bases.get(target);
    if (base === undefined) {
      base = parseBase(`baseURL of target ${JSON.stringify(target.id)}`, target.baseURL);
      this.bases.set(target, base);
    }
    return base;
  }
}

function parseRequestURL(url: string): URL {
  try {
    return new URL(url);
  } catch (cause) {
    throw new TypeError(`Expected fetch input to be an absolute URL, got ${JSON.stringify(url)}`, { cause });
  }
}

/**
 * Parses a JSON object body for routing; says whether the body can be sent again. A body meant as
 * JSON that is no JSON object is the caller's error in text mode (`strict`: ERR_INVALID_JSON,
 * ERR_INVALID_BODY, nothing sent); in bytes mode it is routed on its raw bytes.
 */
function readBody(
  body: RequestInit["body"],
  contentType: string | null,
  strict: boolean,
): {
  parsed: Record<string, unknown> | undefined;
  raw: string | Uint8Array | undefined;
  replayable: boolean;
} {
  if (body === undefined || body === null) return { parsed: undefined, raw: undefined, replayable: true };
  let raw: string | Uint8Array;
  if (typeof body === "string") {
    raw = body;
  } else if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) {
    raw = body instanceof ArrayBuffer ? new Uint8Array(body) : new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  } else if (
    (typeof URLSearchParams !== "undefined" && body instanceof URLSearchParams) ||
    (typeof FormData !== "undefined" && body instanceof FormData) ||
    (typeof Blob !== "undefined" && body instanceof Blob)
  ) {
    return { parsed: undefined, raw: undefined, replayable: true };
  } else {
    // A ReadableStream or async iterable: sent once, never read here.
    return { parsed: undefined, raw: undefined, replayable: false };
  }
  if (!isJsonBody(raw, contentType)) return { parsed: undefined, raw, replayable: true };
  try {
    return { parsed: parseObject(raw), raw, replayable: true };
  } catch (error) {
    if (strict) throw error;
    return { parsed: undefined, raw, replayable: true };
  }
}

/** GenAI operation names of the OpenAI API's paths (the conventions' well-known values); others are `other`. */
const OPERATIONS: readonly (readonly [RegExp, string])[] = [
  [/\/chat\/completions$/, "chat"],
  [/\/responses$/, "chat"],
  [/\/completions$/, "text_completion"],
  [/\/embeddings$/, "embeddings"],
];

function operationOf(path: string): string {
  for (const [pattern, name] of OPERATIONS) if (pattern.test(path)) return name;
  return "other";
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("This operation was aborted", "AbortError");
}

/** An OpenAI-style error body the openai client turns into its own error class, not retried. */
function routingErrorResponse(error: RouterError, status: number): Response {
  return new Response(
    JSON.stringify({ error: { message: error.message, type: "prefix_router_error", code: error.code, param: null } }),
    { status, headers: { "content-type": "application/json", "x-should-retry": "false" } },
  );
}
