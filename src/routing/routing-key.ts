/**
 * Routing key: xxHash64 (seeded) over an unambiguous encoding of (mode, tenant, model, prefix).
 *
 *   byte 0        format version (1)
 *   byte 1        mode: 0x74 't' text, 0x62 'b' bytes
 *   byte 2        tenant length L_t (0 = no tenant; a tenant is 1–64 printable ASCII)
 *   L_t bytes     tenant
 *   4 bytes       model length L_m, little-endian uint32 (absent model = length 0xFFFFFFFF)
 *   L_m bytes     model, UTF-8
 *   4 bytes       prefix length L_p, little-endian uint32
 *   L_p bytes     prefix: UTF-8 of the text prefix, or the byte prefix
 *
 * Length prefixes make the encoding injective ("a"+"bc" and "ab"+"c" differ), so two different
 * inputs collide only by a 64-bit hash collision — with one documented exception: text is
 * encoded as UTF-8, where a lone surrogate becomes U+FFFD. The same inputs and seed give the same key in
 * every process, on every machine and in every patch release; the known-answer vectors in the
 * tests pin it, and changing them is a breaking change.
 */
import xxhash from "xxhash-wasm";
import { RouterError } from "../errors.js";
import type { RoutingMode } from "./routing-input.js";
import { describe } from "../internal/validate.js";
import { writeU32 } from "../internal/bytes.js";

const FORMAT_VERSION = 1;
const NO_MODEL = 0xffff_ffff;

/** xxhash-wasm's API, loaded once per process. */
export type XXHashAPI = Awaited<ReturnType<typeof xxhash>>;

/** The WebAssembly hasher compiles once per process; this promise is constant once created. */
let hasherPromise: Promise<XXHashAPI> | undefined;

/** @internal Resolves the process-wide xxhash-wasm instance. */
export function loadHasher(): Promise<XXHashAPI> {
  hasherPromise ??= xxhash();
  return hasherPromise;
}

/** Checks a tenant id: 1–64 printable ASCII characters (0x20–0x7E), SageMaker's `PrefixAwareId` rule. */
export function validateTenant(tenant: unknown): string {
  if (typeof tenant !== "string" || tenant.length < 1 || tenant.length > 64 || !/^[\x20-\x7e]+$/.test(tenant)) {
    throw new RouterError(
      "ERR_INVALID_TENANT",
      `Expected the tenant id to be 1 to 64 printable ASCII characters, got ${describe(tenant)}`,
    );
  }
  return tenant;
}

/** @internal Encodes and hashes routing keys, reusing one growable buffer. Not shared between routers. */
export class KeyHasher {
  private buffer = new Uint8Array(4096);
  private readonly encoder = new TextEncoder();

  constructor(
    private readonly api: XXHashAPI,
    private readonly seed: bigint,
  ) {}

  /** The 64-bit routing key. `tenant` must already be validated. */
  key(mode: RoutingMode, tenant: string | undefined, model: string | undefined, prefix: string | Uint8Array): bigint {
    const tenantLength = tenant === undefined ? 0 : tenant.length;
    const maxModel = model === undefined ? 0 : model.length * 3;
    const maxPrefix = typeof prefix === "string" ? prefix.length * 3 : prefix.length;
    this.ensure(3 + tenantLength + 4 + maxModel + 4 + maxPrefix);
    const buf = this.buffer;
    let at = 0;
    buf[at++] = FORMAT_VERSION;
    buf[at++] = mode === "text" ? 0x74 : 0x62;
    buf[at++] = tenantLength;
    for (let i = 0; i < tenantLength; i++) buf[at++] = (tenant as string).charCodeAt(i);
    if (model === undefined) {
      at = writeU32(buf, at, NO_MODEL);
    } else {
      const written = this.encoder.encodeInto(model, buf.subarray(at + 4)).written;
      writeU32(buf, at, written);
      at += 4 + written;
    }
    if (typeof prefix === "string") {
      const written = this.encoder.encodeInto(prefix, buf.subarray(at + 4)).written;
      writeU32(buf, at, written);
      at += 4 + written;
    } else {
      at = writeU32(buf, at, prefix.length);
      buf.set(prefix, at);
      at += prefix.length;
    }
    return this.api.h64Raw(buf.subarray(0, at), this.seed);
  }

  /** 64-bit hash of a target id (its rendezvous identity). */
  targetHash(id: string): bigint {
    return this.api.h64Raw(this.encoder.encode(id), this.seed ^ 0x9e37_79b9_7f4a_7c15n);
  }

  private ensure(size: number): void {
    if (this.buffer.length < size) {
      let n = this.buffer.length;
      while (n < size) n *= 2;
      this.buffer = new Uint8Array(n);
    }
  }
}
