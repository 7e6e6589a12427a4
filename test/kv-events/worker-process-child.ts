/**
 * A script's whole life with `precise-prefix` and the default worker-thread tokenizer
 * (worker-process.test.ts): one request whose long prompt this process has not tokenized waits
 * for its tokens, routes, ends — and the router is never closed. Prints `waiting` and the
 * decision. Run with `node --import tsx`.
 */
import { createRouter } from "../../src/index.js";
import type { PrecisePrefix } from "../../src/strategies/precise-prefix/strategy.js";
import { FILES } from "../strategies/precise-support.js";

let strategy: PrecisePrefix | undefined;
const router = await createRouter({
  targets: [{ id: "a" }, { id: "b" }],
  strategy: (env) => (strategy = env.create("precise-prefix") as unknown as PrecisePrefix) as never,
  precisePrefix: {
    tokenizer: FILES,
    blockSize: 4,
    model: "m",
    tokenizeWaitMs: 10_000,
    feed: () => ({ inSync: () => true }),
  },
});
await strategy!.ready;
const body = { model: "m", messages: [{ role: "system", content: "The router sends each request to the engine holding its prefix. ".repeat(600) }, { role: "user", content: "Which engine?" }] };
const prepared = router.prepare({ body });
const waiting = router.settle(prepared);
console.log(waiting === undefined ? "not waiting" : "waiting");
// Nothing else is pending in this process while the worker tokenizes.
await waiting;
const lease = router.route(prepared, { explain: true });
console.log(JSON.stringify({ target: lease.target.id, matchedBy: (lease.reason as { matchedBy?: string } | undefined)?.matchedBy }));
lease.release("success");
