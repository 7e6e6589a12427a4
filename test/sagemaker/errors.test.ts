/** How the SageMaker adapter judges a failed call or a failing response stream. */
import { describe, expect, it } from "vitest";
import { judgeSageMakerError } from "../../src/sagemaker/errors.js";

describe("judgeSageMakerError", () => {
  const sdkError = (name: string, fault: "client" | "server", status: number, extra: object = {}) =>
    Object.assign(new Error(name), { name, $fault: fault, $metadata: { httpStatusCode: status } }, extra);
  const netError = (code: string, extra: object = {}) => Object.assign(new Error(code), { code }, extra);

  it.each([
    ["ServiceUnavailable", sdkError("ServiceUnavailable", "server", 503), { retry: true, outcome: "server-error" }],
    ["ModelNotReadyException", sdkError("ModelNotReadyException", "client", 429), { retry: true, outcome: "server-error" }],
    ["ECONNREFUSED", netError("ECONNREFUSED"), { retry: true, outcome: "connect-error" }],
    ["ECONNRESET before any response (the request may have been written)", netError("ECONNRESET"), { retry: false, outcome: "connect-error" }],
    ["EPIPE", netError("EPIPE"), { retry: false, outcome: "connect-error" }],
    ["ETIMEDOUT from connect()", Object.assign(netError("ETIMEDOUT"), { syscall: "connect" }), { retry: true, outcome: "connect-error" }],
    ["ETIMEDOUT on an open socket", Object.assign(netError("ETIMEDOUT"), { syscall: "read" }), { retry: false, outcome: "connect-error" }],
    ["ENOTFOUND (DNS)", netError("ENOTFOUND"), { retry: true, outcome: "connect-error" }],
    ["EHOSTUNREACH", netError("EHOSTUNREACH"), { retry: true, outcome: "connect-error" }],
    ["ECONNREFUSED inside an AggregateError", new AggregateError([netError("ECONNREFUSED")]), { retry: true, outcome: "connect-error" }],
    ["the SDK's TimeoutError for a reset socket", Object.assign(netError("ECONNRESET"), { name: "TimeoutError" }), { retry: false, outcome: "connect-error" }],
    ["ECONNRESET after the response began", netError("ECONNRESET", { $response: { statusCode: 200 } }), { retry: false, outcome: "connect-error" }],
    ["a request timeout", Object.assign(new Error("t"), { name: "TimeoutError" }), { retry: false, outcome: "server-error" }],
    ["InternalFailure", sdkError("InternalFailure", "server", 500), { retry: false, outcome: "server-error" }],
    ["ModelError for a container 500", sdkError("ModelError", "client", 424, { OriginalStatusCode: 500 }), { retry: false, outcome: "server-error" }],
    ["ModelError for a container 400", sdkError("ModelError", "client", 424, { OriginalStatusCode: 400 }), { retry: false, outcome: "client-error" }],
    ["ValidationError", sdkError("ValidationError", "client", 400), { retry: false, outcome: "client-error" }],
    ["ModelStreamError", sdkError("ModelStreamError", "client", 200), { retry: false, outcome: "server-error" }],
    ["InternalStreamFailure", sdkError("InternalStreamFailure", "server", 200), { retry: false, outcome: "server-error" }],
    ["an abort", Object.assign(new Error("a"), { name: "AbortError" }), { retry: false, outcome: "cancelled" }],
    ["a local error (no credentials)", Object.assign(new Error("c"), { name: "CredentialsProviderError" }), { retry: false, outcome: "cancelled" }],
    ["a thrown string", "boom", { retry: false, outcome: "cancelled" }],
  ])("%s", (_name, error, verdict) => {
    expect(judgeSageMakerError(error)).toEqual(verdict);
  });
});
