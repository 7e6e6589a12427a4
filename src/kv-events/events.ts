/**
 * The vocabulary of engine KV-cache events, as the feed hands them to the index.
 *
 * vLLM (`vllm/distributed/kv_events.py`) and SGLang (a copy of vLLM's publisher) publish, over a
 * ZeroMQ PUB socket, frames `[topic, seq, payload]` whose payload is a msgpack `EventBatch`. The
 * wire decoder (`wire.ts`) accepts every encoding those engines have shipped (batches and events
 * as arrays tagged by name, or as maps with `type`) and normalises them into these shapes; the
 * index (`index.ts`) never sees the wire.
 *
 * Engine block hashes arrive as unsigned or signed 64-bit integers, or as byte strings (sha256
 * digests): they are normalised to their low 64 bits as an unsigned `bigint`. They identify a
 * block inside one engine only; the index hashes `tokenIds` with its own function and keeps the
 * engine's hashes to resolve removals and parents.
 */

/** An engine's block hash, normalised to its low 64 bits, unsigned. */
export type EngineBlockHash = bigint;

/** Blocks the engine computed and now holds (one chain: each block's parent is the previous one). */
export interface BlockStored {
  readonly type: "BlockStored";
  /** The stored blocks' hashes, in chain order. */
  readonly blockHashes: readonly EngineBlockHash[];
  /** The hash of the block before the first one, or `undefined` for a chain that starts a prompt. */
  readonly parentBlockHash: EngineBlockHash | undefined;
  /** The tokens of all stored blocks, concatenated: `blockHashes.length × blockSize` of them. */
  readonly tokenIds: readonly number[];
  /** Tokens per block. */
  readonly blockSize: number;
  /** The LoRA adapter's name the blocks were computed with, if any. */
  readonly loraName: string | undefined;
  /** Where the blocks live (`"GPU"`, `"CPU"`…), if the engine says. */
  readonly medium: string | undefined;
  /** The deprecated numeric LoRA id older engines send instead of (or beside) `loraName`. */
  readonly loraId?: number | undefined;
  /**
   * The KV-cache group (hybrid models keep one per attention kind: full, sliding window, Mamba),
   * if the engine says. Blocks of different groups with the same tokens are different blocks.
   */
  readonly groupIdx?: number | undefined;
  /**
   * vLLM's per-block extra hash keys (multimodal ids, LoRA name, `cache_salt` on the first block),
   * one entry or `null` per block, as decoded from msgpack; absent when the engine sends none.
   */
  readonly extraKeys?: readonly unknown[] | undefined;
  /**
   * The request's `cache_salt` (vLLM), when known apart from `extraKeys`; otherwise the index reads
   * it from the first block's extra keys of a chain that starts a prompt: salted blocks hash apart,
   * as the engine keeps them apart.
   */
  readonly cacheSalt?: string | undefined;
}

/** Blocks the engine evicted. */
export interface BlockRemoved {
  readonly type: "BlockRemoved";
  readonly blockHashes: readonly EngineBlockHash[];
  readonly medium: string | undefined;
  /** The KV-cache group the blocks belonged to, if the engine says (see {@link BlockStored.groupIdx}). */
  readonly groupIdx?: number | undefined;
}

/** The engine dropped its whole prefix cache (a reset). */
export interface AllBlocksCleared {
  readonly type: "AllBlocksCleared";
}

export type KvEvent = BlockStored | BlockRemoved | AllBlocksCleared;

/** One published batch. */
export interface KvEventBatch {
  /** The engine's timestamp, seconds since the epoch (float). */
  readonly ts: number;
  readonly events: readonly KvEvent[];
  /** The data-parallel rank that published it, if the engine says. */
  readonly dataParallelRank: number | undefined;
}

/**
 * Where a feed delivers what it read. `engine` is the target id the feed belongs to. A feed
 * calls {@link KvEventSink.clear} when it cannot know what the engine holds any more (a
 * publisher restart, a gap the replay could not fill), before it delivers anything newer.
 */
export interface KvEventSink {
  apply(engine: string, batch: KvEventBatch): void;
  clear(engine: string): void;
}
