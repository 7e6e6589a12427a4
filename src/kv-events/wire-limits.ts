/**
 * The KV-event decoder's bounds ({@link KvWireLimits}) and the msgpack walk that enforces the
 * structural ones before anything is built: nesting depth, number of arrays and maps, declared
 * lengths against the bytes left (see `wire.ts` for the format).
 */
import { RouterError } from "../errors.js";
import { checkInteger } from "../internal/validate.js";

/** Bounds the decoder enforces; see {@link DEFAULT_KV_WIRE_LIMITS}. */
export interface KvWireLimits {
  /** Largest payload frame read, in bytes (one scheduler step's events rarely reach a few hundred KiB). @default 4 MiB */
  readonly maxPayloadBytes: number;
  /** Largest topic frame, in bytes. @default 4096 */
  readonly maxTopicBytes: number;
  /** Most events in one batch. @default 65,536 */
  readonly maxEventsPerBatch: number;
  /** Most block hashes in one event. @default 65,536 */
  readonly maxBlocksPerEvent: number;
  /** Most token ids in one event. @default 1,048,576 */
  readonly maxTokensPerEvent: number;
  /** Largest block size, in tokens. @default 65,536 */
  readonly maxBlockSize: number;
  /** Deepest nesting of arrays and maps in a payload (vLLM's is 5 or 6 deep). @default 16 */
  readonly maxDepth: number;
  /** Most arrays and maps in a payload: what a one-byte `[]` costs once decoded is ~50 bytes. @default 262,144 */
  readonly maxContainers: number;
}

/** The decoder's default bounds: far above what vLLM and SGLang send, far below what hurts. */
export const DEFAULT_KV_WIRE_LIMITS: KvWireLimits = Object.freeze({
  maxPayloadBytes: 4 * 1024 * 1024,
  maxTopicBytes: 4096,
  maxEventsPerBatch: 65_536,
  maxBlocksPerEvent: 65_536,
  maxTokensPerEvent: 1_048_576,
  maxBlockSize: 65_536,
  maxDepth: 16,
  maxContainers: 262_144,
});

/** Throws the decoder's one error, `RouterError("ERR_KV_EVENT_DECODE")`. */
export function fail(message: string, cause?: unknown): never {
  throw new RouterError("ERR_KV_EVENT_DECODE", `KV event: ${message}`, cause === undefined ? undefined : { cause });
}

/** The limits over the defaults, checked. */
export function checkLimits(limits: Partial<KvWireLimits> | undefined): KvWireLimits {
  const l = { ...DEFAULT_KV_WIRE_LIMITS, ...limits };
  checkInteger("limits.maxPayloadBytes", l.maxPayloadBytes, 1, 1 << 30);
  checkInteger("limits.maxTopicBytes", l.maxTopicBytes, 0, 1 << 20);
  checkInteger("limits.maxEventsPerBatch", l.maxEventsPerBatch, 1, 1 << 24);
  checkInteger("limits.maxBlocksPerEvent", l.maxBlocksPerEvent, 1, 1 << 24);
  checkInteger("limits.maxTokensPerEvent", l.maxTokensPerEvent, 1, 1 << 28);
  checkInteger("limits.maxBlockSize", l.maxBlockSize, 1, 1 << 24);
  checkInteger("limits.maxDepth", l.maxDepth, 2, 1024);
  checkInteger("limits.maxContainers", l.maxContainers, 2, 1 << 26);
  return Object.freeze(l);
}

// Bytes after the type byte of msgpack's fixed-size formats 0xc0..0xdf (−1: not fixed-size).
const FIXED = new Int8Array(32).fill(-1);
for (const [t, n] of [[0xc0, 0], [0xc2, 0], [0xc3, 0], [0xca, 4], [0xcb, 8], [0xcc, 1], [0xcd, 2], [0xce, 4], [0xcf, 8], [0xd0, 1], [0xd1, 2], [0xd2, 4], [0xd3, 8], [0xd4, 2], [0xd5, 3], [0xd6, 5], [0xd7, 9], [0xd8, 17]] as const) {
  FIXED[t - 0xc0] = n;
}

/**
 * Walks a msgpack value without building it: refuses nesting deeper than `stack.length − 1`, more
 * than `maxContainers` arrays and maps, a length longer than the bytes left, a truncated value and
 * trailing bytes. Decoding then allocates at most in proportion to what real batches hold.
 * O(payload bytes); `stack` is the caller's scratch space (items left per nesting level).
 */
export function scanShape(b: Uint8Array, stack: Float64Array, maxContainers: number): void {
  const maxDepth = stack.length - 1;
  const end = b.byteLength;
  let depth = 0;
  let pos = 0;
  let containers = 0;
  stack[0] = 1;
  while (depth >= 0) {
    if (stack[depth] === 0) {
      depth--;
      continue;
    }
    stack[depth]!--;
    if (pos >= end) fail("the payload is truncated");
    const t = b[pos++]!;
    if (t <= 0x7f || t >= 0xe0) continue;
    let items: number;
    if (t <= 0x8f) items = (t & 0x0f) * 2;
    else if (t <= 0x9f) items = t & 0x0f;
    else if (t <= 0xbf) {
      pos += t & 0x1f;
      continue;
    } else {
      const fixed = FIXED[t - 0xc0]!;
      if (fixed >= 0) {
        pos += fixed;
        continue;
      }
      // Variable lengths: bin, str and ext (8/16/32-bit length), then arrays and maps.
      if (t === 0xc4 || t === 0xd9) {
        pos += 1 + (b[pos] ?? 0);
        continue;
      }
      if (t === 0xc5 || t === 0xda || t === 0xc6 || t === 0xdb || t === 0xc7 || t === 0xc8 || t === 0xc9) {
        const w = t === 0xc5 || t === 0xda || t === 0xc8 ? 2 : t === 0xc7 ? 1 : 4;
        if (pos + w > end) fail("the payload is truncated");
        let n = 0;
        for (let i = 0; i < w; i++) n = n * 256 + b[pos + i]!;
        pos += w + n + (t >= 0xc7 && t <= 0xc9 ? 1 : 0);
        continue;
      }
      if (t === 0xc1) fail("the payload holds the reserved msgpack byte 0xc1");
      const w = t === 0xdc || t === 0xde ? 2 : 4;
      if (pos + w > end) fail("the payload is truncated");
      let n = 0;
      for (let i = 0; i < w; i++) n = n * 256 + b[pos + i]!;
      pos += w;
      items = t === 0xde || t === 0xdf ? n * 2 : n;
    }
    if (++containers > maxContainers) fail(`the payload holds more than ${maxContainers} arrays and maps`);
    if (items > end - pos) fail(`the payload declares ${items} items with ${end - pos} bytes left`);
    if (items === 0) continue;
    if (depth === maxDepth) fail(`the payload nests deeper than ${maxDepth}`);
    stack[++depth] = items;
  }
  if (pos > end) fail("the payload is truncated");
  if (pos !== end) fail(`the payload has ${end - pos} bytes after its value`);
}
