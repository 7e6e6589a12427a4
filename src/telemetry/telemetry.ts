/**
 * What the router and the adapters report to OpenTelemetry, as one small interface: the router
 * calls it per pick and per released lease, the adapters per routed request (a span, and the
 * trace context sent to the replica). {@link NOOP_TELEMETRY} does nothing; otel.ts implements it
 * on `@opentelemetry/api`.
 */
import type { Lease, LeaseOutcome, PickKind, ReleaseInfo, TargetSpec } from "../types.js";

/** A `MeterProvider` of `@opentelemetry/api` (typed structurally, so the API stays optional). */
export interface MeterProviderLike {
  getMeter(name: string, version?: string, options?: object): unknown;
}

/** A `TracerProvider` of `@opentelemetry/api`. */
export interface TracerProviderLike {
  getTracer(name: string, version?: string, options?: object): unknown;
}

/** A `TextMapPropagator` of `@opentelemetry/api` (W3C trace context, B3, …). */
export interface TextMapPropagatorLike {
  inject(context: unknown, carrier: unknown, setter: unknown): void;
  fields(): string[];
}

/** Options of `RouterOptions.telemetry`. */
export interface TelemetryOptions {
  /**
   * Where metrics go.
   * @default the global MeterProvider (`metrics.setGlobalMeterProvider`, or the SDK's `start()`)
   */
  meterProvider?: MeterProviderLike;
  /**
   * Where spans go (one per request routed by `routeOpenAI`, `createRoutedFetch` or `routeSageMaker`).
   * @default the global TracerProvider
   */
  tracerProvider?: TracerProviderLike;
  /**
   * Writes the trace context (`traceparent`, …) into each request sent to a replica, so that the
   * engine's own spans join the trace.
   * @default the global propagator (W3C trace context and baggage once an SDK is started)
   */
  propagator?: TextMapPropagatorLike;
}

/** A finished lease. */
export interface Released {
  readonly targetId: string;
  readonly strategy: string;
  readonly kind: PickKind;
  readonly outcome: LeaseOutcome;
  readonly model: string | undefined;
  readonly durationMs: number;
  readonly ttftMs: number | null;
  readonly info: ReleaseInfo | undefined;
  readonly predictedCachedTokens: number | undefined;
  /** What the response said of the prediction (closed-loop.ts). */
  readonly verdict: "hit" | "miss" | undefined;
}

/** What an adapter knows of a request before routing it. */
export interface RequestFacts {
  /** The router's strategy. */
  readonly strategy: string;
  /** GenAI operation name: `chat`, `text_completion`, `embeddings`, … */
  readonly operation: string;
  /** GenAI provider name: `openai` (the OpenAI-compatible API), `aws.sagemaker`. */
  readonly provider: string;
  readonly model: string | undefined;
  /** Whether the client asked for a stream (`stream: true`, `InvokeEndpointWithResponseStream`). */
  readonly streaming: boolean;
  /** Host and port of a target, for `server.address` / `server.port`. */
  server?(target: TargetSpec): { address: string; port: number } | undefined;
}

/** One routed request, from its first attempt to the end of its response. */
export interface RequestTrace {
  /** Whether the trace records the decision's reason (its span is recording): the route is asked to explain. */
  readonly explains: boolean;
  /** Runs `send` with the request's span as the active span (HTTP client spans become its children). */
  run<R>(send: () => Promise<R>): Promise<R>;
  /** Takes an attempt's lease: the returned lease is the one to use; its release ends the request. */
  attempt<T extends TargetSpec>(lease: Lease<T>): Lease<T>;
  /** Trace-context headers (`traceparent`, …) for the current attempt's outgoing request. */
  headers(): Record<string, string>;
  /**
   * The attempt whose lease this is failed with `error` before any response: its lease is
   * released with `outcome`; `final` ends the request with the error. Without a lease: routing
   * itself failed (no eligible target), which ends the request.
   */
  failed<T extends TargetSpec>(lease: Lease<T> | undefined, outcome: LeaseOutcome, error: unknown, final: boolean): void;
}

/** The instruments of one router. */
export interface Telemetry {
  /** A pick was committed after `decisionMs` of routing. */
  picked(targetId: string, strategy: string, kind: PickKind, decisionMs: number): void;
  released(r: Released): void;
  ejected(targetId: string): void;
  forgot(targetId: string, strategy: string): void;
  /** Starts a routed request's trace (adapters). */
  request(facts: RequestFacts): RequestTrace;
}

/** A request trace that records nothing. */
export const NOOP_TRACE: RequestTrace = Object.freeze({
  explains: false,
  run: <R>(send: () => Promise<R>) => send(),
  attempt: <T extends TargetSpec>(lease: Lease<T>) => lease,
  headers: () => ({}),
  failed: <T extends TargetSpec>(lease: Lease<T> | undefined, outcome: LeaseOutcome) => lease?.release(outcome),
});

/** Telemetry that records nothing: `telemetry: false`, or `@opentelemetry/api` not installed. */
export const NOOP_TELEMETRY: Telemetry = Object.freeze({
  picked() {},
  released() {},
  ejected() {},
  forgot() {},
  request: () => NOOP_TRACE,
});
