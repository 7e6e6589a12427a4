/**
 * A `fetch` that routes OpenAI-compatible requests across a fleet.
 *
 * Per call: read the outgoing request (URL path relative to the client's base URL, method, JSON
 * body), route it (text mode: `prompt_cache_key` is the tenant, `model` drives eligibility, a
 * request without prompt text goes by least-outstanding), rewrite the URL onto the chosen
 * target's `baseURL` (path suffix and query string kept), merge the target's `headers`, call the
 * underlying `fetch`, and return the response with its body wrapped so the lease ends when the
 * body has been read, cancelled or has failed (see body.ts).
 *
 * Retries: a connection failure before any response (refused, reset, DNS, …) is retried on the
 * key's next target, up to `attempts` in total, through the shared `withAttempts`. Once response
 * headers have arrived nothing is retried, so no request runs twice.
 */
import { type AttemptFacts, withAttempts } from "../adapter/attempts.js";
import { DEFAULT_ATTEMPTS, carryRouter, checkAttempts } from "../adapter/handle.js";
import { parseObject } from "../adapter/json.js";
import { type LeaseRegistry, newLeaseRegistry } from "../adapter/leased-body.js";
import { checkTargetFields } from "../adapter/targets.js";
import { RouterError, isRouterError } from "../errors.js";
import { checkFunction, describe } from "../internal/validate.js";
import { createRouter } from "../router.js";
import type { Clock, Lease, RouteRequest, Router } from "../types.js";
import { reportAttempt, trackResponse } from "./body.js";
import { judgeFetchError } from "./failures.js";
import type { FetchLike, OpenAITarget, RoutedFetch, RoutedFetchOptions, RoutedRequestInfo } from "./types.js";

// Kept for modules that import these types from here (src/demo/demo.ts); their home is ./types.ts.


/**
 * Creates a `fetch` that routes OpenAI-compatible requests across `options.targets`, and the
 * router behind it. Use it with any client that accepts a `fetch` (the Vercel AI SDK's
 * `createOpenAI({ fetch })`, LangChain, a hand-written call); for the openai client,
 * {@link routeOpenAI} does the wiring.
 *
 * Routing errors (`ERR_NO_ELIGIBLE_TARGET` for a model no target serves, `ERR_INVALID_TENANT`
 * for a bad `prompt_cache_key`) reject the call with a {@link RouterError}; connection failures
 * reject it with the underlying fetch's error once the attempts are used up.
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

/** @internal `errorsAsResponses`: answer routing errors with an OpenAI-style error response (see routeOpenAI). */
export async function buildRoutedFetch<T extends OpenAITarget>(
  options: RoutedFetchOptions<T>,
  errorsAsResponses: boolean,
): Promise<RoutedFetch<T>> {
  if (options === null || typeof options !== "object") {
    throw new TypeError(`Expected options to be an object, got ${describe(options)}`);
  }
  validateOpenAITargets(options.targets);
  const underlying: FetchLike =
    options.fetch === undefined ? globalThis.fetch : checkFunction<FetchLike>("fetch", options.fetch);
  if (typeof underlying !== "function") {
    throw new TypeError("Expected `fetch` to be a function: globalThis.fetch is not available, pass `fetch`");
  }
  const attempts = checkAttempts(options.attempts ?? DEFAULT_ATTEMPTS);
  const clientBase = options.baseURL === undefined ? undefined : parseBase("baseURL", options.baseURL);
  const report =
    options.onRequestEnd === undefined
      ? undefined
      : checkFunction<(info: RoutedRequestInfo<T>) => void>("onRequestEnd", options.onRequestEnd);
  const { fetch: _fetch, baseURL: _baseURL, attempts: _attempts, onRequestEnd: _onRequestEnd, ...routerOptions } = options;
  const router = await createRouter<T>(routerOptions);
  const sender = new RoutedSender<T>(router, underlying, attempts, clientBase, report, options.clock ?? performance, errorsAsResponses);
  const fetch: FetchLike = carryRouter((input, init) => sender.fetch(input, init), router);
  return { fetch, router };
}

interface Base {
  origin: string;
  /** Pathname without trailing slash ("" for the root). */
  path: string;
  /** origin + path. */
  href: string;
}

function parseBase(name: string, value: unknown): Base {
  if (typeof value !== "string") {
    throw new TypeError(`Expected \`${name}\` to be an absolute http(s) URL string, got ${describe(value)}`);
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(`Expected \`${name}\` to be an absolute http(s) URL, got ${JSON.stringify(value)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(`Expected \`${name}\` to be an absolute http(s) URL, got ${JSON.stringify(value)}`);
  }
  const path = url.pathname.replace(/\/+$/, "");
  return { origin: url.origin, path, href: url.origin + path };
}

function validateOpenAITargets(targets: unknown): void {
  checkTargetFields<OpenAITarget>(targets, ({ baseURL, headers }, i) => {
    parseBase(`targets[${i}].baseURL`, baseURL);
    if (headers !== undefined) {
      if (headers === null || typeof headers !== "object" || Array.isArray(headers)) {
        throw new TypeError(`Expected \`targets[${i}].headers\` to be an object of strings, got ${describe(headers)}`);
      }
      for (const [name, value] of Object.entries(headers)) {
        if (typeof value !== "string") {
          throw new TypeError(`Expected \`targets[${i}].headers[${JSON.stringify(name)}]\` to be a string, got ${describe(value)}`);
        }
      }
    }
  });
}

