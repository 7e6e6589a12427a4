/** What the KV-event tests share: a free loopback port, and waiting for a condition. */
import { createServer } from "node:net";

/** Ports tests bind: below Linux's ephemeral range (32768–60999 by default), see {@link freePort}. */
const PORTS = { from: 20_000, to: 32_768 };

/**
 * A TCP port free on 127.0.0.1 now (the publisher binds it next), below the ephemeral range: a
 * port of that range, left free while a publisher restarts, can be taken by a connection's own
 * local end — among them the subscriber's reconnects to that very port, which on loopback can
 * connect to themselves (TCP simultaneous open) — and the restarted publisher's bind fails with
 * "Address already in use".
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = PORTS.from + Math.floor(Math.random() * (PORTS.to - PORTS.from));
    if (await canListen(port)) return port;
  }
  throw new Error(`No free port found from ${PORTS.from} to ${PORTS.to - 1}`);
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)));
  });
}

/** Resolves once `cond()` holds, polling every 5 ms; rejects naming `what` after `timeoutMs`. */
export async function waitFor(cond: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
