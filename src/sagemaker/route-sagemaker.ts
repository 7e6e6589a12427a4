/**
 * Routes SageMaker Runtime traffic: `routeSageMaker(client, options)` returns a drop-in for the
 * user's `SageMakerRuntimeClient` whose `send` picks a target (endpoint, production variant,
 * inference component) for every `InvokeEndpointCommand` and
 * `InvokeEndpointWithResponseStreamCommand`: in bytes mode over the canonical body (the
 * default, as SageMaker's Invoke API routes), or in text mode over the prompt text of an
 * OpenAI-style body, as the OpenAI adapter.
 *
 * Why a wrapper and not middleware on the client's stack: a target may carry its own client
 * (another region or account), which a middleware inside one client's stack cannot switch to; a
 * retry must re-run the whole stack (signing, endpoint resolution) for another endpoint; the
 * lease must outlive `send` for streams; and the user's client object is left untouched, so
 * wrapping twice never routes twice. The returned object is a Proxy of the client: `config`,
 * `middlewareStack`, `destroy`, `instanceof` and the aggregated `SageMakerRuntime` methods behave
 * as before; only `send` (with its callback forms) is routed, and `router` is added.
 *
 * Per attempt the command is re-created as an object that inherits from the user's command with
 * its own `input` and a clone of the command's middleware stack: the user's command is never
 * mutated and can be sent again.
 */
import type {
  InvokeEndpointCommandOutput,
  InvokeEndpointWithResponseStreamCommandOutput,
  SageMakerRuntimeClient,
} from "@aws-sdk/client-sagemaker-runtime";
import { withAttempts } from "../adapter/attempts.js";
import { DEFAULT_ATTEMPTS, ROUTER, checkAttempts } from "../adapter/handle.js";
import { type LeaseRegistry, newLeaseRegistry } from "../adapter/leased-body.js";
import { checkTargetFields, adapterRouter } from "../adapter/targets.js";
import { TENANT_OPTION_KEYS, TenantIdentity } from "../adapter/tenant.js";
import { usageOfBody } from "../adapter/usage.js";
import { checkKnownKeys, checkOneOf, describe, keysOf } from "../internal/validate.js";
import { ROUTER_OPTION_KEYS, type RouterOptions, knownRouterKeys, validateTargets } from "../options.js";
import { createRouterWith } from "../router/router.js";
import type { RoutingMode } from "../routing/routing-input.js";
import type { Lease, RouteRequest } from "../types.js";
import type { Router } from "../router/types.js";
import { objectOf, prepareBody, readBody, saltBody } from "./body.js";
import { judgeSageMakerError } from "./errors.js";
import { LeasedEventStream } from "./stream.js";
import { PREFIX_AWARE_ID_HEADER, type SageMakerAdapterOptions, type SageMakerTargetFields, type SageMakerTenantRequest } from "./target.js";

/**
 * A SageMaker destination: an endpoint, optionally one production variant of it or one
 * inference component on it. Its fields replace the command's `EndpointName`, `TargetVariant`
 * and `InferenceComponentName`; a field left out here is removed from the command.
 */
export interface SageMakerTarget extends SageMakerTargetFields {
  /**
   * The client that sends to this target, for an endpoint in another region or account. It is
   * used as is and never destroyed by the routed client.
   * @default the client passed to {@link routeSageMaker}
   */
  readonly client?: SageMakerRuntimeClient;
}

