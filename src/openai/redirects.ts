/**
 * Redirects of routed requests. `fetch` follows a 3xx by default, resending the body and every
 * header — the target's own credentials included — to wherever `Location` points: a target, or
 * anything in front of it, could send a prompt and an API key to another host. A routed request
 * is therefore always sent with `redirect: "manual"`:
 *
 * - `"manual"` (the default): the 3xx is the answer; the caller sees its status and `Location`.
 * - `"same-origin"`: a 3xx whose `Location` is on the chosen target's origin is followed, at most
 *   {@link MAX_REDIRECTS} times, as `fetch` would (303, and 301/302 after a POST, become a GET
 *   without body); a `Location` anywhere else, or a body that cannot be sent twice, ends the walk
 *   and the 3xx is the answer.
 *
 * The underlying `fetch` must honour `redirect: "manual"` (Node's does); one that follows
 * redirects on its own bypasses this.
 */
import { checkOneOf } from "../internal/validate.js";
import type { Base } from "./targets.js";
import type { RedirectPolicy } from "./types.js";

/** @default "manual" */
export const DEFAULT_REDIRECT: RedirectPolicy = "manual";

/** Most redirects followed under `"same-origin"`. */
export const MAX_REDIRECTS = 5;

const REDIRECT_STATUSES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);
const BODY_HEADERS = ["content-type", "content-length", "content-encoding", "content-language", "content-location"];

/** @internal Validates the `redirect` option. */
export function checkRedirect(value: unknown): RedirectPolicy {
  return value === undefined ? DEFAULT_REDIRECT : checkOneOf("redirect", value, ["manual", "same-origin"] as const);
}

/** How {@link sendWithRedirects} follows redirects: its policy, the target's base, whether the body can be sent again. */
export interface RedirectRule {
  readonly policy: RedirectPolicy;
  readonly base: Base;
  readonly replayable: boolean;
}

/**
 * Sends `init` to `url` through `send` with `redirect: "manual"`; under `"same-origin"`, follows
 * redirects that stay on `base`'s origin. `replayable`: the body can be sent again.
 */
export async function sendWithRedirects(
  send: (url: string, init: RequestInit) => Promise<Response>,
  url: string,
  init: RequestInit,
  rule: RedirectRule,
): Promise<Response> {
  const { policy, base, replayable } = rule;
  let current = { url, init };
  let response = await send(current.url, { ...current.init, redirect: "manual" });
  for (let hop = 0; policy === "same-origin" && hop < MAX_REDIRECTS && REDIRECT_STATUSES.has(response.status); hop++) {
    const next = nextRequest(response, current, base, replayable);
    if (next === undefined) break;
    await response.body?.cancel().catch(() => {});
    current = next;
    response = await send(current.url, { ...current.init, redirect: "manual" });
  }
  return response;
}

/** The request a redirect leads to, or `undefined` when it must not be followed. */
function nextRequest(
  response: Response,
  current: { url: string; init: RequestInit },
  base: Base,
  replayable: boolean,
): { url: string; init: RequestInit } | undefined {
  const location = response.headers.get("location");
  if (location === null) return undefined;
  let next: URL;
  try {
    next = new URL(location, current.url);
  } catch {
    return undefined;
  }
  if (next.origin !== base.origin || next.username !== "" || next.password !== "") return undefined;
  const method = (current.init.method ?? "GET").toUpperCase();
  const status = response.status;
  if (status === 303 ? method !== "GET" && method !== "HEAD" : (status === 301 || status === 302) && method === "POST") {
    const headers = new Headers(current.init.headers);
    for (const name of BODY_HEADERS) headers.delete(name);
    const { body: _body, ...rest } = current.init;
    return { url: next.href, init: { ...rest, method: "GET", headers } };
  }
  if (!replayable && current.init.body !== undefined && current.init.body !== null) return undefined;
  return { url: next.href, init: current.init };
}
