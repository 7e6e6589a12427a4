/**
 * The response stream of `InvokeEndpointWithResponseStream`, wrapped so that the lease is held
 * exactly as long as the stream is: released once when the stream ends ("success", with the usage
 * the payload reported), fails (judged like any failure; never retried, output may have begun) or
 * the consumer stops iterating (`break`, `return()`: "cancelled"). A stream dropped without
 * being read to the end is released ("cancelled") when it is garbage-collected, as the OpenAI
 * adapter does for response bodies.
 */
import type { ResponseStream } from "@aws-sdk/client-sagemaker-runtime";
import type { Lease } from "../types.js";
import { StreamUsageScanner } from "../adapter/usage.js";
import { judgeSageMakerError } from "./errors.js";

/** What the abandon registry holds: the lease and the source, never the wrapper itself. */
interface Held {
  lease: Lease;
  iterator: AsyncIterator<ResponseStream> | undefined;
}

/** Releases the lease of a stream dropped unread; one registry per routed client. */
export type StreamRegistry = FinalizationRegistry<Held>;

/** A registry whose finalizer ends an abandoned stream's lease as "cancelled" and closes its source. */
export function newStreamRegistry(): StreamRegistry {
  return new FinalizationRegistry<Held>((held) => {
    if (held.lease.released) return;
    held.lease.release("cancelled");
    held.iterator?.return?.().catch(() => undefined);
  });
}

/** An event stream that releases its lease when it ends, fails or is abandoned. */
export class LeasedEventStream implements AsyncIterableIterator<ResponseStream> {
  private readonly held: Held;
  private readonly usage = new StreamUsageScanner();
  private finished = false;

  constructor(
    private readonly source: AsyncIterable<ResponseStream>,
    private readonly lease: Lease,
    private readonly registry: StreamRegistry,
  ) {
    this.held = { lease, iterator: undefined };
    registry.register(this, this.held, this);
  }

  private get iterator(): AsyncIterator<ResponseStream> | undefined {
    return this.held.iterator;
  }

  private end(): void {
    this.finished = true;
    this.registry.unregister(this);
  }

  /** One pass, like the SDK's own stream: every call returns this iterator. */
  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<ResponseStream, undefined>> {
    if (this.finished) return { done: true, value: undefined };
    let result: IteratorResult<ResponseStream>;
    try {
      this.held.iterator ??= this.source[Symbol.asyncIterator]();
      result = await this.held.iterator.next();
    } catch (error) {
      this.end();
      this.lease.release(judgeSageMakerError(error).outcome);
      throw error;
    }
    if (result.done === true) {
      this.end();
      this.lease.release("success", this.usage.result());
      return { done: true, value: undefined };
    }
    const event = result.value;
    if (event.PayloadPart !== undefined) {
      this.lease.firstByte();
      if (event.PayloadPart.Bytes !== undefined) this.usage.push(event.PayloadPart.Bytes);
    }
    return { done: false, value: event };
  }

  /** The consumer stopped early (`break` in `for await`): release first, then close the source. */
  async return(): Promise<IteratorResult<ResponseStream, undefined>> {
    if (!this.finished) {
      this.end();
      this.lease.release("cancelled");
      await this.iterator?.return?.();
    }
    return { done: true, value: undefined };
  }

  /** The consumer threw into the stream: release, close the source, rethrow. */
  async throw(error?: unknown): Promise<IteratorResult<ResponseStream, undefined>> {
    if (!this.finished) {
      this.end();
      this.lease.release("cancelled");
      await this.iterator?.return?.();
    }
    throw error;
  }
}
