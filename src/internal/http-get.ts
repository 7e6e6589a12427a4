/**
 * The one HTTP request the background features make: a GET of a target's own URL, bounded in
 * time (`timeoutMs`), in size (`maxBodyBytes`) and in life (its owner's `signal`, which
 * `router.close()` aborts). Every way it ends closes the request: a body over the limit or a
 * timeout aborts the connection, so nothing is left reading.
 */
import type { Timers } from "./timers.js";

/** How one GET is bounded. */
export interface GetLimits {
  readonly headers: Readonly<Record<string, string>>;
  /** The whole exchange, body included, ms. */
  readonly timeoutMs: number;
  /** The most body bytes read; a longer body fails the GET. */
  readonly maxBodyBytes: number;
  /** The option that sets `maxBodyBytes`, named in the failure. */
  readonly maxBodyOption: string;
  /** Where the timeout is set (the feature's injectable timers). */
  readonly timers: Timers;
  /** Aborted when the owner closes: the GET ends at once. */
  readonly signal: AbortSignal;
}

/**
 * GETs `url` and reads the whole body, at most `maxBodyBytes` of it (a keep-alive connection is
 * reused only once its body is consumed). Rejects on a network error, a timeout, a body over the
 * limit (declared by `content-length` or counted while reading) and when `signal` aborts, with
 * an `Error` whose message says which; any status resolves. Redirects are not followed.
 */
export async function getText(url: string, limits: GetLimits): Promise<{ status: number; text: string }> {
  if (limits.signal.aborted) throw new Error("closed");
  const controller = new AbortController();
  const onClose = (): void => controller.abort(new Error("closed"));
  limits.signal.addEventListener("abort", onClose, { once: true });
  const timer = limits.timers.setTimeout(() => controller.abort(new Error(`no complete answer within ${limits.timeoutMs} ms`)), limits.timeoutMs);
  try {
    const res = await fetch(url, { headers: limits.headers, redirect: "manual", signal: controller.signal });
    return { status: res.status, text: await readCapped(res, limits) };
  } catch (e) {
    // Whatever failed, the request ends here: aborting closes a connection still being read.
    if (!controller.signal.aborted) controller.abort(e);
    throw failure(controller.signal.reason);
  } finally {
    limits.timers.clearTimeout(timer);
    limits.signal.removeEventListener("abort", onClose);
  }
}

/** The body as text, or an error once it passes `maxBodyBytes` (before reading it, when declared). */
async function readCapped(res: Response, limits: GetLimits): Promise<string> {
  const max = limits.maxBodyBytes;
  const tooLarge = (): Error => new Error(`body larger than ${max} bytes (\`${limits.maxBodyOption}\`); connection closed`);
  if (Number(res.headers.get("content-length")) > max) throw tooLarge();
  if (res.body === null) return "";
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  const parts: string[] = [];
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
    if (bytes > max) throw tooLarge();
    parts.push(decoder.decode(value, { stream: true }));
  }
  parts.push(decoder.decode());
  return parts.join("");
}

/** An `Error` whose message says what failed (undici's "fetch failed" gains its cause). */
function failure(e: unknown): Error {
  if (!(e instanceof Error)) return new Error(String(e));
  const cause = (e as { cause?: unknown }).cause;
  if (e.message === "fetch failed" && cause instanceof Error) return new Error(`fetch failed: ${cause.message}`, { cause: e });
  return e;
}
