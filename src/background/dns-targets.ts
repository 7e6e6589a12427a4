/**
 * Targets from DNS: the A and AAAA records of a name — what a Kubernetes headless service
 * answers with, one record per ready pod — as a `membership.targets` provider.
 */
import { Resolver } from "node:dns/promises";
import { optionInteger, optionObject, optionString } from "../internal/options.js";
import { checkFunction, checkKnownKeys, describe, keysOf, orDefault } from "../internal/validate.js";
import type { TargetSpec } from "../types.js";

/** A target found in DNS: its id is `address:port`, its OpenAI `baseURL` built from the options. */
export interface DnsTarget extends TargetSpec {
  readonly baseURL: string;
}

/** The resolver methods {@link dnsTargets} calls (`node:dns/promises`' `Resolver` has them). */
export interface DnsResolver {
  resolve4(hostname: string): Promise<string[]>;
  resolve6(hostname: string): Promise<string[]>;
}

/** Options of {@link dnsTargets}. */
export interface DnsTargetsOptions<T extends TargetSpec = DnsTarget> {
  /** The name to resolve, e.g. `vllm.default.svc.cluster.local` (a headless service). */
  hostname: string;
  /** The port the targets serve on. From 1 to 65,535. */
  port: number;
  /** `http` or `https`. @default "http" */
  protocol?: "http" | "https";
  /** Path of the OpenAI-compatible API on each target. @default "/v1" */
  path?: string;
  /** Which records: 4 (A), 6 (AAAA) or 0 (both). @default 0 */
  family?: 0 | 4 | 6;
  /** The resolver (tests, custom DNS servers). @default a new `Resolver` of `node:dns/promises` */
  resolver?: DnsResolver;
  /** Builds a target from an address. @default `{ id: "address:port", baseURL: "protocol://address:port/path" }` */
  toTarget?: (address: string, family: 4 | 6) => T;
}

const NO_RECORDS = new Set(["ENODATA", "ENOTFOUND", "ENOENT"]);

/** @internal Every key of {@link DnsTargetsOptions}. */
export const DNS_TARGETS_OPTION_KEYS = keysOf<DnsTargetsOptions>()(["hostname", "port", "protocol", "path", "family", "resolver", "toTarget"]);

/**
 * A `membership.targets` provider resolving `hostname`: one target per address, sorted, so the
 * set only changes when the records do. A name with no records of one family is not an error;
 * a lookup that fails (timeout, server failure) rejects, and membership keeps the current set.
 *
 * @example
 * const router = await createRouter({
 *   targets: [],
 *   membership: { targets: dnsTargets({ hostname: "vllm.prod.svc.cluster.local", port: 8000 }), intervalMs: 5000 },
 * });
 */
export function dnsTargets<T extends TargetSpec = DnsTarget>(options: DnsTargetsOptions<T>): () => Promise<T[]> {
  const o = optionObject("dnsTargets options", options);
  checkKnownKeys("dnsTargets", o, DNS_TARGETS_OPTION_KEYS);
  const hostname = optionString("dnsTargets.hostname", o["hostname"]);
  const port = optionInteger("dnsTargets.port", o["port"], Number.NaN, 1, 65_535);
  const protocol = orDefault(o["protocol"], "http");
  if (protocol !== "http" && protocol !== "https") {
    throw new RangeError(`Expected \`dnsTargets.protocol\` to be "http" or "https", got ${describe(protocol)}`);
  }
  const path = orDefault(o["path"], "/v1");
  if (typeof path !== "string" || (path !== "" && !path.startsWith("/"))) {
    throw new RangeError(`Expected \`dnsTargets.path\` to be "" or a path starting with "/", got ${describe(path)}`);
  }
  const family = orDefault(o["family"], 0);
  if (family !== 0 && family !== 4 && family !== 6) {
    throw new RangeError(`Expected \`dnsTargets.family\` to be 0, 4 or 6, got ${describe(family)}`);
  }
  const resolver = (o["resolver"] === undefined ? new Resolver() : o["resolver"]) as DnsResolver;
  if (typeof resolver.resolve4 !== "function" || typeof resolver.resolve6 !== "function") {
    throw new TypeError(`Expected \`dnsTargets.resolver\` to have resolve4 and resolve6 methods, got ${describe(resolver)}`);
  }
  const toTarget =
    o["toTarget"] === undefined
      ? (address: string, fam: 4 | 6): T => {
          const host = fam === 6 ? `[${address}]` : address;
          return { id: `${host}:${port}`, baseURL: `${protocol}://${host}:${port}${path}` } as unknown as T;
        }
      : checkFunction<(address: string, family: 4 | 6) => T>("dnsTargets.toTarget", o["toTarget"]);
  const lookup = async (fam: 4 | 6): Promise<string[] | Error> => {
    try {
      return await (fam === 4 ? resolver.resolve4(hostname) : resolver.resolve6(hostname));
    } catch (e) {
      if (NO_RECORDS.has(String((e as { code?: unknown }).code))) return [];
      return e instanceof Error ? e : new Error(String(e));
    }
  };
  return async () => {
    const families: (4 | 6)[] = family === 0 ? [4, 6] : [family];
    const answers = await Promise.all(families.map(lookup));
    // A family whose lookup failed (not "no records") would drop its targets: keep the set instead.
    const failed = answers.find((a): a is Error => a instanceof Error);
    if (failed !== undefined) throw failed;
    const out: T[] = [];
    families.forEach((fam, k) => {
      const a = answers[k];
      if (Array.isArray(a)) for (const address of [...new Set(a)].sort()) out.push(toTarget(address, fam));
    });
    return out;
  };
}