/** Options of {@link routeSageMaker}: the router's options (bytes mode by default) and the adapter's. */
export interface RouteSageMakerOptions extends Omit<RouterOptions<SageMakerTarget>, "mode">, SageMakerAdapterOptions {
  /** The targets. Ids non-empty and unique; each with a non-empty `endpointName`. */
  targets: readonly SageMakerTarget[];
  /**
   * `"bytes"`: the first `prefixLength` bytes of the body's canonical JSON (raw bytes for a body
   * that is not JSON), as SageMaker's own prefix-aware routing on the Invoke API reads it. Keys
   * are sorted, so fields that sort before `messages` (`frequency_penalty`, `max_tokens`, …) open
   * the routing input: two requests that differ only in `max_tokens` have different keys.
   * `"text"`: the prompt text of an OpenAI-style JSON body (`messages`, `prompt`, the Responses
   * API's fields), as the OpenAI adapter reads it: sampling parameters never move a request; a
   * body that is not a JSON object is refused (`ERR_INVALID_JSON`, `ERR_INVALID_BODY`) before
   * anything is sent, and a body without such fields (TGI's `inputs`) has no key
   * (least-outstanding).
   * @default "bytes"
   */
  mode?: RoutingMode;
}

/** The user's client, routed: everything it was, plus the router behind `send`. */
export type RoutedSageMakerClient<C extends SageMakerRuntimeClient = SageMakerRuntimeClient> = C & {
  /** The router: `stats()`, `rank()`, `setTargets()` (targets validated as SageMaker targets). */
  readonly router: Router<SageMakerTarget>;
};

export { PREFIX_AWARE_ID_HEADER };

/** @internal Every key of {@link RouteSageMakerOptions}: the router's, the tenant's and the adapter's own. */
export const ROUTE_SAGEMAKER_OPTION_KEYS = keysOf<RouteSageMakerOptions>()([...ROUTER_OPTION_KEYS, ...TENANT_OPTION_KEYS, "canonicalizeBody", "attempts"]);

/** The SageMaker adapter's default `mode`: the body's bytes, as SageMaker's Invoke API routes. */
export const DEFAULT_SAGEMAKER_MODE: RoutingMode = "bytes";

/**
 * Wraps an existing `SageMakerRuntimeClient` (or `SageMakerRuntime`) so that every
 * `InvokeEndpointCommand` and `InvokeEndpointWithResponseStreamCommand` it sends is routed to
 * the target most likely to hold the body's prefix in cache. Other commands pass through.
 *
 * - Routing input: the first `prefixLength` bytes of the canonical JSON body (raw bytes for
 *   non-JSON bodies), or with `mode: "text"` its prompt text; `PrefixAwareId` is the tenant and
 *   is forwarded unchanged (under `isolation: "tenant"` with a `tenant` option it must be the
 *   option's tenant, and the body may carry no `cache_salt` of its own: `ERR_TENANT_MISMATCH`
 *   otherwise); `TargetModel` selects the targets whose `models` list it (targets without
 *   `models` serve every model).
 * - The lease is held until the response has been read: for `InvokeEndpoint` until `send`
 *   resolves, for a stream until it ends, fails, or the consumer stops iterating.
 *
 * @example
 * const sagemaker = await routeSageMaker(new SageMakerRuntimeClient({ region: "us-east-1" }), {
 *   targets: [
 *     { id: "ic-a", endpointName: "llm", inferenceComponentName: "llama-a" },
 *     { id: "ic-b", endpointName: "llm", inferenceComponentName: "llama-b" },
 *   ],
 * });
 * const out = await sagemaker.send(new InvokeEndpointCommand({ EndpointName: "llm", Body: body, ContentType: "application/json" }));
 * console.log(sagemaker.router.stats().totals);
 */
