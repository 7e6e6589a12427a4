/**
 * A `precise-prefix` request's chain of token blocks ({@link PreciseChain}), hashed as the KV-event
 * index keys blocks, with a small cache of the chains of earlier prompts: a conversation's next
 * turn hashes only its new blocks, and finds what the last decisions learned of each engine's run.
 */
import type { BlockHasher, TokenBlocks } from "../../kv-events/block-hash.js";
import type { PromptTokens } from "../../kv-events/tokenizer.js";
import type { BlockChain } from "../longest-prefix/chain.js";
import { TokenRatio } from "../../closed-loop/closed-loop.js";

/** Entries of the chain-hash cache (three per request read: its last known segment boundaries). */
const CHAIN_CACHE_ENTRIES = 3 * 2048;

/** A request's chain of token blocks, as `longest-prefix`'s ranking reads it, with the 64-bit keys. */
export interface PreciseChain extends BlockChain, TokenBlocks {
  /** The prompt's tokens known at the decision, and whether that is all of it. */
  readonly known: number;
  readonly complete: boolean;
  /** What this chain's decisions learned of each engine's run (for the next turn), and what an earlier chain sharing its start learned. */
  readonly memo: RunMemo;
  readonly hint: { readonly memo: RunMemo; readonly blocks: number } | undefined;
}

/**
 * Engine runs seen for a chain, by engine slot, with the engine's index generation then: while
 * the generation is unchanged the engine lost no block, so the run still holds — the next turn
 * probes only past it.
 */
export interface RunMemo {
  runs: Int32Array;
  gens: Int32Array;
}

export function isPrecise(chain: BlockChain | undefined): chain is PreciseChain {
  return chain !== undefined && (chain as Partial<PreciseChain>).hashes !== undefined;
}

/** What a chain reads of the request (a `StrategyRequest`'s fields): its body's `cache_salt`, and its model (a LoRA when not the base one). */
export interface ChainRequest {
  readonly body: unknown;
  readonly model: string | undefined;
}

/** The chains of requests' known tokens, with the cache of earlier prompts' (one per strategy). */
export class TokenChains {
  /** Chain hashes by (extra keys, prompt prefix up to a segment's end). */
  private readonly chainCache = new Map<string, { hashes: Uint32Array; blocks: number; memo: RunMemo }>();

  /** `model`: the served base model (a request naming another runs on a LoRA of that name). */
  constructor(
    private readonly hasher: BlockHasher,
    private readonly blockSize: number,
    private readonly model: string | undefined,
  ) {}

  /**
   * The chain of `t`, the known tokens of `request`. Block hashes of a prefix hashed before (the
   * earlier turns of a conversation) are taken from the cache, keyed by the prompt's segments.
   */
  of(t: PromptTokens, request: ChainRequest): PreciseChain {
    const B = this.blockSize;
    const body = request.body as { cache_salt?: unknown } | undefined;
    const model = this.model;
    const lora = request.model !== undefined && model !== undefined && request.model !== model ? request.model : undefined;
    const cacheSalt = typeof body?.cache_salt === "string" ? body.cache_salt : undefined;
    const root = this.hasher.root({ model, lora, cacheSalt });
    const [rootHi, rootLo] = root;
    const n = Math.floor(t.tokens.length / B);
    const hashes = new Uint32Array(2 * n);
    const S = t.tokenEnds.length;
    const at = (k: number) => `${rootHi}.${rootLo}.${t.prefixKeys[2 * k]}.${t.prefixKeys[2 * k + 1]}`;
    let start = 0;
    let hint: PreciseChain["hint"];
    for (let k = S - 1; k >= 0 && k >= S - 8; k--) {
      const hit = this.chainCache.get(at(k));
      if (hit === undefined) continue;
      start = Math.min(hit.blocks, n);
      hashes.set(hit.hashes.subarray(0, 2 * start));
      hint = { memo: hit.memo, blocks: start };
      break;
    }
    const memo: RunMemo = { runs: new Int32Array(0), gens: new Int32Array(0) };
    this.hasher.chain(start === 0 ? root : hashes.subarray(2 * start - 2, 2 * start), t.tokens, start, n, hashes);
    for (let k = Math.max(0, S - 3); k < S; k++) {
      const key = at(k);
      this.chainCache.delete(key);
      this.chainCache.set(key, { hashes, blocks: Math.floor((t.tokenEnds[k] as number) / B), memo });
    }
    while (this.chainCache.size > CHAIN_CACHE_ENTRIES) this.chainCache.delete(this.chainCache.keys().next().value as string);
    const keys = new Int32Array(n);
    for (let i = 0; i < n; i++) keys[i] = (hashes[2 * i + 1] as number) | 0;
    const prev = n === 0 ? 0 : (keys[n - 1] as number);
    let tail = t.tailKey;
    if (t.complete) {
      tail = 0x811c9dc5;
      for (let k = n * B; k < t.tokens.length; k++) tail = Math.imul(tail ^ (t.tokens[k] as number), 0x01000193);
    }
    return { keys, n, lastKey: Math.imul(prev ^ tail, 0x9e3779b1) ^ (t.tokens.length - n * B), length: t.tokens.length, blockBytes: B, hashes, known: t.tokens.length, complete: t.complete, memo, hint };
  }
}

/** Exact token counts: the unit of a precise chain is the token. */
export class ExactTokens extends TokenRatio {
  override get value(): number {
    return 1;
  }
  override tokens(units: number): number {
    return Math.floor(units);
  }
  override learn(): boolean {
    return false;
  }
}
