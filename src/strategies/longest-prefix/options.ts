/**
 * Options of the `longest-prefix` strategy (`RouterOptions.longestPrefix`), their defaults and
 * their validation.
 */
import { checkBoolean, checkInteger, checkKnownKeys, checkNumber, describe, keysOf, orDefault } from "../../internal/validate.js";
import { resolveBoundedLoad } from "../bounded-load.js";

/** Options of the `longest-prefix` strategy (`RouterOptions.longestPrefix`). */
export interface LongestPrefixOptions {
  /**
   * How much of the routing input is read: code points in text mode, bytes in bytes mode. From
   * 1,024 to 1,048,576. 65,536 characters is about 16,000 tokens — past any system prompt, tool
   * list or retrieved document; a longer shared prefix still matches its first 65,536.
   * @default 65536
   */
  maxInputLength?: number;
  /**
   * Block size: UTF-16 code units (characters) in text mode, bytes in bytes mode. From 64 to
   * 16,384. 256 characters ≈ 64 tokens = 4 of vLLM's 16-token blocks: fine enough to follow a
   * conversation turn by turn, coarse enough that a 32 KB prompt is 128 blocks.
   * @default 256
   */
  blockSize?: number;
  /**
   * Blocks remembered per target (LRU). From 1 to 16,777,216. Set it to the engine's prefix
   * cache in tokens × 4 / `blockSize`: the default, 16,384 blocks ≈ 4 M characters ≈ 1 M tokens,
   * is about one 8 × H100 vLLM instance serving a 70B model. About 52 bytes per block:
   * 16,384 blocks ≈ 0.85 MB per target.
   * @default 16384
   */
  capacityBlocks?: number;
  /**
   * Time after which an index entry no longer counts as cached, ms, read from the router's
   * clock; refreshed whenever the block is sent again. `0`: entries leave only by LRU eviction.
   * Set it when engines evict by time or restart often. From 0 to 2^31 − 1.
   * @default 0
   */
  ttlMs?: number;
  /**
   * Bounded-load factor c = 1 + ε: a target takes a request only while its recent share of
   * requests is below c times its weighted fair share. From 1 to 100, or `Infinity` to disable.
   * @default 1.25
   */
  loadFactor?: number;
  /**
   * Horizon of the recent share, in picks: counts decay by 1 − 1/`loadWindow` per pick. Longer
   * tolerates longer bursts on one target (keeps conversations in place); shorter reacts sooner.
   * From 1 to 1,000,000.
   * @default 4096
   */
  loadWindow?: number;
  /**
   * Whether this router is the only one sending requests to its targets. Either way, a request the
   * index knows little of goes to the first of the targets its ranking puts first that is open and
   * within the bounded load — candidates every process computes the same, from the request alone —
   * and moves on to the second (or the third) when the first has a multiple of the queued prefill
   * that one would have: 4× by default, where each process sees only its own share of the queues;
   * 2× with `true`, where this router sees them all. Safe with several processes either way
   * (sample trace, hit rate with one process → four: 53.7% → 53.0% by default, 53.6% → 52.9%
   * with `true`; the rule `true` used to select, which placed new documents by this process's
   * own shares and queues, went 54.3% → 35.6%).
   * See docs/longest-prefix.md, "Several router processes".
   * @default false
   */
  exclusive?: boolean;
}

/** Defaults of {@link LongestPrefixOptions}. */
export const DEFAULT_LONGEST_PREFIX: Readonly<Required<LongestPrefixOptions>> = Object.freeze({
  maxInputLength: 65_536,
  blockSize: 256,
  capacityBlocks: 16_384,
  ttlMs: 0,
  loadFactor: 1.25,
  loadWindow: 4096,
  exclusive: false,
});

/** @internal Validated options. */
export type LongestPrefixConfig = Readonly<Required<LongestPrefixOptions>>;

/** @internal Every key of {@link LongestPrefixOptions}. */
export const LONGEST_PREFIX_OPTION_KEYS = keysOf<LongestPrefixOptions>()([
  "maxInputLength", "blockSize", "capacityBlocks", "ttlMs", "loadFactor", "loadWindow", "exclusive",
]);

/** @internal Validates `RouterOptions.longestPrefix`, naming the option, its range and the value. */
export function resolveLongestPrefixOptions(options: unknown): LongestPrefixConfig {
  if (options === undefined) return DEFAULT_LONGEST_PREFIX;
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new TypeError(`Expected \`longestPrefix\` to be an object, got ${describe(options)}`);
  }
  checkKnownKeys("longestPrefix", options, LONGEST_PREFIX_OPTION_KEYS);
  const o = options as LongestPrefixOptions;
  const d = DEFAULT_LONGEST_PREFIX;
  const { loadFactor, loadWindow } = resolveBoundedLoad("longestPrefix", o);
  return Object.freeze({
    maxInputLength: checkInteger("longestPrefix.maxInputLength", orDefault(o.maxInputLength, d.maxInputLength), 1024, 1_048_576),
    blockSize: checkInteger("longestPrefix.blockSize", orDefault(o.blockSize, d.blockSize), 64, 16_384),
    capacityBlocks: checkInteger("longestPrefix.capacityBlocks", orDefault(o.capacityBlocks, d.capacityBlocks), 1, 16_777_216),
    ttlMs: checkNumber("longestPrefix.ttlMs", orDefault(o.ttlMs, d.ttlMs), 0, 2_147_483_647),
    loadFactor,
    loadWindow,
    exclusive: checkBoolean("longestPrefix.exclusive", orDefault(o.exclusive, d.exclusive)),
  });
}
