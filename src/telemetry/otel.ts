/**
 * {@link Telemetry} on `@opentelemetry/api` (types only here: the module is handed in by load.ts).
 *
 * Metrics, per router (the names are documented in docs/observability.md):
 *
 * | instrument | kind | unit | attributes |
 * |---|---|---|---|
 * | `prefix_router.requests` | counter | `{request}` | target, strategy, pick kind |
 * | `prefix_router.decision.duration` | histogram | `s` | strategy, pick kind |
 * | `prefix_router.inflight` | up-down counter | `{request}` | target |
 * | `prefix_router.ejections` | counter | `{ejection}` | target |
 * | `prefix_router.tokens` | counter | `{token}` | target, strategy, token type (`prompt`, `cached`, `predicted_cached`) |
 * | `prefix_router.predictions` | counter | `{prediction}` | target, strategy, result (`hit`, `miss`) |
 * | `prefix_router.index.resets` | counter | `{reset}` | target, strategy |
 *
 * and, per request routed by an adapter (request-trace.ts), the GenAI semantic conventions'
 * `gen_ai.client.operation.duration`, `gen_ai.client.operation.time_to_first_chunk` (streams) and
 * `gen_ai.client.token.usage` (input tokens).
 */
import type * as Api from "@opentelemetry/api";
import { ATTR, INSTRUMENTATION_NAME, type OtelApi, OtelRequestTrace, RequestMetrics } from "./request-trace.js";
import type { Released, RequestFacts, RequestTrace, Telemetry, TelemetryOptions } from "./telemetry.js";
import type { Clock, PickKind } from "../types.js";

/** Decisions take microseconds: buckets from 5 µs to 10 ms. */
const DECISION_BUCKETS_S = [5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2];

/** @internal */
export class OtelTelemetry implements Telemetry {
  private readonly requests: Api.Counter;
  private readonly decision: Api.Histogram;
  private readonly inflight: Api.UpDownCounter;
  private readonly ejections: Api.Counter;
  private readonly tokens: Api.Counter;
  private readonly predictions: Api.Counter;
  private readonly resets: Api.Counter;
  private readonly requestMetrics: RequestMetrics;
  private readonly tracer: Api.Tracer;
  /** Attribute sets by target id (ids of targets that left stay: a few hundred bytes each). */
  private readonly targets = new Map<string, TargetAttributes>();
  private readonly decisionAttributes = new Map<PickKind, Api.Attributes>();

  constructor(
    private readonly api: OtelApi,
    private readonly options: TelemetryOptions,
    private readonly clock: Clock,
  ) {
    const meter = ((options.meterProvider as Api.MeterProvider | undefined) ?? api.metrics.getMeterProvider()).getMeter(INSTRUMENTATION_NAME);
    this.tracer = ((options.tracerProvider as Api.TracerProvider | undefined) ?? api.trace.getTracerProvider()).getTracer(INSTRUMENTATION_NAME);
    this.requests = meter.createCounter("prefix_router.requests", { unit: "{request}", description: "Requests routed, by target, strategy and pick kind." });
    this.decision = meter.createHistogram("prefix_router.decision.duration", {
      unit: "s",
      description: "Time the router took to pick a target.",
      advice: { explicitBucketBoundaries: DECISION_BUCKETS_S },
    });
    this.inflight = meter.createUpDownCounter("prefix_router.inflight", { unit: "{request}", description: "Requests in flight per target, as this router counts them." });
    this.ejections = meter.createCounter("prefix_router.ejections", { unit: "{ejection}", description: "Passive outlier ejections per target." });
    this.tokens = meter.createCounter("prefix_router.tokens", {
      unit: "{token}",
      description: "Prompt tokens, cached prompt tokens the servers reported, and cached tokens the strategy predicted for the same responses.",
    });
    this.predictions = meter.createCounter("prefix_router.predictions", {
      unit: "{prediction}",
      description: "Cache predictions tested by a response: hit (the server served at least the closed loop's ratio of it) or miss.",
    });
    this.resets = meter.createCounter("prefix_router.index.resets", {
      unit: "{reset}",
      description: "Times the strategy forgot what it believed a target caches after repeated misses.",
    });
    this.requestMetrics = new RequestMetrics(meter);
  }

  picked(targetId: string, strategy: string, kind: PickKind, decisionMs: number): void {
    const t = this.target(targetId, strategy);
    this.requests.add(1, t.kind(kind));
    let decision = this.decisionAttributes.get(kind);
    if (decision === undefined) {
      decision = { [ATTR.strategy]: strategy, [ATTR.kind]: kind };
      this.decisionAttributes.set(kind, decision);
    }
    this.decision.record(Math.max(0, decisionMs) / 1000, decision);
    this.inflight.add(1, t.target);
  }

  released(r: Released): void {
    const t = this.target(r.targetId, r.strategy);
    this.inflight.add(-1, t.target);
    const cached = r.info?.cachedTokens;
    if (typeof cached !== "number") return;
    const prompt = r.info?.promptTokens;
    if (typeof prompt === "number") this.tokens.add(prompt, t.tokens.prompt);
    this.tokens.add(cached, t.tokens.cached);
    if (r.predictedCachedTokens !== undefined) this.tokens.add(r.predictedCachedTokens, t.tokens.predicted_cached);
    if (r.verdict !== undefined) this.predictions.add(1, t.results[r.verdict]);
  }

  /** The attribute sets of a target, built once: the hot path allocates none. */
  private target(id: string, strategy: string): TargetAttributes {
    let t = this.targets.get(id);
    if (t === undefined) {
      t = new TargetAttributes(id, strategy);
      this.targets.set(id, t);
    }
    return t;
  }

  ejected(targetId: string): void {
    this.ejections.add(1, { [ATTR.target]: targetId });
  }

  forgot(targetId: string, strategy: string): void {
    this.resets.add(1, { [ATTR.target]: targetId, [ATTR.strategy]: strategy });
  }

  request(facts: RequestFacts): RequestTrace {
    const { api, tracer, requestMetrics: metrics, clock } = this;
    return new OtelRequestTrace({ api, tracer, propagator: this.options.propagator, metrics, clock }, facts);
  }
}

/** One target's attribute sets. */
class TargetAttributes {
  readonly target: Api.Attributes;
  readonly tokens: Readonly<Record<"prompt" | "cached" | "predicted_cached", Api.Attributes>>;
  readonly results: Readonly<Record<"hit" | "miss", Api.Attributes>>;
  private readonly kinds = new Map<PickKind, Api.Attributes>();

  constructor(
    private readonly id: string,
    private readonly strategy: string,
  ) {
    this.target = { [ATTR.target]: id };
    const withStrategy = { [ATTR.target]: id, [ATTR.strategy]: strategy };
    this.tokens = {
      prompt: { ...withStrategy, [ATTR.tokenType]: "prompt" },
      cached: { ...withStrategy, [ATTR.tokenType]: "cached" },
      predicted_cached: { ...withStrategy, [ATTR.tokenType]: "predicted_cached" },
    };
    this.results = { hit: { ...withStrategy, [ATTR.result]: "hit" }, miss: { ...withStrategy, [ATTR.result]: "miss" } };
  }

  kind(kind: PickKind): Api.Attributes {
    let attributes = this.kinds.get(kind);
    if (attributes === undefined) {
      attributes = { [ATTR.target]: this.id, [ATTR.strategy]: this.strategy, [ATTR.kind]: kind };
      this.kinds.set(kind, attributes);
    }
    return attributes;
  }
}
