/**
 * The OpenAI Responses API in the OpenAI adapter: response affinity and time to first token.
 *
 * - **Affinity.** vLLM (and SGLang) keep stored responses in the memory of the replica that
 *   produced them, so a request that refers to one — `POST /responses` with
 *   `previous_response_id`, `GET` / `DELETE /responses/{id}`, `…/{id}/input_items`,
 *   `…/{id}/cancel` — succeeds only there. The adapter remembers which target served each
 *   response id it saw (from the JSON body's top-level `id`, or the stream's `response.created`
 *   event), in an LRU of {@link ResponseAffinityOptions.maxEntries} ids, and routes such a request
 *   to that target (`kind: "affinity"`, one attempt). When that target has left the target set
 *   the request fails with `ERR_TARGET_GONE` rather than reach a replica that cannot know the
 *   response; an id the adapter never saw (another process created it, or it was evicted) is
 *   routed like any request. With a shared store (`responseAffinity.store`, response-store.ts),
 *   every process writes the ids it sees there, and an id this process never saw is looked up
 *   there before the request is routed.
 * - **TTFT.** A Responses stream sends `response.created` and `response.in_progress` as soon as
 *   the request is accepted, before prefill; the first token is the first event after them. The
 *   lease's first byte waits for it.
 *
 * Cost: a JSON body is scanned until its top-level `id` (the first key on vLLM and OpenAI), a
 * stream's events are those the usage scanner parses anyway; memory: one LRU entry per response
 * (the id and the target id). An id is taken only when it is 1 to {@link MAX_RESPONSE_ID_CHARS}
 * characters ({@link responseIdOf}, one rule for JSON bodies and streams): a server cannot make
 * the adapter keep ids of any size.
 */
import { LRUCache } from "lru-cache";
import { JsonUsageScanner, SseUsageScanner, type UsageScanner } from "../adapter/usage.js";
import type { SseEvent } from "../adapter/sse.js";
import { checkInteger, checkKnownKeys, describe, keysOf } from "../internal/validate.js";
import type { Clock, ReleaseInfo } from "../types.js";
import type { ResponseAffinityStats } from "./stats.js";
import { type RedisResponseStore, type ResponseStoreConfig, type ResponseStoreOptions, openResponseStore, resolveResponseStore } from "./response-store.js";

/** Options of response affinity ({@link RoutedFetchOptions.responseAffinity}). */
export interface ResponseAffinityOptions {
  /**
   * Response ids remembered (with the target that served each), least recently used forgotten
   * first; from 1 to 10,000,000. About 150 bytes each.
   * @default 100000
   */
  maxEntries?: number;
  /**
   * A store every application process shares (`{ source: "redis", url, … }`, or `"redis"` for
   * its defaults): each process writes which target served each response it saw, and a
   * follow-up whose id this process does not know is looked up there (docs/openai.md). Needs the
   * optional package `ioredis`.
   * @default undefined (this process's memory only)
   */
  store?: ResponseStoreOptions | "redis";
}

/** Default {@link ResponseAffinityOptions}: no shared store. */
export const DEFAULT_RESPONSE_AFFINITY: Readonly<{ maxEntries: number }> = Object.freeze({ maxEntries: 100_000 });

/** Longest response id remembered; a longer string is no response id (vLLM's and OpenAI's are under 100 characters). */
export const MAX_RESPONSE_ID_CHARS = 512;

/** `value` when it can be a response id to remember: a string of 1 to {@link MAX_RESPONSE_ID_CHARS} characters. */
export function responseIdOf(value: unknown): string | undefined {
  return typeof value === "string" && value.length > 0 && value.length <= MAX_RESPONSE_ID_CHARS ? value : undefined;
}

/** Which target served which response id: this process's map, and the shared store when there is one. */
export class ResponseAffinity {
  private readonly targets: LRUCache<string, string>;
  private localHits = 0;
  private localMisses = 0;

  constructor(
    options: { maxEntries: number },
    private readonly store?: RedisResponseStore,
  ) {
    this.targets = new LRUCache({ max: options.maxEntries });
  }

  /** The target that served response `id`, if this process saw it (or read it from the store). */
  targetOf(id: string): string | undefined {
    const target = this.targets.get(id);
    if (target !== undefined) this.localHits++;
    else this.localMisses++;
    return target;
  }

  /**
   * After {@link targetOf} found nothing: the shared store's answer, when there is a store and it
   * answers in time with one of `isTarget`'s ids (kept in the map too); `undefined` otherwise.
   * Never rejects.
   */
  async fromStore(id: string, isTarget: (targetId: string) => boolean): Promise<string | undefined> {
    if (this.store === undefined || responseIdOf(id) === undefined) return undefined;
    const target = await this.store.get(id, isTarget);
    if (target !== undefined) this.targets.set(id, target);
    return target;
  }

