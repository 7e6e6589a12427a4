/**
 * The `longest-prefix` ranking of one decision. Let m_t be the number of leading blocks of the
 * request that target t holds and M = max_t m_t. The divergence key d is the key of block M, the
 * first block no target holds (the partial last block, or the last block, when every block is
 * held); the anchor key a is the key of block M − 1, the end of the longest held prefix. Eligible
 * targets are ranked
 *
 *   1. targets with m_t = M, by rendezvous score on d — with a common start held everywhere (a hot
 *      system prompt), the block where a request diverges decides, so new documents spread over
 *      the fleet and every router process agrees where they go;
 *   2. the others by m_t descending, then by rendezvous score on a — a prefix that outgrows its
 *      holder spills to the same second target every time (it replicates to few targets).
 *
 * A prefix no target holds (M = 0) is placed by rendezvous hashing on its first block. A longest
 * held run shorter than `negligible` blocks (`precise-prefix`: an eighth of the request) ranks as
 * none: every target counts as holding nothing, and the request is placed by rendezvous hashing
 * on the first block no target holds — where it is its own. A few blocks held by chance (another
 * document's first words) would otherwise decide where the whole prompt is computed, and decide
 * it differently whenever the fleet's contents change (a replica restarted); the block after
 * them is the same on every decision, so the prompt keeps one home.
 *
 * Cost: O(T log n) index probes and T divergence scores; the T anchor scores only when a
 * decision looks past the holders. Scratch arrays are reused across decisions: a ranking is valid
 * until the next {@link ChainRanking.reset}.
 */
import type { PickContext } from "../strategy.js";
import type { BlockChain } from "./chain.js";

/** What the ranking reads of a target: the leading blocks of a chain it holds (a {@link TargetBlocks}, or another index's view). */
export interface MatchSource {
  matchLength(keys: Int32Array, n: number, now: number): number;
}

export class ChainRanking {
  /** match[j]: leading blocks of the request held by candidate j, as the ranking counts them (0 when the longest is negligible). */
  match = new Int32Array(16);
  /** held[j]: leading blocks of the request candidate j holds (what it saves there). */
  held = new Int32Array(16);
  /** The longest run held, in blocks (M, unless negligible). */
  longest = 0;
  private scores = new Float64Array(16);
  private anchorScores = new Float64Array(16);
  private anchored = false;
  private ctx!: PickContext<{ id: string }>;
  private chain!: BlockChain;
  /** The longest match, in blocks. */
  M = 0;
  /** Number of candidates holding the longest match. */
  group = 0;
  /** The divergence key's halves: the key of the first block no target holds (block `longest`) and its end offset. */
  dHi = 0;
  dLo = 0;

  /** Ranks `ctx.candidates` for `chain` against the targets' indexes (`blocks[i]`); `now` in TTL units. */
  reset(ctx: PickContext<{ id: string }>, chain: BlockChain, blocks: readonly MatchSource[], now: number, negligible = 0): this {
    const candidates = ctx.candidates;
    const T = candidates.length;
    if (this.match.length < T) {
      const size = Math.max(T, this.match.length * 2);
      this.match = new Int32Array(size);
      this.held = new Int32Array(size);
      this.scores = new Float64Array(size);
      this.anchorScores = new Float64Array(size);
    }
    this.ctx = ctx;
    this.chain = chain;
    let M = 0;
    for (let j = 0; j < T; j++) {
      const m = (blocks[candidates[j] as number] as MatchSource).matchLength(chain.keys, chain.n, now);
      this.match[j] = m;
      this.held[j] = m;
      if (m > M) M = m;
    }
    this.longest = M;
    // The divergence is the first block no target holds, also when the run before it ranks as none.
    const d = M;
    if (M > 0 && M < negligible) {
      M = 0;
      this.match.fill(0, 0, T);
    }
    this.M = M;
    if (d < chain.n) {
      this.dHi = (chain.keys[d] as number) >>> 0;
      this.dLo = (d + 1) * chain.blockBytes;
    } else {
      this.dHi = chain.lastKey >>> 0;
      this.dLo = chain.length;
    }
    let group = 0;
    for (let j = 0; j < T; j++) {
      if (this.match[j] !== M) continue;
      this.scores[j] = ctx.score(candidates[j] as number, this.dHi, this.dLo);
      group++;
    }
    this.group = group;
    this.anchored = false;
    return this;
  }

  /** The divergence key, as the decision's routing key. */
  get key(): bigint {
    return (BigInt(this.dHi) << 32n) | BigInt(this.dLo >>> 0);
  }

  /** Anchor scores of the candidates below the longest match (once per decision). */
  scoreAnchors(): void {
    if (this.anchored || this.M === 0) return;
    this.anchored = true;
    const M = this.M;
    const candidates = this.ctx.candidates;
    const aHi = (this.chain.keys[M - 1] as number) >>> 0;
    const aLo = M * this.chain.blockBytes;
    for (let j = 0; j < candidates.length; j++) {
      if (this.match[j] !== M) this.anchorScores[j] = this.ctx.score(candidates[j] as number, aHi, aLo);
    }
  }

  /**
   * Ranking order of positions a and b (negative: a first): longest match first; among the
   * holders of the longest, divergence score; among the others, anchor score; then position.
   */
  compare(a: number, b: number): number {
    const ma = this.match[a] as number;
    const mb = this.match[b] as number;
    if (ma !== mb) return mb - ma;
    const s = ma === this.M ? (this.scores[b] as number) - (this.scores[a] as number) : (this.anchorScores[b] as number) - (this.anchorScores[a] as number);
    return s || a - b;
  }

  /**
   * Position of `j` in the ranking: how many candidates rank before it. For a holder of the
   * longest match only holders can; for the others the anchor scores must be computed.
   */
  rankOf(j: number): number {
    const holder = this.match[j] === this.M;
    const T = this.ctx.candidates.length;
    let rank = 0;
    for (let k = 0; k < T; k++) {
      if (k === j || (holder && this.match[k] !== this.M)) continue;
      if (this.compare(k, j) < 0) rank++;
    }
    return rank;
  }

  /** Candidate positions, best first (scores the anchors). */
  positions(): number[] {
    this.scoreAnchors();
    const positions = Array.from({ length: this.ctx.candidates.length }, (_, j) => j);
    return positions.sort((a, b) => this.compare(a, b));
  }

  /** The first three positions of the ranking (−1 where there are fewer candidates); one O(T) scan. */
  top3(): [number, number, number] {
    this.scoreAnchors();
    let first = -1;
    let second = -1;
    let third = -1;
    const T = this.ctx.candidates.length;
    for (let j = 0; j < T; j++) {
      if (first === -1 || this.compare(j, first) < 0) {
        third = second;
        second = first;
        first = j;
      } else if (second === -1 || this.compare(j, second) < 0) {
        third = second;
        second = j;
      } else if (third === -1 || this.compare(j, third) < 0) third = j;
    }
    return [first, second, third];
  }
}
