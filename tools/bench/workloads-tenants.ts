/**
 * `multi-tenant` and `multi-tenant:isolated`: one application serving many tenants, every
 * request a product-wide system prompt (the same for every tenant), then the tenant's own
 * instructions, then a unique question. Each request carries its tenant, which feeds the routing
 * key (SageMaker's `PrefixAwareId`, OpenAI's `prompt_cache_key`). The two workloads are the same
 * request sequence; in `multi-tenant:isolated` every request also carries vLLM's `cache_salt`
 * (the adapters' `isolation: "tenant"`), so the engines keep each tenant's cached blocks apart and
 * the system prompt is cached once per tenant instead of once per instance. The difference
 * between the two is the cost of isolation (docs/tenants.md).
 */
import { Rng, Zipf, mix32 } from "../sim/random.js";
import { TextSource } from "./text.js";
import { BENCH_MODEL, MINUTE, TEXT_NS, type Workload } from "./workload.js";

/** Parameters of {@link multiTenantWorkload}. */
export interface MultiTenantParams {
  /** Tenants, chosen per request with Zipf popularity. @default 200 */
  tenants: number;
  /** Zipf exponent of tenant popularity. @default 1.0 */
  zipfExponent: number;
  /** Tokens of the product-wide system prompt every tenant sends first. @default 3000 */
  systemTokens: number;
  /** Tokens of each tenant's own instructions, after the system prompt. @default 300 */
  tenantTokens: number;
  /** Median question length in tokens (log-normal, σ 0.6, 8–1000). @default 60 */
  questionMedianTokens: number;
  /** Median answer length in tokens (log-normal, σ 0.6, 8–800). @default 150 */
  outputMedianTokens: number;
  /** Poisson arrival rate, requests per second, before the rate multiplier. @default 10 */
  ratePerSecond: number;
  /** `"tenant"`: every request carries `cache_salt` = its tenant (the workload `multi-tenant:isolated`). @default "none" */
  isolation: "none" | "tenant";
}

/** Defaults of {@link multiTenantWorkload}. */
export const MULTI_TENANT_DEFAULTS: Readonly<MultiTenantParams> = {
  tenants: 200,
  zipfExponent: 1.0,
  systemTokens: 3000,
  tenantTokens: 300,
  questionMedianTokens: 60,
  outputMedianTokens: 150,
  ratePerSecond: 10,
  isolation: "none",
};

/**
 * The multi-tenant workload; with `isolation: "tenant"` it is `multi-tenant:isolated`, the same
 * requests with `cache_salt`. The tenant of request i is `tenant-<k>`.
 */
export function multiTenantWorkload(params: Partial<MultiTenantParams> = {}): Workload {
  const p: MultiTenantParams = { ...MULTI_TENANT_DEFAULTS, ...params };
  const isolated = p.isolation === "tenant";
  return {
    name: isolated ? "multi-tenant:isolated" : "multi-tenant",
    description: `${p.tenants} tenants (Zipf s=${p.zipfExponent}) sharing a ${p.systemTokens}-token system prompt${isolated ? ", each tenant its own cache (cache_salt)" : ""}`,
    defaultDurationMs: 20 * MINUTE,
    parameters: { ...p },
    *requests(s) {
      const rng = new Rng(mix32(s.seed, 0x7e4));
      const zipf = new Zipf(p.tenants, p.zipfExponent);
      const text = new TextSource(s.seed);
      const system = text.cached(TEXT_NS.system, 0x7e4, p.systemTokens);
      const meanGap = 1000 / (p.ratePerSecond * s.rateMultiplier);
      let t = rng.exponential(meanGap);
      for (let i = 0; t < s.durationMs; i++) {
        const k = zipf.sample(rng);
        const tenant = `tenant-${k}`;
        const q = rng.logNormalInt(p.questionMedianTokens, 0.6, 8, 1000);
        const out = rng.logNormalInt(p.outputMedianTokens, 0.6, 8, 800);
        yield {
          id: `multi-tenant-${i}`,
          arrivalMs: t,
          outputTokens: out,
          tenant,
          ...(isolated ? { cacheSalt: tenant } : {}),
          body: {
            model: BENCH_MODEL,
            messages: [
              { role: "system", content: `${system}\n\n${text.cached(TEXT_NS.tenant, k, p.tenantTokens)}` },
              { role: "user", content: text.once(TEXT_NS.question, i, q) },
            ],
            max_tokens: out,
          },
        };
        t += rng.exponential(meanGap);
      }
    },
  };
}