  /** Whether a local miss is worth a {@link fromStore}. */
  get shared(): boolean {
    return this.store !== undefined;
  }

  /** Remembers that `targetId` served response `id` (here, and in the store); an id {@link responseIdOf} refuses is not kept. */
  remember(id: string, targetId: string): void {
    if (responseIdOf(id) === undefined) return;
    this.targets.set(id, targetId);
    this.store?.put(id, targetId);
  }

  /**
   * {@link remember}, and with a store a promise that settles once the store acknowledged the
   * write, or at most `timeoutMs` later (never rejects); `undefined` without a store.
   */
  rememberAndWait(id: string, targetId: string): Promise<void> | undefined {
    if (responseIdOf(id) === undefined) return undefined;
    this.targets.set(id, targetId);
    return this.store?.putAndWait(id, targetId);
  }

  stats(): ResponseAffinityStats {
    const stats: ResponseAffinityStats = { entries: this.targets.size, localHits: this.localHits, localMisses: this.localMisses };
    if (this.store !== undefined) stats.store = this.store.stats();
    return stats;
  }

  /** Closes the store's connection (pending writes sent first). Idempotent. */
  close(): Promise<void> {
    return this.store?.close() ?? Promise.resolve();
  }
}

/** @internal Validated `responseAffinity`. */
export interface ResponseAffinityConfig {
  maxEntries: number;
  store: ResponseStoreConfig | undefined;
}

/** @internal Every key of {@link ResponseAffinityOptions}. */
export const RESPONSE_AFFINITY_OPTION_KEYS = keysOf<ResponseAffinityOptions>()(["maxEntries", "store"]);

/** Validates the `responseAffinity` option: `undefined` when it is off. */
export function responseAffinityOf(value: unknown): ResponseAffinityConfig | undefined {
  if (value === false) return undefined;
  if (value === undefined) return { maxEntries: DEFAULT_RESPONSE_AFFINITY.maxEntries, store: undefined };
  if (value === null || typeof value !== "object") {
    throw new TypeError(`Expected \`responseAffinity\` to be an object or false, got ${describe(value)}`);
  }
  checkKnownKeys("responseAffinity", value, RESPONSE_AFFINITY_OPTION_KEYS);
  const { maxEntries, store } = value as ResponseAffinityOptions;
  return {
    maxEntries: checkInteger("responseAffinity.maxEntries", maxEntries ?? DEFAULT_RESPONSE_AFFINITY.maxEntries, 1, 10_000_000),
    store: store === undefined ? undefined : resolveResponseStore(store),
  };
}

/** @internal The response affinity of a validated option, its store opened (`ERR_MISSING_PEER` without `ioredis`). */
export async function createResponseAffinity(config: ResponseAffinityConfig, clock: Clock): Promise<ResponseAffinity> {
  return new ResponseAffinity(config, config.store === undefined ? undefined : await openResponseStore(config.store, clock));
}

/** `…/responses`, `…/responses/{id}`, `…/responses/{id}/input_items`, `…/responses/{id}/cancel`. */
const RESPONSES_PATH = /\/responses(?:\/([^/]+)(?:\/(?:input_items|cancel))?)?\/?$/;

/** What a request is to the Responses API. */
export interface ResponsesCall {
  /** `POST /responses`: it creates a response, whose id the body carries. */
  creates: boolean;
  /** The stored response it refers to (`previous_response_id`, or the id in the path). */
  refersTo: string | undefined;
}

