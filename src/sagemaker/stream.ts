/**
 * The response stream of `InvokeEndpointWithResponseStream`, wrapped so that the lease is held
 * exactly as long as the stream is (the shared {@link LeasedBody}): released once when the
 * stream ends ("success", with the usage the payload reported), fails (judged like any failure;
 * never retried, output may have begun), the consumer stops iterating (`break`, `return()`,
 * `throw()`: "cancelled"), or the stream is dropped unread and garbage-collected ("cancelled").
 */
import type { ResponseStream } from "@aws-sdk/client-sagemaker-runtime";
import { type LeaseRegistry, LeasedBody, type LeasedBodyHooks, iterableSource } from "../adapter/leased-body.js";
import { StreamUsageScanner } from "../adapter/usage.js";
import type { Lease } from "../types.js";
import { judgeSageMakerError } from "./errors.js";

/** An event stream that releases its lease when it ends, fails or is abandoned. */
export class LeasedEventStream implements AsyncIterableIterator<ResponseStream> {
  private readonly body: LeasedBody<ResponseStream>;

  constructor(source: AsyncIterable<ResponseStream>, lease: Lease, registry: LeaseRegistry) {
    this.body = new LeasedBody(lease, iterableSource(source), eventHooks(lease), registry);
    this.body.attach(this);
  }

  /** One pass, like the SDK's own stream: every call returns this iterator. */
  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<ResponseStream, undefined>> {
    return this.body.read();
  }

  /** The consumer stopped early (`break` in `for await`): release first, then close the source. */
  async return(): Promise<IteratorResult<ResponseStream, undefined>> {
    await this.body.cancel();
    return { done: true, value: undefined };
  }

  /** The consumer threw into the stream: release, close the source, rethrow. */
  async throw(error?: unknown): Promise<IteratorResult<ResponseStream, undefined>> {
    await this.body.cancel();
    throw error;
  }
}

/**
 * What the stream's events mean for the lease. Outside the class, so that nothing the lease's
 * finalizer holds refers to the stream it watches.
 */
function eventHooks(lease: Lease): LeasedBodyHooks<ResponseStream> {
  const usage = new StreamUsageScanner();
  return {
    chunk(event) {
      if (event.PayloadPart === undefined) return;
      lease.firstByte();
      if (event.PayloadPart.Bytes !== undefined) usage.push(event.PayloadPart.Bytes);
    },
    end: () => ({ outcome: "success", info: usage.result() }),
    failed: (error) => judgeSageMakerError(error).outcome,
    completed: () => usage.completed,
  };
}
