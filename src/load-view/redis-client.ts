/**
 * The optional `ioredis` client as the `redis` load view (and the OpenAI adapter's response store)
 * use it: loaded on demand, and set to fail fast so that the caller decides when to reconnect.
 */
import { importPeer } from "../internal/optional-peer.js";

/** What this view uses of an ioredis client. */
export interface RedisLike {
  status: string;
  connect(): Promise<void>;
  defineCommand(name: string, definition: { numberOfKeys: number; lua: string }): void;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  quit(): Promise<unknown>;
  disconnect(): void;
  stream?: { unref?(): void };
}

/** The ioredis client constructor. */
export type RedisConstructor = new (url: string, options: Record<string, unknown>) => RedisLike;

/** @internal Loads the optional client; `what` needs it (for the missing-package message). */
export async function loadRedisClient(what = 'loadView "redis"'): Promise<RedisConstructor> {
  const mod = await importPeer("ioredis", what, () => import("ioredis"));
  return ((mod as { Redis?: unknown }).Redis ?? (mod as { default?: unknown }).default) as RedisConstructor;
}

/**
 * @internal ioredis options for a client that never queues or retries on its own: a command fails when the
 * connection is down or after `timeoutMs`, and the caller decides when to reconnect.
 */
export function failFastOptions(timeoutMs: number): Record<string, unknown> {
  return {
    lazyConnect: true,
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
  };
}