/** The Responses API call a request makes, or `undefined` when it makes none. */
export function responsesCall(path: string, method: string | undefined, body: Record<string, unknown> | undefined): ResponsesCall | undefined {
  const match = RESPONSES_PATH.exec(path);
  if (match === null) return undefined;
  const verb = (method ?? "GET").toUpperCase();
  if (match[1] !== undefined) return { creates: false, refersTo: safeDecode(match[1]) };
  if (verb !== "POST") return undefined;
  const previous = body?.previous_response_id;
  return { creates: true, refersTo: typeof previous === "string" && previous.length > 0 ? previous : undefined };
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** What the body of a created response reports as it streams past. */
export interface ResponseBodyHooks {
  /** The response's id, once known; a promise returned holds the chunk that carried it until it settles. */
  id?(id: string): Promise<void> | void;
  /** The first token: the first event other than `response.created` / `in_progress` / `queued` or a failure. */
  firstOutput(): void;
}

/** Events of a Responses stream that are no output: those sent before prefill, and failures. */
const NOT_OUTPUT: ReadonlySet<string> = new Set(["response.created", "response.in_progress", "response.queued", "error", "response.failed"]);

/**
 * The usage scanner of a created response's body (a 2xx `POST /responses`), which also reports
 * the response id and, for a stream, its first output event. `waitsForOutput`: the lease's first
 * byte is the first output event, not the first chunk.
 */
export function responseBodyScanner(streaming: boolean, hooks: ResponseBodyHooks): { scanner: UsageScanner; waitsForOutput: boolean } {
  if (!streaming) return { scanner: new IdScanningJson(hooks.id), waitsForOutput: false };
  let sawOutput = false;
  let sawId = hooks.id === undefined;
  const onEvent = ({ event, data }: SseEvent): void => {
    const type = event ?? typeOf(data);
    if (!sawId && type === "response.created") {
      sawId = true;
      const id = idOfCreated(data);
      if (id !== undefined) hooks.id?.(id);
    }
    if (!sawOutput && type !== undefined && !NOT_OUTPUT.has(type)) {
      sawOutput = true;
      hooks.firstOutput();
    }
  };
  return { scanner: new SseUsageScanner(onEvent), waitsForOutput: true };
}

/** The `type` of an event sent without an `event:` line. */
function typeOf(data: string): string | undefined {
  const match = /^\{\s*"type"\s*:\s*"([^"]+)"/.exec(data);
  return match?.[1];
}

function idOfCreated(data: string): string | undefined {
  try {
    return responseIdOf((JSON.parse(data) as { response?: { id?: unknown } }).response?.id);
  } catch {
    return undefined;
  }
}

/** A JSON body's usage scanner that also reads the body's top-level `id`. */
class IdScanningJson implements UsageScanner {
  private readonly usage = new JsonUsageScanner();
  private readonly ids: TopLevelId | undefined;
  readonly sawError = false;
  /** A JSON body is complete only at its end. */
  readonly completed = false;

  constructor(private readonly onId: ((id: string) => Promise<void> | void) | undefined) {
    this.ids = onId === undefined ? undefined : new TopLevelId();
  }

  push(chunk: Uint8Array): void {
    this.usage.push(chunk);
    if (this.ids === undefined || this.ids.done) return;
    this.ids.push(chunk);
    if (this.ids.id !== undefined) this.onId?.(this.ids.id);
  }

  result(): ReleaseInfo | undefined {
    return this.usage.result();
  }
}

/**
 * Finds the string value of the top-level `"id"` key of a JSON object read chunk by chunk, and
 * stops there: a tokenizer that tracks only depth and strings.
 */
export class TopLevelId {
  private readonly decoder = new TextDecoder();
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** The string being read is at depth 1 (a key, or a value of the top object). */
  private topLevel = false;
  /** Its text so far; `undefined` once it cannot be an id (an escape, or too long). */
  private text: string | undefined;
  /** The last depth-1 string, until a `:` says it was a key. */
  private lastString: string | undefined;
  private valueOfId = false;
  id: string | undefined;
  done = false;

  push(chunk: Uint8Array): void {
    const s = this.decoder.decode(chunk, { stream: true });
    for (let i = 0; i < s.length && !this.done; i++) {
      const c = s.charCodeAt(i);
      if (this.inString) {
        if (this.escaped) {
          this.escaped = false;
        } else if (c === 0x5c /* \ */) {
          this.escaped = true;
          this.text = undefined;
        } else if (c === 0x22 /* " */) {
          this.inString = false;
          if (this.topLevel) this.string(this.text);
        } else if (this.text !== undefined) {
          this.text = this.text.length < MAX_RESPONSE_ID_CHARS ? this.text + s[i] : undefined;
        }
        continue;
      }
      if (c === 0x22) {
        this.inString = true;
        this.topLevel = this.depth === 1;
        this.text = "";
      } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
        this.depth++;
        this.valueOfId = false;
      } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
        if (--this.depth <= 0) this.done = true;
      } else if (this.depth === 1 && c === 0x3a /* : */) {
        this.valueOfId = this.lastString === "id";
        this.lastString = undefined;
      } else if (this.depth === 1 && c === 0x2c /* , */) {
        this.valueOfId = false;
        this.lastString = undefined;
      }
    }
  }

  /** A depth-1 string ended; `undefined` when it cannot be an id. */
  private string(value: string | undefined): void {
    if (this.valueOfId) {
      this.id = responseIdOf(value);
      this.done = true;
    } else {
      this.lastString = value;
    }
  }
}
