/**
 * One routed request in OpenTelemetry: a CLIENT span named `{operation} {model}` (the GenAI
 * convention) from the first attempt to the end of the response body, one `prefix_router.attempt`
 * event per attempt, the trace context written into each request sent to a replica, and the
 * GenAI client metrics when it ends.
 *
 * The span ends when the lease of the attempt that answered is released (for a stream: when the
 * body has been read, cancelled or has failed), or when the last attempt fails before any response.
 */
import type * as Api from "@opentelemetry/api";
import type { InputKind } from "../routing/raw-prefix.js";
import type { Clock, DecisionReason, Lease, LeaseOutcome, LeaseRecord, ReleaseInfo, TargetSpec } from "../types.js";
import type { RequestFacts, RequestTrace, TextMapPropagatorLike } from "./telemetry.js";

/** The `@opentelemetry/api` module, as `import()` returns it. */
export type OtelApi = typeof import("@opentelemetry/api");

/** The instrumentation scope's name (meter and tracer). */
export const INSTRUMENTATION_NAME = "prefix-router";

/** Attribute names: the GenAI and `server.*` conventions' where they have one, `prefix_router.*` otherwise. */
export const ATTR = {
  target: "prefix_router.target",
  strategy: "prefix_router.strategy",
  kind: "prefix_router.pick.kind",
  rank: "prefix_router.rank",
  attempt: "prefix_router.attempt",
  attempts: "prefix_router.attempts",
  routingKey: "prefix_router.routing_key",
  predicted: "prefix_router.cached_tokens.predicted",
  outcome: "prefix_router.outcome",
  tokenType: "prefix_router.token.type",
  result: "prefix_router.prediction.result",
  operation: "gen_ai.operation.name",
  provider: "gen_ai.provider.name",
  model: "gen_ai.request.model",
  genAiTokenType: "gen_ai.token.type",
  inputTokens: "gen_ai.usage.input_tokens",
  cacheReadTokens: "gen_ai.usage.cache_read.input_tokens",
  timeToFirstChunk: "gen_ai.response.time_to_first_chunk",
  serverAddress: "server.address",
  serverPort: "server.port",
  errorType: "error.type",
} as const;

/** Span attributes of a decision's reason (`Lease.reason`): `prefix_router.reason.<field in snake case>`. */
export const REASON_ATTR = {
  kind: "prefix_router.reason.kind",
  rank: "prefix_router.reason.rank",
  inflight: "prefix_router.reason.inflight",
  threshold: "prefix_router.reason.threshold",
  preferred: "prefix_router.reason.preferred",
  preferredInflight: "prefix_router.reason.preferred_inflight",
  passedOver: "prefix_router.reason.passed_over",
  predictedCachedTokens: "prefix_router.reason.predicted_cached_tokens",
  matchedBlocks: "prefix_router.reason.matched_blocks",
  longestMatchBlocks: "prefix_router.reason.longest_match_blocks",
  blocks: "prefix_router.reason.blocks",
  matchedBy: "prefix_router.reason.matched_by", // precise-prefix registration (to move onto the strategy registry at merge)
} as const satisfies Record<keyof DecisionReason, string>;

/** Bucket boundaries the GenAI conventions advise. */
const DURATION_BUCKETS_S = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];

/** The GenAI client instruments, recorded once per routed request. */
export class RequestMetrics {
  readonly duration: Api.Histogram;
  readonly firstChunk: Api.Histogram;
  readonly tokens: Api.Histogram;

  constructor(meter: Api.Meter) {
    this.duration = meter.createHistogram("gen_ai.client.operation.duration", {
      unit: "s",
      description: "GenAI operation duration.",
      advice: { explicitBucketBoundaries: DURATION_BUCKETS_S },
    });
    this.firstChunk = meter.createHistogram("gen_ai.client.operation.time_to_first_chunk", {
      unit: "s",
      description: "Time to receive the first chunk of a streamed response, from the request.",
      advice: { explicitBucketBoundaries: DURATION_BUCKETS_S },
    });
    this.tokens = meter.createHistogram("gen_ai.client.token.usage", {
      unit: "{token}",
      description: "Number of input and output tokens used.",
      advice: { explicitBucketBoundaries: TOKEN_BUCKETS },
    });
  }
}

/** Outcomes that are errors of the operation (a cancel is the caller's choice, not a failure). */
function isError(outcome: LeaseOutcome): boolean {
  return outcome === "connect-error" || outcome === "server-error" || outcome === "client-error";
}