export async function routeSageMaker<C extends SageMakerRuntimeClient>(
  client: C,
  options: RouteSageMakerOptions,
): Promise<RoutedSageMakerClient<C>> {
  if (client === null || typeof client !== "object" || typeof (client as { send?: unknown }).send !== "function") {
    throw new TypeError(`Expected \`client\` to be a SageMakerRuntimeClient (an object with a send() method), got ${describe(client)}`);
  }
  if (options === null || typeof options !== "object") {
    throw new TypeError(`Expected routeSageMaker options to be an object, got ${describe(options)}`);
  }
  checkKnownKeys("", options, knownRouterKeys(ROUTE_SAGEMAKER_OPTION_KEYS));
  const { canonicalizeBody = true, attempts = DEFAULT_ATTEMPTS, tenant: _t, isolation: _i, cacheSaltSecret: _s, ...routerOptions } = options;
  if (typeof canonicalizeBody !== "boolean") {
    throw new TypeError(`Expected \`canonicalizeBody\` to be a boolean, got ${describe(canonicalizeBody)}`);
  }
  const identity = TenantIdentity.from<SageMakerTenantRequest>(options);
  if (identity.isolation === "tenant" && !canonicalizeBody) {
    throw new TypeError('Expected `canonicalizeBody` to be true with `isolation: "tenant"`: the body is rewritten to carry `cache_salt`');
  }
  checkAttempts(attempts);
  // Only an absent option takes the default: `null` is an invalid value, named as such.
  const mode = checkOneOf("mode", routerOptions.mode === undefined ? DEFAULT_SAGEMAKER_MODE : routerOptions.mode, ["bytes", "text"] as const);
  validateSageMakerTargets(options.targets);
  const core = await createRouterWith<SageMakerTarget>({ ...routerOptions, mode }, { targetCheck: validateSageMakerTargets });
  const router = adapterRouter(core);
  const send = routedSend(client, core, { canonicalizeBody, attempts, registry: newLeaseRegistry(), identity });

  return new Proxy(client, {
    get(target, property, receiver) {
      if (property === "send") return send;
      if (property === "router" || property === ROUTER) return router;
      return Reflect.get(target, property, receiver);
    },
    has(target, property) {
      return property === "router" || property === ROUTER || Reflect.has(target, property);
    },
  }) as RoutedSageMakerClient<C>;
}

function validateSageMakerTargets(targets: unknown): void {
  validateTargets(targets);
  checkTargetFields<SageMakerTarget>(targets, ({ endpointName, targetVariant, inferenceComponentName, client }, i) => {
    if (typeof endpointName !== "string" || endpointName.length === 0) {
      throw new TypeError(`Expected \`targets[${i}].endpointName\` to be a non-empty string, got ${describe(endpointName)}`);
    }
    for (const [name, value] of [
      ["targetVariant", targetVariant],
      ["inferenceComponentName", inferenceComponentName],
    ] as const) {
      if (value !== undefined && (typeof value !== "string" || value.length === 0)) {
        throw new TypeError(`Expected \`targets[${i}].${name}\` to be a non-empty string or absent, got ${describe(value)}`);
      }
    }
    if (client !== undefined && (client === null || typeof client !== "object" || typeof client.send !== "function")) {
      throw new TypeError(`Expected \`targets[${i}].client\` to be a SageMakerRuntimeClient or absent, got ${describe(client)}`);
    }
  });
}

type Operation = "InvokeEndpoint" | "InvokeEndpointWithResponseStream";

/** The commands as the adapter sees them: an input and a middleware stack it can clone. */
interface CommandLike {
  input: Record<string, unknown>;
  middlewareStack?: { clone?: () => StackLike };
}

interface StackLike {
  add(middleware: unknown, options: { step: string; name: string; override?: boolean }): void;
}

type LooseSend = (command: unknown, optionsOrCallback?: unknown, callback?: unknown) => unknown;
type Callback = (error: unknown, output?: unknown) => void;

const SAGEMAKER_RUNTIME_NAMESPACE = "com.amazonaws.sagemakerruntime";

/**
 * Which routed operation a command is, if any: from its operation schema (`[9, namespace, name,
 * …]`), or, for SDK versions without schemas, from its class name.
 */
function operationOf(command: unknown): Operation | undefined {
  if (command === null || typeof command !== "object") return undefined;
  const input = (command as { input?: unknown }).input;
  if (input === null || typeof input !== "object") return undefined;
  const schema = (command as { schema?: unknown }).schema;
  let name: unknown;
  if (Array.isArray(schema)) {
    if (schema[0] !== 9 || schema[1] !== SAGEMAKER_RUNTIME_NAMESPACE) return undefined;
    name = schema[2];
  } else {
    const ctor = (command as { constructor?: { name?: unknown } }).constructor;
    name = typeof ctor?.name === "string" ? ctor.name.replace(/Command$/, "") : undefined;
  }
  return name === "InvokeEndpoint" || name === "InvokeEndpointWithResponseStream" ? name : undefined;
}

