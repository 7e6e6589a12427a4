/**
 * Where a routed OpenAI request goes: each target's base URL, parsed once with `URL`, and the
 * join of a request's path onto it. The join never builds a URL by concatenating strings, and
 * its result is checked: a request whose final URL is not under the chosen target's base URL —
 * another origin, a path outside the base, a scheme other than http(s) — is refused with
 * `ERR_CROSS_ORIGIN` before anything is sent, so a target's credentials (its `headers`) never go
 * anywhere else.
 */
import { checkTargetFields } from "../adapter/targets.js";
import { RouterError } from "../errors.js";
import { describe } from "../internal/validate.js";
import type { OpenAITarget } from "./types.js";

/** A parsed base URL. */
export interface Base {
  origin: string;
  /** Pathname without trailing slash ("" for the root). */
  path: string;
}

/** The part of a request URL that is joined onto a target's base. */
export interface Relative {
  /** Path to append, starting with "/" (or empty). */
  path: string;
  /** Query string, with its "?" (or empty). */
  search: string;
  /** No client base known: strip the target's own base path when the request path starts with it. */
  stripTargetPath: boolean;
}

/** Parses an absolute `http:`/`https:` URL option; throws a TypeError naming `name` otherwise. */
export function parseBase(name: string, value: unknown): Base {
  if (typeof value !== "string") {
    throw new TypeError(`Expected \`${name}\` to be an absolute http(s) URL string, got ${describe(value)}`);
  }
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:")) {
    throw new TypeError(`Expected \`${name}\` to be an absolute http(s) URL, got ${JSON.stringify(value)}`);
  }
  if (url.username !== "" || url.password !== "") {
    // fetch refuses such URLs; credentials belong in the target's `headers`. Not echoed: a secret.
    throw new TypeError(`Expected \`${name}\` to be an absolute http(s) URL without user name or password, got one with credentials for ${url.host}`);
  }
  return { origin: url.origin, path: url.pathname.replace(/\/+$/, "") };
}

/** A header name: an RFC 9110 token. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Characters a header value may not hold: CR, LF and NUL split or end a header on the wire. */
const FORBIDDEN_IN_VALUE = /[\r\n\0]/;

/** Checks the OpenAI fields of a target list (`baseURL`, `headers`); the router checks the rest. */
export function validateOpenAITargets(targets: unknown): void {
  checkTargetFields<OpenAITarget>(targets, ({ baseURL, headers }, i) => {
    parseBase(`targets[${i}].baseURL`, baseURL);
    if (headers === undefined) return;
    if (headers === null || typeof headers !== "object" || Array.isArray(headers)) {
      throw new TypeError(`Expected \`targets[${i}].headers\` to be an object of strings, got ${describe(headers)}`);
    }
    for (const [name, value] of Object.entries(headers)) {
      const field = `targets[${i}].headers[${JSON.stringify(name)}]`;
      if (!TOKEN.test(name)) throw new TypeError(`Expected \`${field}\` to have a header name (an RFC 9110 token), got ${JSON.stringify(name)}`);
      if (typeof value !== "string") throw new TypeError(`Expected \`${field}\` to be a string, got ${describe(value)}`);
      const bad = value.search(FORBIDDEN_IN_VALUE);
      if (bad !== -1) {
        // The value is not echoed: it is often a secret (an Authorization header).
        throw new TypeError(`Expected \`${field}\` to be a header value without CR, LF or NUL, got one at position ${bad}`);
      }
    }
  });
}

/**
 * The request's path and query relative to the client's base URL; `undefined` when the request
 * is not under it (it is then sent unrouted). Without a client base, every http(s) request is
 * routed; a request URL of any other scheme is refused.
 */
export function relativeTo(base: Base | undefined, url: URL): Relative | undefined {
  if (base === undefined) {
    if (url.protocol !== "http:" && url.protocol !== "https:") throw crossOrigin(url.href, undefined);
    return { path: url.pathname, search: url.search, stripTargetPath: true };
  }
  if (url.origin !== base.origin) return undefined;
  if (base.path !== "" && url.pathname !== base.path && !url.pathname.startsWith(`${base.path}/`)) return undefined;
  return { path: url.pathname.slice(base.path.length), search: url.search, stripTargetPath: false };
}

/**
 * The URL `relative` lands on under `base`: the base's origin, the base path followed by the
 * request's path, the request's query. Throws `ERR_CROSS_ORIGIN` when the result is not under
 * the base (its origin differs, or dot segments climbed out of the base path).
 */
export function joinTarget(base: Base, relative: Relative, targetId: string): string {
  let path = relative.path;
  if (relative.stripTargetPath && base.path !== "" && (path === base.path || path.startsWith(`${base.path}/`))) {
    path = path.slice(base.path.length);
  }
  if (path !== "" && !path.startsWith("/")) throw crossOrigin(path, targetId);
  const url = new URL(base.origin);
  url.pathname = base.path + path;
  url.search = relative.search;
  if (!isUnder(url, base)) throw crossOrigin(url.href, targetId);
  return url.href;
}

/** True when `url` is on `base`'s origin, at or below its path. */
export function isUnder(url: URL, base: Base): boolean {
  if (url.origin !== base.origin || url.username !== "" || url.password !== "") return false;
  return base.path === "" || url.pathname === base.path || url.pathname.startsWith(`${base.path}/`);
}

function crossOrigin(what: string, targetId: string | undefined): RouterError {
  return new RouterError(
    "ERR_CROSS_ORIGIN",
    targetId === undefined
      ? `Refused to route ${JSON.stringify(what)}: only http(s) request URLs are routed`
      : `Refused to send to ${JSON.stringify(what)}: it is not under the base URL of target ${JSON.stringify(targetId)}`,
  );
}