/** @internal */
export class OtelRequestTrace implements RequestTrace {
  private readonly span: Api.Span;
  private readonly startMs: number;
  private readonly context: Api.Context;
  private firstChunkMs: number | null = null;
  private attempts = 0;
  private ended = false;

  constructor(
    private readonly api: OtelApi,
    tracer: Api.Tracer,
    private readonly propagator: TextMapPropagatorLike | undefined,
    private readonly metrics: RequestMetrics,
    private readonly clock: Clock,
    private readonly facts: RequestFacts,
  ) {
    this.startMs = clock.now();
    const attributes: Api.Attributes = {
      [ATTR.operation]: facts.operation,
      [ATTR.provider]: facts.provider,
      [ATTR.strategy]: facts.strategy,
    };
    if (facts.model !== undefined) attributes[ATTR.model] = facts.model;
    const parent = api.context.active();
    const name = facts.model === undefined ? facts.operation : `${facts.operation} ${facts.model}`;
    this.span = tracer.startSpan(name, { kind: api.SpanKind.CLIENT, attributes }, parent);
    this.context = api.trace.setSpan(parent, this.span);
  }

  get explains(): boolean {
    return this.span.isRecording();
  }

  run<R>(send: () => Promise<R>): Promise<R> {
    return this.api.context.with(this.context, send);
  }

  headers(): Record<string, string> {
    const carrier: Record<string, string> = {};
    if (this.propagator !== undefined) this.propagator.inject(this.context, carrier, this.api.defaultTextMapSetter);
    else this.api.propagation.inject(this.context, carrier);
    return carrier;
  }

  attempt<T extends TargetSpec>(lease: Lease<T>): Lease<T> {
    this.attempts++;
    return new TracedLease(lease, this);
  }

  failed<T extends TargetSpec>(lease: Lease<T> | undefined, outcome: LeaseOutcome, error: unknown, final: boolean): void {
    if (lease === undefined) {
      this.endUnrouted(error);
      return;
    }
    const inner = lease instanceof TracedLease ? (lease.inner as Lease<T>) : lease;
    if (inner.released) return;
    inner.release(outcome);
    this.event(inner, outcome, error);
    if (final) this.end(inner, outcome, undefined, error);
  }

  /** Routing failed before any attempt (no eligible target, …): the span ends with the error. */
  private endUnrouted(error: unknown): void {
    if (this.ended) return;
    this.ended = true;
    const type = errorType("connect-error", error) ?? "error";
    this.span.setAttributes({ [ATTR.attempts]: this.attempts, [ATTR.errorType]: type });
    this.span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
    if (error instanceof Error) this.span.recordException(error);
    this.span.end();
  }

  /** @internal The first byte of the answering attempt's body. */
  firstByte(): void {
    this.firstChunkMs ??= this.clock.now() - this.startMs;
  }

  /** @internal The answering attempt's lease was released: the request is over. */
  answered(lease: Lease<TargetSpec>, outcome: LeaseOutcome, info: ReleaseInfo | undefined): void {
    this.event(lease, outcome, undefined);
    this.end(lease, outcome, info, undefined);
  }

  private event(lease: Lease<TargetSpec>, outcome: LeaseOutcome, error: unknown): void {
    const attributes: Api.Attributes = { ...this.pickAttributes(lease), [ATTR.outcome]: outcome };
    const type = errorType(outcome, error);
    if (type !== undefined) attributes[ATTR.errorType] = type;
    this.span.addEvent("prefix_router.attempt", attributes);
  }

  private pickAttributes(lease: Lease<TargetSpec>): Api.Attributes {
    const attributes: Api.Attributes = {
      [ATTR.attempt]: lease.attempt,
      [ATTR.target]: lease.target.id,
      [ATTR.kind]: lease.kind,
      [ATTR.rank]: lease.rank,
    };
    if (lease.key !== undefined) attributes[ATTR.routingKey] = lease.key;
    if (lease.predictedCachedTokens !== undefined) attributes[ATTR.predicted] = lease.predictedCachedTokens;
    const reason = lease.reason;
    if (reason !== undefined) {
      for (const name of Object.keys(REASON_ATTR) as (keyof DecisionReason)[]) {
        const value = reason[name];
        if (value !== undefined) attributes[REASON_ATTR[name]] = value;
      }
    }
    return attributes;
  }

