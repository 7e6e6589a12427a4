/**
 * KV-event decoding: one decoded msgpack event (a msgspec tagged array or a map with `type`) →
 * a {@link KvEvent}, within the decoder's {@link KvWireLimits} (see `wire.ts` for the format).
 */
import { describe } from "../internal/validate.js";
import type { BlockRemoved, BlockStored, EngineBlockHash, KvEvent } from "./events.js";
import { type KvWireLimits, fail } from "./wire-limits.js";

/**
 * Normalises one wire block hash to its low 64 bits, unsigned: a non-negative or negative
 * integer (number or bigint) modulo 2^64; a byte string's last 8 bytes, big-endian (the whole
 * string when shorter), as vLLM's `maybe_convert_block_hash` reads a digest.
 * @throws RouterError `ERR_KV_EVENT_DECODE` for anything else (a float, a string, null…)
 */
export function normalizeBlockHash(value: unknown): EngineBlockHash {
  if (typeof value === "bigint") return BigInt.asUintN(64, value);
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) fail(`a block hash is ${describe(value)}, not an integer`);
    return BigInt.asUintN(64, BigInt(value));
  }
  if (value instanceof Uint8Array) {
    if (value.byteLength === 0) fail("a block hash is an empty byte string");
    let h = 0n;
    for (let i = Math.max(0, value.byteLength - 8); i < value.byteLength; i++) h = (h << 8n) | BigInt(value[i]!);
    return h;
  }
  return fail(`a block hash is ${describe(value)}, not an integer or a byte string`);
}

const own = Object.prototype.hasOwnProperty;
export function field(map: Record<string, unknown>, key: string): unknown {
  return own.call(map, key) ? map[key] : undefined;
}
export function isMap(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}
function optString(v: unknown, name: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") fail(`\`${name}\` is ${describe(v)}, not a string`);
  return v;
}
export function optInt(v: unknown, name: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === "bigint") v = Number(v);
  if (typeof v !== "number" || !Number.isSafeInteger(v)) fail(`\`${name}\` is ${describe(v)}, not an integer`);
  return v as number;
}

/** A `BlockStored` event's fields as they came, either shape (filled in place for each event). */
interface StoredFields {
  hashes: unknown;
  parent: unknown;
  tokens: unknown;
  blockSize: unknown;
  loraId: unknown;
  medium: unknown;
  loraName: unknown;
  extraKeys: unknown;
  groupIdx: unknown;
}

/** Decodes events within `limits`; holds one scratch record, so one reader per decoder (not re-entrant). */
export class WireEvents {
  private readonly raw: StoredFields = { hashes: undefined, parent: undefined, tokens: undefined, blockSize: undefined, loraId: undefined, medium: undefined, loraName: undefined, extraKeys: undefined, groupIdx: undefined };

  constructor(private readonly limits: KvWireLimits) {}

  /** One event, or `undefined` when it is skipped. */
  event(e: unknown): KvEvent | undefined {
    if (Array.isArray(e)) {
      const tag = e[0];
      if (typeof tag !== "string") fail(`an event array starts with ${describe(tag)}, not its type name`);
      if (tag === "BlockStored") {
        // msgspec array_like: fields in declaration order. SGLang puts a metadata map at 7.
        const loraName = typeof e[7] === "string" ? e[7] : undefined;
        const extraKeys = Array.isArray(e[8]) ? e[8] : undefined;
        const groupIdx = typeof e[9] === "number" || typeof e[9] === "bigint" ? e[9] : undefined;
        const r = this.raw;
        r.hashes = e[1];
        r.parent = e[2];
        r.tokens = e[3];
        r.blockSize = e[4];
        r.loraId = e[5];
        r.medium = e[6];
        r.loraName = loraName;
        r.extraKeys = extraKeys;
        r.groupIdx = groupIdx;
        return this.stored(r);
      }
      if (tag === "BlockRemoved") return this.removed(e[1], e[2], e[3]);
      if (tag === "AllBlocksCleared") return { type: "AllBlocksCleared" };
      return undefined;
    }
    if (isMap(e)) {
      const tag = field(e, "type");
      if (typeof tag !== "string") fail(`an event map's \`type\` is ${describe(tag)}, not its type name`);
      if (tag === "BlockStored") {
        const r = this.raw;
        r.hashes = field(e, "block_hashes");
        r.parent = field(e, "parent_block_hash");
        r.tokens = field(e, "token_ids");
        r.blockSize = field(e, "block_size");
        r.loraId = field(e, "lora_id");
        r.medium = field(e, "medium");
        r.loraName = field(e, "lora_name");
        r.extraKeys = field(e, "extra_keys");
        r.groupIdx = field(e, "group_idx");
        return this.stored(r);
      }
      if (tag === "BlockRemoved") return this.removed(field(e, "block_hashes"), field(e, "medium"), field(e, "group_idx"));
      if (tag === "AllBlocksCleared") return { type: "AllBlocksCleared" };
      return undefined;
    }
    return fail(`an event is ${describe(e)}, not an array or a map`);
  }

