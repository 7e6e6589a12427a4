/**
 * The `precise-prefix` row of the virtual-time benchmark: prefix-router's `precise-prefix`
 * strategy, tokenizing each request as the emulated engine does — its prompt rendered by the
 * fleet's template, tokenized by `emulatedTokens` (4 UTF-16 units a token, the model every other
 * row's engine counts with) through the `{ render, encode }` tokenizer source, synchronously in
 * the read — and reading the fleet's KV events after their modelled lag (kv-feed.ts). Only its
 * own runs' fleets publish events; every other row runs as before, bit for bit.
 */
import { emulatedTokens } from "../fleet/index.js";
import { renderPrompt } from "../fleet/template.js";
import { type PolicyFactory, routerPolicyWith } from "./policies.js";
import { BenchError } from "../common/errors.js";
import type { RouterOptions } from "prefix-router";

/** The row's name. */
export const PRECISE_PREFIX = "precise-prefix";

/** The emulated engine's prompt text for a body, `undefined` for a body it would refuse. */
function render(body: unknown): string | undefined {
  try {
    return renderPrompt(body);
  } catch {
    return undefined;
  }
}

/**
 * The `precise-prefix` policy. Its runs' fleets publish KV events, delivered through
 * `PolicyContext.kvEvents` (one index per router process, the same events for all).
 */
export function precisePolicy(): PolicyFactory {
  return routerPolicyWith(
    PRECISE_PREFIX,
    { strategy: PRECISE_PREFIX as RouterOptions["strategy"] },
    (ctx) => {
      const hub = ctx.kvEvents;
      if (hub === undefined) throw new BenchError("ERR_BENCH_OPTION", "`precise-prefix` needs the fleet's KV events: run it through runBenchmark");
      return {
        precisePrefix: {
          tokenizer: { render, encode: emulatedTokens },
          blockSize: hub.blockSize,
          feed: (sink) => hub.feed(sink),
        },
      };
    },
    true,
  );
}
