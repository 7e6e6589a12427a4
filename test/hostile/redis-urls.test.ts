/**
 * Malformed Redis URLs in the options (`responseAffinity.store.url`, `loadView.url`): refused at
 * configuration with an error that names the option, and whose message, `util.inspect` and
 * `JSON.stringify` never print the URL's password (Node's own `Invalid URL` error keeps the whole
 * input).
 */
import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { createRouter } from "prefix-router";
import { createRoutedFetch } from "prefix-router/openai";

const SECRET = "s3cret-Pa55";
const BAD = [
  `redis://user:${SECRET}@127.0.0.1:99999`,
  `redis://user:${SECRET}@[::1`,
  `redis://:${SECRET}@[::1]:70000/0`,
  `rediss://user:${SECRET}@host:port`,
  `redis://user:${SECRET}@`,
];

async function failure(make: () => Promise<unknown>): Promise<Error> {
  try {
    await make();
  } catch (e) {
    return e as Error;
  }
  throw new Error("expected a rejection");
}

function expectRedacted(error: Error, option: string): void {
  expect(error).toBeInstanceOf(RangeError);
  expect(error.message).toContain(`\`${option}\``);
  for (const text of [error.message, inspect(error, { depth: 10 }), JSON.stringify(error), String(error.stack)]) expect(text).not.toContain(SECRET);
  expect(error.cause).toBeUndefined();
}

describe("a malformed Redis URL", () => {
  it.each(BAD)("responseAffinity.store.url %s", async (url) => {
    const error = await failure(() => createRoutedFetch({ targets: [{ id: "a", baseURL: "http://127.0.0.1:1/v1" }], responseAffinity: { store: { source: "redis", url } } }));
    expectRedacted(error, "responseAffinity.store.url");
  });

  it.each(BAD)("loadView.url %s", async (url) => {
    const error = await failure(() => createRouter({ targets: [{ id: "a" }], loadView: { source: "redis", url } }));
    expectRedacted(error, "loadView.url");
  });
});
