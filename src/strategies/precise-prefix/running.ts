/**
 * What `precise-prefix` knows of the requests it runs on one engine (`spreadRunningPrefixes`):
 * their token chains, and whether the engine's answers say its cache is private to a running
 * request (llama.cpp's slots). A chain's key at block k covers blocks 0..k (chained hashes), so
 * "the request's run of m blocks is part of a running request" is one key compared per request in
 * flight: O(in flight) per engine and decision, nothing per block at commit.
 */
import type { PredictionVerdict } from "../../closed-loop/closed-loop.js";
import { SharingEvidence, privateCache } from "../shared/running-keys.js";

export class RunningChains {
  /** The full-block keys of the requests in flight here (each request's own array). */
  private readonly chains: Int32Array[] = [];
  private readonly own = new SharingEvidence();

  /** `fleet`: the fleet's verdicts, taken while this engine has too few of its own (fleets are mostly of one engine kind). */
  constructor(private readonly fleet: SharingEvidence) {}

  /** Whether a request in flight here holds the first `m` blocks whose last key is `key`. */
  runs(m: number, key: number): boolean {
    for (const c of this.chains) if (c.length >= m && c[m - 1] === key) return true;
    return false;
  }

  start(keys: Int32Array): void {
    this.chains.push(keys);
  }

  end(keys: Int32Array): void {
    const i = this.chains.indexOf(keys);
    if (i === -1) return;
    this.chains[i] = this.chains[this.chains.length - 1] as Int32Array;
    this.chains.pop();
  }

  /** Learns from the verdict on a request sent while its run ran here. */
  judge(verdict: PredictionVerdict): void {
    this.own.judge(verdict);
    this.fleet.judge(verdict);
  }

  get privateCache(): boolean {
    return privateCache(this.own, this.fleet);
  }
}