  private end(lease: Lease<TargetSpec>, outcome: LeaseOutcome, info: ReleaseInfo | undefined, error: unknown): void {
    if (this.ended) return;
    this.ended = true;
    const { span, facts } = this;
    const attributes: Api.Attributes = { ...this.pickAttributes(lease), [ATTR.attempts]: this.attempts, [ATTR.outcome]: outcome };
    delete attributes[ATTR.attempt];
    const server = facts.server?.(lease.target);
    if (server !== undefined) {
      attributes[ATTR.serverAddress] = server.address;
      attributes[ATTR.serverPort] = server.port;
    }
    if (typeof info?.promptTokens === "number") attributes[ATTR.inputTokens] = info.promptTokens;
    if (typeof info?.cachedTokens === "number") attributes[ATTR.cacheReadTokens] = info.cachedTokens;
    if (facts.streaming && this.firstChunkMs !== null) attributes[ATTR.timeToFirstChunk] = this.firstChunkMs / 1000;
    const type = errorType(outcome, error);
    if (type !== undefined) {
      attributes[ATTR.errorType] = type;
      span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: error instanceof Error ? error.message : outcome });
      if (error instanceof Error) span.recordException(error);
    }
    span.setAttributes(attributes);
    span.end();
    this.record(lease, outcome, info, type, server);
  }

  private record(
    lease: Lease<TargetSpec>,
    outcome: LeaseOutcome,
    info: ReleaseInfo | undefined,
    type: string | undefined,
    server: { address: string; port: number } | undefined,
  ): void {
    const { facts, metrics } = this;
    const attributes: Api.Attributes = { [ATTR.operation]: facts.operation, [ATTR.provider]: facts.provider, [ATTR.target]: lease.target.id };
    if (facts.model !== undefined) attributes[ATTR.model] = facts.model;
    if (server !== undefined) {
      attributes[ATTR.serverAddress] = server.address;
      attributes[ATTR.serverPort] = server.port;
    }
    if (type !== undefined) attributes[ATTR.errorType] = type;
    metrics.duration.record(Math.max(0, this.clock.now() - this.startMs) / 1000, attributes);
    if (facts.streaming && this.firstChunkMs !== null && outcome !== "cancelled") metrics.firstChunk.record(this.firstChunkMs / 1000, attributes);
    if (typeof info?.promptTokens === "number") metrics.tokens.record(info.promptTokens, { ...attributes, [ATTR.genAiTokenType]: "input" });
  }
}

/**
 * `error.type`: the first `code` along the error's cause chain (`ECONNREFUSED` under undici's
 * `TypeError: fetch failed`), else its name, else the outcome; `undefined` for a request that did
 * not fail.
 */
function errorType(outcome: LeaseOutcome, error: unknown): string | undefined {
  if (!isError(outcome)) return undefined;
  let current = error;
  for (let depth = 0; depth < 4 && current !== null && typeof current === "object"; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string") return code;
    current = (current as { cause?: unknown }).cause;
  }
  const name = error !== null && typeof error === "object" ? (error as { name?: unknown }).name : undefined;
  return typeof name === "string" && name !== "Error" ? name : outcome;
}

/** An attempt's lease, seen by its request's trace. */
class TracedLease<T extends TargetSpec> implements Lease<T> {
  constructor(
    readonly inner: Lease<T>,
    private readonly trace: OtelRequestTrace,
  ) {}

  get target(): T {
    return this.inner.target;
  }
  get kind() {
    return this.inner.kind;
  }
  get rank(): number {
    return this.inner.rank;
  }
  get key(): string | undefined {
    return this.inner.key;
  }
  get attempt(): number {
    return this.inner.attempt;
  }
  get predictedCachedTokens(): number | undefined {
    return this.inner.predictedCachedTokens;
  }
  get input(): InputKind {
    return this.inner.input;
  }
  get reason(): DecisionReason | undefined {
    return this.inner.reason;
  }
  get released(): boolean {
    return this.inner.released;
  }

  firstByte(): void {
    if (this.inner.released) return;
    this.inner.firstByte();
    this.trace.firstByte();
  }

  release(outcome: LeaseOutcome = "success", info?: ReleaseInfo): void {
    if (this.inner.released) return;
    this.inner.release(outcome, info);
    this.trace.answered(this.inner as Lease<TargetSpec>, outcome, info);
  }

  toJSON(): LeaseRecord<T> {
    return this.inner.toJSON();
  }
}
