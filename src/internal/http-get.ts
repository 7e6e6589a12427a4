/** The one HTTP request the background features make: a GET of a target's own URL with a timeout. */

/**
 * GETs `url` with `headers`, aborted after `timeoutMs`, and reads the whole body (a keep-alive
 * connection is reused only once its body is consumed). Rejects on a network error or timeout;
 * any status resolves.
 */
export async function getText(url: string, headers: Readonly<Record<string, string>>, timeoutMs: number): Promise<{ status: number; text: string }> {
  const res = await fetch(url, { headers, redirect: "manual", signal: AbortSignal.timeout(timeoutMs) });
  return { status: res.status, text: await res.text() };
}
