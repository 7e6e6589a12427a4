/**
 * Running keys (`spreadRunningKeys`): a request whose first choice is already running a request of
 * the same key (from this router) goes to the first of the key's next choices that is open and not
 * running it — for engines whose cache is private to a running request (llama.cpp's slots), where
 * a second request for a running prefix starts cold anyway. Engines with a shared paged cache
 * (vLLM, SGLang) serve it warm on the first choice. `"auto"` (the default) spreads only on a target
 * whose responses to such second requests were mostly misses (decayed counts, at least
 * {@link PRIVATE_CACHE_EVIDENCE}); `true` always, `false` never.
 */
import type { PredictionVerdict } from "../../closed-loop/closed-loop.js";

/** Judged responses (decayed: two in a row make 1.9) of requests sent while their key ran on the target, before `"auto"` decides. */
const PRIVATE_CACHE_EVIDENCE = 1.5;
/** Weight kept by older evidence at each new verdict. */
const PRIVATE_CACHE_DECAY = 0.9;

/** Decayed verdicts on requests sent while their key ran on a target: warm (a shared cache) or cold (private ones). */
export class SharingEvidence {
  private hits = 0;
  private misses = 0;

  judge(verdict: PredictionVerdict): void {
    if (verdict === undefined) return;
    this.hits = PRIVATE_CACHE_DECAY * this.hits + (verdict === "hit" ? 1 : 0);
    this.misses = PRIVATE_CACHE_DECAY * this.misses + (verdict === "miss" ? 1 : 0);
  }

  /** Enough verdicts to decide. */
  get known(): boolean {
    return this.hits + this.misses >= PRIVATE_CACHE_EVIDENCE;
  }

  /** They say a running request's prefix is not shared with a second one. */
  get private(): boolean {
    return this.known && this.misses > this.hits;
  }
}

/** Whether a target's verdicts (`own`), or the fleet's while it has too few of its own, say its cache is private to a running request. */
export function privateCache(own: SharingEvidence, fleet: SharingEvidence | undefined): boolean {
  return own.known || fleet === undefined ? own.private : fleet.private;
}

/** The keys this router runs on one target (`prefix-aware`'s routing keys), and what the target's responses say about sharing a running prefix. */
export class RunningKeys {
  /** Requests in flight from this router on the target, by key. */
  private readonly running = new Map<bigint, number>();
  private readonly own = new SharingEvidence();

  has(key: bigint): boolean {
    return this.running.has(key);
  }

  /** Counts a request of `key` in; true when the key was already running here. */
  start(key: bigint): boolean {
    const concurrent = this.running.has(key);
    this.running.set(key, (this.running.get(key) ?? 0) + 1);
    return concurrent;
  }

  /** Counts a request of `key` out. */
  end(key: bigint): void {
    const n = (this.running.get(key) ?? 1) - 1;
    if (n > 0) this.running.set(key, n);
    else this.running.delete(key);
  }

  /** Learns from the verdict on a request sent while its key ran here. */
  judge(verdict: PredictionVerdict): void {
    this.own.judge(verdict);
  }

  /** Its responses say a running request's prefix is not shared with a second one (llama.cpp's slots). */
  get privateCache(): boolean {
    return privateCache(this.own, undefined);
  }
}

/** Whether a second request for `key`, running on a target whose keys are `keys`, should go elsewhere under `spread`. */
export function spreads(spread: boolean | "auto", keys: RunningKeys | undefined, key: bigint): boolean {
  if (spread === false) return false;
  if (keys === undefined || !keys.has(key)) return false;
  return spread === true || keys.privateCache;
}