/** How {@link routedSend} sends, beside its client and router. */
interface SendSettings {
  readonly canonicalizeBody: boolean;
  readonly attempts: number;
  readonly registry: LeaseRegistry;
  readonly identity: TenantIdentity<SageMakerTenantRequest>;
}

function routedSend(client: SageMakerRuntimeClient, router: Router<SageMakerTarget>, settings: SendSettings): LooseSend {
  const { canonicalizeBody, attempts, registry, identity } = settings;
  const passThrough = client.send.bind(client) as LooseSend;

  const invoke = async (command: CommandLike, operation: Operation, sendOptions: unknown): Promise<unknown> => {
    const input = command.input;
    const prepared = prepareBody(await readBody(input.Body), input.ContentType, canonicalizeBody);
    const { routing } = prepared;
    // A carried PrefixAwareId that is no string reaches the router, which rejects it.
    const { tenant, salt } = identity.resolve(
      { id: input.PrefixAwareId, idField: "PrefixAwareId", salt: objectOf(prepared)?.["cache_salt"] },
      () => ({ input, body: routing }),
    );
    const wire = saltBody(prepared, salt);
    const model = input.TargetModel;
    const request: RouteRequest = {
      body: routing,
      ...(tenant === undefined ? {} : { tenant }),
      ...(model === undefined ? {} : { model: model as string }),
    };
    const facts = {
      operation: isChat(routing) ? "chat" : "text_completion",
      provider: "aws.sagemaker",
      model: typeof model === "string" ? model : modelOf(routing),
      streaming: operation === "InvokeEndpointWithResponseStream",
    } as const;
    return withAttempts(
      router,
      { request, maxAttempts: attempts, facts },
      async (lease, traceHeaders) => {
        const attempt = attemptCommand(command, retarget(input, lease.target, wire, tenant), traceHeaders);
        const sender = (lease.target.client ?? client).send.bind(lease.target.client ?? client) as LooseSend;
        const output = await (sender(attempt, sendOptions) as Promise<InvokeEndpointCommandOutput | InvokeEndpointWithResponseStreamCommandOutput>);
        return operation === "InvokeEndpoint"
          ? finishResponse(output as InvokeEndpointCommandOutput, lease)
          : holdStream(output as InvokeEndpointWithResponseStreamCommandOutput, lease, registry);
      },
      judgeSageMakerError,
    );
  };

  return function send(command: unknown, optionsOrCallback?: unknown, callback?: unknown): unknown {
    const operation = operationOf(command);
    if (operation === undefined) return passThrough(command, optionsOrCallback, callback);
    const cb = (typeof optionsOrCallback === "function" ? optionsOrCallback : callback) as Callback | undefined;
    const sendOptions = typeof optionsOrCallback === "function" ? undefined : optionsOrCallback;
    const result = invoke(command as CommandLike, operation, sendOptions);
    if (typeof cb !== "function") return result;
    result.then(
      (output) => cb(null, output),
      (error: unknown) => cb(error),
    );
    return undefined;
  };
}

/** A copy of the input aimed at `target`, carrying the tenant; the caller's input object is not touched. */
function retarget(
  input: Record<string, unknown>,
  target: SageMakerTarget,
  body: string | Uint8Array | undefined,
  tenant: string | undefined,
): Record<string, unknown> {
  const next: Record<string, unknown> = { ...input, EndpointName: target.endpointName, Body: body };
  if (tenant !== undefined) next.PrefixAwareId = tenant;
  if (target.targetVariant === undefined) delete next.TargetVariant;
  else next.TargetVariant = target.targetVariant;
  if (target.inferenceComponentName === undefined) delete next.InferenceComponentName;
  else next.InferenceComponentName = target.inferenceComponentName;
  return next;
}

