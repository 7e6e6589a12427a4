/**
 * What decoding engine KV events costs: whole live messages `[topic, seq, payload]` through the
 * feed's decoder (`src/kv-events/wire.ts`), in vLLM's shapes — batches of `BlockStored` events of
 * 16-token blocks with 64-bit hashes (one to eight blocks each, as a scheduler step stores them),
 * a `BlockRemoved` for every two stores — in both encodings (events as tagged arrays, as maps with
 * `type`). Decoding only: the index's cost comes on top.
 *
 *   npx tsx microbench/kv-events-decode.ts [--time=2000]
 */
import { KvWireDecoder } from "../src/kv-events/wire.js";
import { encodeWireBatch, wireSeq, type WireEvent } from "../tools/fleet/kv-events/publisher.js";

const time = Number(process.argv.find((a) => a.startsWith("--time="))?.slice(7) ?? 2000);
const wire = await KvWireDecoder.load();

/** Deterministic pseudo-random 32-bit integers (xorshift32). */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return x >>> 0;
  };
}

function messages(encoding: "array" | "map", eventsPerBatch: number, count: number): { frames: Uint8Array[][]; events: number } {
  const r = rng(7);
  const hash = () => (BigInt(r()) << 32n) | BigInt(r());
  const frames: Uint8Array[][] = [];
  let events = 0;
  for (let b = 0; b < count; b++) {
    const evs: WireEvent[] = [];
    for (let e = 0; e < eventsPerBatch; e++) {
      if (e % 3 === 2) {
        evs.push({ type: "BlockRemoved", block_hashes: [hash(), hash()], medium: "GPU" });
        continue;
      }
      const blocks = 1 + (r() % 8);
      evs.push({
        type: "BlockStored",
        block_hashes: Array.from({ length: blocks }, hash),
        parent_block_hash: e % 2 === 0 ? null : hash(),
        token_ids: Array.from({ length: blocks * 16 }, () => r() % 151_000),
        block_size: 16,
        lora_id: null,
        medium: "GPU",
        lora_name: null,
        extra_keys: Array.from({ length: blocks }, () => null),
        group_idx: 0,
        kv_cache_spec_kind: "full_attention",
      });
    }
    events += evs.length;
    const payload = encodeWireBatch({ ts: 1_789_095_808.5 + b, events: evs, data_parallel_rank: 0 }, { events: encoding, batch: "array" });
    frames.push([Buffer.from("kv-events"), wireSeq(BigInt(b)), payload]);
  }
  return { frames, events };
}

const rows: string[] = [];
for (const encoding of ["array", "map"] as const) {
  for (const perBatch of [1, 16]) {
    const { frames, events } = messages(encoding, perBatch, 512);
    const bytes = frames.reduce((s, f) => s + f[2]!.byteLength, 0);
    for (const f of frames) wire.decodeMessage(f); // warm up
    let decoded = 0;
    let rounds = 0;
    const start = performance.now();
    while (performance.now() - start < time) {
      for (const f of frames) decoded += wire.decodeMessage(f).batch.events.length;
      rounds++;
    }
    const s = (performance.now() - start) / 1000;
    rows.push(
      `| ${encoding} | ${perBatch} | ${Math.round(bytes / frames.length)} | ${Math.round(decoded / s).toLocaleString("en-US")} | ${Math.round((rounds * frames.length) / s).toLocaleString("en-US")} | ${((s * 1e6) / decoded).toFixed(2)} |`,
    );
    void events;
  }
}
console.log("| events as | events per batch | payload bytes per batch | events/s | batches/s | µs per event |");
console.log("|---|---:|---:|---:|---:|---:|");
for (const row of rows) console.log(row);
