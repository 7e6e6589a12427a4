/**
 * A request read once (`router.prepare`, or the first step of `route` and `rank`): its tenant and
 * model validated, a text-mode body parsed, the strategy's routing input computed at most once and
 * kept for every retry. A body whose prefix cannot be canonicalized is read again on its raw
 * prefix (raw-prefix.ts): routing never fails a valid body.
 */
import { describe } from "../internal/validate.js";
import { parseJson } from "../routing/canonical-json.js";
import type { PrefixKey } from "../routing/prefix-key.js";
import { needsRawPrefix, rawPrefixBody } from "../routing/raw-prefix.js";
import type { RoutingMode } from "../routing/routing-input.js";
import { validateTenant } from "../routing/routing-key.js";
import type { StrategyRequest } from "../strategies/strategy.js";
import type { InputKind, RouteRequest } from "../types.js";
import type { PreparedRequest } from "./types.js";

/** What a prepared request asks of its router. */
export interface PreparedOwner {
  eligibleCount(model: string | undefined): number;
}

/** A request read once: what strategies see, and the strategy's routing input. */
export class Prepared implements PreparedRequest, StrategyRequest {
  constructor(
    readonly router: PreparedOwner,
    /** Replaced by its raw-prefix stand-in when its prefix cannot be canonicalized (raw-prefix.ts). */
    public body: unknown,
    readonly tenant: string | undefined,
    readonly model: string | undefined,
  ) {}
  /** How the routing input was read. */
  inputKind: InputKind = "canonical";
  /** The strategy's routing input, once read. */
  input: unknown;
  /** The default ranking's key (strategies without `rank`), once computed. */
  rankingKey: PrefixKey | undefined;

  eligibleCount(): number {
    return this.router.eligibleCount(this.model);
  }

  /**
   * `read(this)`; when the body's prefix cannot be canonicalized, the body is swapped for its
   * raw-prefix stand-in covering `rawUnits`, once, and read again.
   */
  readInput<I>(read: (p: Prepared) => I, mode: RoutingMode, rawUnits: number): I {
    try {
      return read(this);
    } catch (error) {
      if (this.inputKind === "raw" || !needsRawPrefix(error)) throw error;
      this.body = rawPrefixBody(mode, this.body, rawUnits);
      this.inputKind = "raw";
      return read(this);
    }
  }
}

/** Validates a request and parses its body, once, for `owner`: a request it prepared passes through. */
export function prepare(owner: PreparedOwner, request: RouteRequest | PreparedRequest, mode: RoutingMode): Prepared {
  if (request instanceof Prepared) {
    if (request.router === owner) return request;
    throw new TypeError("Expected a request prepared by this router, got one prepared by another router");
  }
  if (request === null || typeof request !== "object") {
    throw new TypeError(`Expected the request to be an object like { body, tenant?, model? }, got ${describe(request)}`);
  }
  const r = request as RouteRequest;
  const tenant = r.tenant === undefined ? undefined : validateTenant(r.tenant);
  let model = r.model;
  if (model !== undefined && typeof model !== "string") {
    throw new TypeError(`Expected the request's \`model\` to be a string, got ${describe(model)}`);
  }
  let body = r.body;
  // Text mode reads JSON text and bytes as the object they encode; parse once here so that
  // `body.model` selects targets and enters the key whatever form the body comes in.
  if (mode === "text" && (typeof body === "string" || body instanceof Uint8Array)) {
    try {
      const parsed = parseJson(body);
      if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) body = parsed;
    } catch {
      // Left as is: reading the routing input reports ERR_INVALID_JSON.
    }
  }
  if (model === undefined && mode === "text" && body !== null && typeof body === "object" && !ArrayBuffer.isView(body)) {
    const m = (body as { model?: unknown }).model;
    if (typeof m === "string") model = m;
  }
  return new Prepared(owner, body, tenant, model);
}
