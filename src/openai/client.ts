/**
 * `routeOpenAI`: the openai client, routed. The client keeps its type, its options (API key,
 * default headers, timeout, `maxRetries`, logger) and its error classes; only its `fetch` is
 * replaced, through the client's own `withOptions({ fetch })` (openai-node 5 and later).
 *
 * Only types come from `openai`: it is an optional peer dependency.
 */
import { describe } from "../internal/validate.js";
import { carryRouter } from "../adapter/handle.js";
import { buildRoutedFetch } from "./routed-fetch.js";
import type { FetchLike, OpenAITarget, RoutedFetchOptions } from "./types.js";

/**
 * What {@link routeOpenAI} needs from a client: a `baseURL` and `withOptions()`. `OpenAI` and
 * `AzureOpenAI` from openai-node 5, 6 and 7 have both.
 */
export interface RoutableClient {
  readonly baseURL: string;
  withOptions(options: { fetch?: FetchLike }): unknown;
}

/** Options of {@link routeOpenAI}: those of {@link createRoutedFetch}, with defaults taken from the client. */
export interface RouteOpenAIOptions<T extends OpenAITarget = OpenAITarget> extends RoutedFetchOptions<T> {
  /**
   * The `fetch` that sends requests to the targets.
   * @default the client's own `fetch` (its `fetch` option, else globalThis.fetch)
   */
  fetch?: FetchLike;
  /**
   * Requests under this base URL are routed; others go out unchanged.
   * @default client.baseURL
   */
  baseURL?: string;
}


/**
 * Returns a copy of `client` (same class, same options) whose requests are routed across
 * `options.targets`. Streaming included: a lease is held until the response body has been fully
 * read, cancelled or has failed.
 *
 * Errors are the client's own classes: a connection refused on every attempt becomes
 * `APIConnectionError` (after the client's own `maxRetries`, each routed again); a 4xx/5xx answer
 * becomes `BadRequestError`, `InternalServerError`, …; a routing error becomes an error response
 * the client does not retry — `NotFoundError` with `code: "ERR_NO_ELIGIBLE_TARGET"` when no
 * target serves the model, `BadRequestError` with `code: "ERR_INVALID_TENANT"` for a
 * `prompt_cache_key` that is not 1–64 printable ASCII, `BadRequestError` with
 * `code: "ERR_TENANT_MISMATCH"` for a body at odds with isolation, `BadRequestError` with
 * `code: "ERR_INVALID_JSON"` / `"ERR_CROSS_ORIGIN"` for a body or URL that cannot be routed; a
 * connection that failed after the request may have been written becomes an
 * `InternalServerError` (502) with `code: "ERR_CONNECTION_LOST"`, not retried by the client.
 *
 * @example
 * import OpenAI from "openai";
 * const client = await routeOpenAI(new OpenAI({ apiKey: "unused" }), {
 *   targets: [
 *     { id: "vllm-0", baseURL: "http://10.0.0.10:8000/v1" },
 *     { id: "vllm-1", baseURL: "http://10.0.0.11:8000/v1" },
 *   ],
 * });
 * const stream = await client.chat.completions.create({ model, messages, stream: true, prompt_cache_key: "tenant-a" });
 * for await (const chunk of stream) process.stdout.write(chunk.choices[0]?.delta.content ?? "");
 * getRouter(client)?.stats();
 */
export async function routeOpenAI<C extends RoutableClient, T extends OpenAITarget = OpenAITarget>(
  client: C,
  options: RouteOpenAIOptions<T>,
): Promise<C> {
  if (
    client === null ||
    typeof client !== "object" ||
    typeof client.withOptions !== "function" ||
    typeof client.baseURL !== "string"
  ) {
    throw new TypeError(
      `Expected \`client\` to be an openai client (openai-node 5 or later, with baseURL and withOptions()), got ${describe(client)}`,
    );
  }
  if (options === null || typeof options !== "object") {
    throw new TypeError(`Expected options to be an object, got ${describe(options)}`);
  }
  // openai-node keeps the fetch it was given (or globalThis.fetch) in a runtime property `fetch`.
  const own = (client as unknown as { fetch?: unknown }).fetch;
  const routed = await buildRoutedFetch<T>(
    {
      ...options,
      // Only an absent option takes the client's: `null` is an invalid value, named as such.
      fetch: options.fetch === undefined ? (typeof own === "function" ? (own as FetchLike) : undefined) : options.fetch,
      baseURL: options.baseURL === undefined ? client.baseURL : options.baseURL,
    },
    true,
  );
  return carryRouter(client.withOptions({ fetch: routed.fetch }) as C, routed.router);
}
