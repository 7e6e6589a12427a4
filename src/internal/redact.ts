/**
 * Credentials out of what the background features report: a URL's user name and password become
 * `***` in every log line, stat and error message built from a URL.
 */

/** `scheme://userinfo@`: the user name and password of a URL written in a text. */
const USERINFO = /([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^\s/?#]*@/g;

/** `text` with the user name and password of any URL in it replaced by `***`. */
export function redactText(text: string): string {
  return text.replace(USERINFO, "$1***@");
}

/** `url` with its user name and password (when it has them) replaced by `***`. */
export function redactURL(url: string | URL): string {
  let u: URL;
  try {
    u = new URL(String(url));
  } catch {
    return redactText(String(url));
  }
  if (u.username === "" && u.password === "") return u.href;
  if (u.username !== "") u.username = "***";
  if (u.password !== "") u.password = "***";
  return u.href;
}