/** HTTP status of the OpenAI-style error response a routing error becomes under routeOpenAI. */
const ROUTING_ERROR_STATUS: Partial<Record<string, number>> = {
  ERR_NO_TARGETS: 503,
  ERR_NO_ELIGIBLE_TARGET: 404,
  ERR_INVALID_TENANT: 400,
  ERR_INVALID_BODY: 400,
  ERR_INVALID_JSON: 400,
};

/** The outgoing request, read once. */
interface Outgoing {
  url: URL;
  init: RequestInit;
  signal: AbortSignal | null | undefined;
  route: RouteRequest;
  replayable: boolean;
  /** The body asks for a stream (`stream: true`). */
  streaming: boolean;
}

class RoutedSender<T extends OpenAITarget> {
  private readonly bases = new WeakMap<T, Base>();
  private readonly registry: LeaseRegistry = newLeaseRegistry();

  constructor(
    readonly router: Router<T>,
    private readonly underlying: FetchLike,
    private readonly attempts: number,
    private readonly clientBase: Base | undefined,
    private readonly report: ((info: RoutedRequestInfo<T>) => void) | undefined,
    private readonly clock: Clock,
    private readonly errorsAsResponses: boolean,
  ) {}

  async fetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
    const out = await this.read(input, init);
    if (out.signal?.aborted === true) throw abortReason(out.signal);
    const relative = this.relative(out.url);
    if (relative === undefined) return this.underlying.call(undefined, out.url.href, out.init);
    try {
      return await withAttempts(
        this.router,
        out.route,
        out.replayable ? this.attempts : 1,
        (lease, traceHeaders) => this.send(lease, out, relative, traceHeaders),
        (error) => judgeFetchError(error, out.signal),
        this.factsOf(out, relative),
      );
    } catch (error) {
      if (this.errorsAsResponses && isRouterError(error)) {
        const status = ROUTING_ERROR_STATUS[error.code];
        if (status !== undefined) return routingErrorResponse(error, status);
      }
      throw error;
    }
  }

  private async send(lease: Lease<T>, out: Outgoing, relative: Relative, traceHeaders: Record<string, string>): Promise<Response> {
    const target = lease.target;
    const url = this.targetURL(target, relative);
    const headers = new Headers(out.init.headers);
    for (const [name, value] of Object.entries(traceHeaders)) headers.set(name, value);
    if (target.headers !== undefined) for (const [name, value] of Object.entries(target.headers)) headers.set(name, value);
    const startMs = this.clock.now();
    let response: Response;
    try {
      response = await this.underlying.call(undefined, url, { ...out.init, headers });
    } catch (error) {
      if (this.report !== undefined) {
        const { outcome } = judgeFetchError(error, out.signal);
        const durationMs = this.clock.now() - startMs;
        reportAttempt(this.report, lease, { status: undefined, outcome, streaming: false, ttftMs: null, durationMs, info: undefined, error });
      }
      throw error;
    }
    return trackResponse(response, {
      lease,
      signal: out.signal,
      clock: this.clock,
      startMs,
      registry: this.registry,
      report: this.report,
    });
  }

  /** What the request's trace records: the GenAI operation (from the path), the model, streaming, each target's host. */
  private factsOf(out: Outgoing, relative: Relative): AttemptFacts {
    return {
      operation: operationOf(relative.path),
      provider: "openai",
      model: out.route.model,
      streaming: out.streaming,
      server: (target) => {
        const url = new URL(this.baseOf(target as T).href);
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
    const { parsed, raw, replayable } = readBody(merged.body);
    const route: RouteRequest = {};
    if (parsed !== undefined) {
      route.body = parsed;
      if (typeof parsed.model === "string") route.model = parsed.model;
      if (typeof parsed.prompt_cache_key === "string") route.tenant = parsed.prompt_cache_key;
    } else if (raw !== undefined && this.router.mode === "bytes") {
      route.body = raw;
    }
    return { url: new URL(url), init: merged, signal: merged.signal, route, replayable, streaming: parsed?.stream === true };
  }

  /** The request's path and query relative to the client's base, or undefined when it is not under it. */
  private relative(url: URL): Relative | undefined {
    const base = this.clientBase;
    if (base === undefined) return { path: url.pathname, search: url.search, stripTargetPath: true };
    if (url.origin !== base.origin) return undefined;
    if (base.path !== "" && url.pathname !== base.path && !url.pathname.startsWith(`${base.path}/`)) return undefined;
    return { path: url.pathname.slice(base.path.length), search: url.search, stripTargetPath: false };
  }

  private baseOf(target: T): Base {
    let base = this.bases.get(target);
    if (base === undefined) {
      base = parseBase(`baseURL of target ${JSON.stringify(target.id)}`, target.baseURL);
      this.bases.set(target, base);
    }
    return base;
  }

  private targetURL(target: T, relative: Relative): string {
    const base = this.baseOf(target);
    let path = relative.path;
    if (relative.stripTargetPath && base.path !== "" && (path === base.path || path.startsWith(`${base.path}/`))) {
      path = path.slice(base.path.length);
    }
    return base.href + path + relative.search;
  }
}

interface Relative {
  path: string;
  search: string;
  /** No client base known: strip the target's own base path when the request path starts with it. */
  stripTargetPath: boolean;
}

/** Parses a JSON object body for routing; says whether the body can be sent again. */
function readBody(body: RequestInit["body"]): {
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
  // A body that is no JSON object has no prompt to route on; bytes mode may still hash it.
  return { parsed: parseObject(raw), raw, replayable: true };
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
