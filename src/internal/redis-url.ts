/**
 * A Redis URL option, checked at configuration: `redis://` or `rediss://`, and a URL Node can
 * parse (a port from 0 to 65535, closed brackets around an IPv6 host). A bad one is a RangeError
 * naming the option, with the URL's user name and password replaced by `***`, and no `cause`:
 * Node's own `TypeError: Invalid URL` keeps the whole input, password included, in `input`.
 */
import { redactURL } from "./redact.js";

/** `url` when it is a usable Redis URL for option `name`; a RangeError otherwise (see the file header). */
export function checkRedisURL(name: string, url: string): string {
  let ok = /^rediss?:\/\//i.test(url);
  if (ok) {
    try {
      const parsed = new URL(url);
      ok = parsed.hostname !== "";
    } catch {
      ok = false;
    }
  }
  if (!ok) throw new RangeError(`Expected \`${name}\` to be a redis:// or rediss:// URL, got ${JSON.stringify(redactURL(url))}`);
  return url;
}