/**
 * The command for one attempt: inherits everything from the user's command (class, schema,
 * serializers) but has its own input and its own copy of the command's middleware stack, to
 * which the SDK adds its per-send plugins.
 */
function attemptCommand(command: CommandLike, input: Record<string, unknown>, traceHeaders: Record<string, string>): object {
  const attempt = Object.create(command) as CommandLike;
  Object.defineProperty(attempt, "input", { value: input, writable: true, enumerable: true, configurable: true });
  const stack = typeof command.middlewareStack?.clone === "function" ? command.middlewareStack.clone() : undefined;
  if (stack !== undefined) {
    stack.add(prefixAwareIdHeader, { step: "build", name: "prefixRouterPrefixAwareIdHeader", override: true });
    if (Object.keys(traceHeaders).length > 0) {
      stack.add(withHeaders(traceHeaders), { step: "build", name: "prefixRouterTraceContext", override: true });
    }
    Object.defineProperty(attempt, "middlewareStack", { value: stack, writable: true, enumerable: true, configurable: true });
  }
  return attempt;
}

const PREFIX_AWARE_ID_HEADER_LOWER = PREFIX_AWARE_ID_HEADER.toLowerCase();

/**
 * Build-step middleware (before signing): an SDK version whose model predates `PrefixAwareId`
 * drops the field; this puts it on the request as SageMaker's header. A no-op when the SDK
 * serialized it already. Reads the tenant from the input, so a handler the client cached for an
 * earlier command stays correct.
 */
function prefixAwareIdHeader(next: (args: unknown) => Promise<unknown>): (args: unknown) => Promise<unknown> {
  return (args) => {
    const { input, request } = args as { input?: { PrefixAwareId?: unknown }; request?: { headers?: Record<string, string> } };
    const tenant = input?.PrefixAwareId;
    const headers = request?.headers;
    if (typeof tenant === "string" && headers !== null && typeof headers === "object") {
      if (!Object.keys(headers).some((h) => h.toLowerCase() === PREFIX_AWARE_ID_HEADER_LOWER)) headers[PREFIX_AWARE_ID_HEADER] = tenant;
    }
    return next(args);
  };
}

/** Build-step middleware (before signing) that puts the request's trace context (`traceparent`, …) on it. */
function withHeaders(extra: Record<string, string>): (next: (args: unknown) => Promise<unknown>) => (args: unknown) => Promise<unknown> {
  return (next) => (args) => {
    const headers = (args as { request?: { headers?: Record<string, string> } }).request?.headers;
    if (headers !== null && typeof headers === "object") Object.assign(headers, extra);
    return next(args);
  };
}

/** The `model` of a JSON body, if it names one. */
function modelOf(body: unknown): string | undefined {
  const model = body !== null && typeof body === "object" ? (body as { model?: unknown }).model : undefined;
  return typeof model === "string" ? model : undefined;
}

/** A JSON body with `messages` is a chat request (OpenAI-style, as vLLM and TGI's Messages API take it). */
function isChat(body: unknown): boolean {
  return body !== null && typeof body === "object" && Array.isArray((body as { messages?: unknown }).messages);
}

/** `InvokeEndpoint`: the SDK has read the whole body when `send` resolves. */
function finishResponse(output: InvokeEndpointCommandOutput, lease: Lease<SageMakerTarget>): InvokeEndpointCommandOutput {
  lease.firstByte();
  lease.release("success", usageOfBody(output.Body));
  return output;
}

/** `InvokeEndpointWithResponseStream`: the lease moves into the stream. */
function holdStream(
  output: InvokeEndpointWithResponseStreamCommandOutput,
  lease: Lease<SageMakerTarget>,
  registry: LeaseRegistry,
): InvokeEndpointWithResponseStreamCommandOutput {
  if (output.Body === undefined) {
    lease.release("success");
    return output;
  }
  output.Body = new LeasedEventStream(output.Body, lease, registry);
  return output;
}