  private hashes(v: unknown): EngineBlockHash[] {
    if (!Array.isArray(v)) fail(`\`block_hashes\` is ${describe(v)}, not an array`);
    if (v.length > this.limits.maxBlocksPerEvent) fail(`an event has ${v.length} block hashes, over ${this.limits.maxBlocksPerEvent}`);
    const out = new Array<EngineBlockHash>(v.length);
    for (let i = 0; i < v.length; i++) out[i] = normalizeBlockHash(v[i]);
    return out;
  }

  private stored(raw: StoredFields): BlockStored | undefined {
    const { hashes: hashesRaw, parent: parentRaw, tokens: tokensRaw, blockSize: blockSizeRaw, loraId: loraIdRaw, medium: mediumRaw, loraName: loraNameRaw, extraKeys: extraKeysRaw, groupIdx: groupIdxRaw } = raw;
    const blockHashes = this.hashes(hashesRaw);
    const parentBlockHash = parentRaw === undefined || parentRaw === null ? undefined : normalizeBlockHash(parentRaw);
    if (!Array.isArray(tokensRaw)) fail(`\`token_ids\` is ${describe(tokensRaw)}, not an array`);
    if (tokensRaw.length > this.limits.maxTokensPerEvent) fail(`an event has ${tokensRaw.length} token ids, over ${this.limits.maxTokensPerEvent}`);
    for (let i = 0; i < tokensRaw.length; i++) {
      const t = tokensRaw[i];
      // Integers from msgpack arrive as numbers up to 2^32 (uint64 formats as bigint, refused).
      if (typeof t !== "number" || !Number.isInteger(t) || t < 0 || t > 0xffffffff) {
        fail(`token id ${describe(t)} is not an integer from 0 to 2^32 − 1`);
      }
    }
    const blockSize = optInt(blockSizeRaw, "block_size");
    if (blockSize === undefined || blockSize < 0 || blockSize > this.limits.maxBlockSize) {
      fail(`\`block_size\` is ${describe(blockSizeRaw)}, not an integer from 0 to ${this.limits.maxBlockSize}`);
    }
    const loraId = optInt(loraIdRaw, "lora_id");
    const medium = optString(mediumRaw, "medium");
    const loraName = optString(loraNameRaw, "lora_name");
    const groupIdx = optInt(groupIdxRaw, "group_idx");
    let extraKeys: readonly unknown[] | undefined;
    if (extraKeysRaw !== undefined && extraKeysRaw !== null) {
      if (!Array.isArray(extraKeysRaw)) fail(`\`extra_keys\` is ${describe(extraKeysRaw)}, not an array`);
      extraKeys = extraKeysRaw;
    }
    // Not indexable: a tier that sends no tokens, or a partial block (not blocks × block size).
    if (tokensRaw.length === 0 || blockSize === 0 || tokensRaw.length !== blockHashes.length * blockSize) return undefined;
    const event: BlockStored = {
      type: "BlockStored",
      blockHashes,
      parentBlockHash,
      tokenIds: tokensRaw as number[],
      blockSize,
      loraName,
      medium,
      loraId,
      groupIdx,
      extraKeys,
      };
    return event;
  }

  private removed(hashesRaw: unknown, mediumRaw: unknown, groupIdxRaw: unknown): BlockRemoved {
    return {
      type: "BlockRemoved",
      blockHashes: this.hashes(hashesRaw),
      medium: optString(mediumRaw, "medium"),
      groupIdx: optInt(groupIdxRaw, "group_idx"),
    };
  }
}
