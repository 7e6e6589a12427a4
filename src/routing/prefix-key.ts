/**
 * A request's routing key under one router's settings: the first `prefixLength` of its routing
 * input (`routing-input.ts`; text mode under `keyScope`), hashed with its tenant and model
 * (`routing-key.ts`), with the length that prefix covers and the whole prompt's length
 * (`prompt-length.ts`). What `prefix-aware` ranks by, and `StrategyEnv.routingKey`.
 */
import { measurePrompt } from "./prompt-length.js";
import { PrefixWriter } from "./prefix-writer.js";
import { type KeyScope, type RoutingMode, bytesPrefix, textRouting } from "./routing-input.js";
import type { KeyHasher } from "./routing-key.js";

/** A request's routing input: its key and the length of the prefix the key covers (characters or bytes). */
export interface PrefixKey {
  readonly key: bigint;
  readonly length: number;
  /** Length of the whole prompt's routing input (characters or bytes), when the router read it whole. */
  readonly units?: number | undefined;
}

/** What a key is read from: a request as strategies see it. */
export interface KeyedRequest {
  readonly body: unknown;
  readonly tenant: string | undefined;
  readonly model: string | undefined;
}

/** The settings a router's keys follow. */
export interface PrefixKeySettings {
  readonly mode: RoutingMode;
  readonly prefixLength: number;
  readonly keyScope: KeyScope;
}

/** @internal Reads routing keys for one router. Not shared between routers (it reuses one buffer). */
export class PrefixKeyReader {
  /** The routing key's bytes-mode input is written into one buffer per router, reused per request. */
  private readonly writer = new PrefixWriter();

  constructor(
    private readonly hasher: KeyHasher,
    private readonly settings: PrefixKeySettings,
  ) {}

  /** The request's key and prefix length, or `undefined` without routing input. */
  read(request: KeyedRequest): PrefixKey | undefined {
    const { mode, prefixLength, keyScope } = this.settings;
    if (mode === "text") {
      const { prefix, units } = textRouting(request.body, prefixLength, keyScope);
      return prefix.length === 0 ? undefined : { key: this.hasher.key(mode, request.tenant, request.model, prefix), length: prefix.length, units };
    }
    const prefix = bytesPrefix(request.body, prefixLength, this.writer);
    const units = measurePrompt(mode, request.body, { length: prefix.length, limit: prefixLength }, "exact");
    return prefix.length === 0 ? undefined : { key: this.hasher.key(mode, request.tenant, request.model, prefix), length: prefix.length, units };
  }
}
