/**
 * The Lua script behind the `redis` load view: one round trip writes this process's lease counts
 * and reads the fleet-wide total, atomically. Keys, all in the Redis Cluster slot of `{prefix}`:
 *
 *   {prefix}:total        hash  field → sum over every live process; fields `n:<target>`
 *                               (leases in flight) and `w:<target>` (queued work)
 *   {prefix}:procs        set   ids of the processes that have counts
 *   {prefix}:proc:<id>    hash  field → process <id>'s part (what it has sent)
 *   {prefix}:hb:<id>      string, expires after leaseTtlMs: process <id> is alive
 *
 * Invariant: total = Σ proc hashes. Modes:
 *
 * - `delta`: adds (target, ±n) pairs to the process's hash and to the total — the per-request
 *   path. Refused (`expired`) when the process's heartbeat key is gone (it was cut off longer
 *   than leaseTtlMs and reaped, or Redis restarted empty): the process then sends `full`.
 * - `full`: replaces the process's hash by its current counts (the total adjusted by the
 *   difference), renews its heartbeat, and reaps every process whose heartbeat expired —
 *   subtracting its hash from the total and deleting it. Every key gets a TTL of keyTtlMs that
 *   live processes keep renewing, so when all of them are gone nothing is left behind.
 * - `leave`: removes the process's counts at once (router.close()).
 *
 * Every mode answers { status, total as [field, value, …], live processes, this process's
 * position among them (sorted by id) }; status 1 = applied, 0 = expired (nothing applied).
 */

/** Shared by the three modes. */
export const LOAD_SCRIPT = `
local base, id, mode = ARGV[1], ARGV[2], ARGV[3]
local ttl, keyTtl = tonumber(ARGV[4]), tonumber(ARGV[5])
local procs, total = KEYS[1], KEYS[2]
local own, hb = base .. ':proc:' .. id, base .. ':hb:' .. id

local function add(field, delta)
  if redis.call('HINCRBY', total, field, delta) == 0 then redis.call('HDEL', total, field) end
end
local function drop(proc)
  local old = redis.call('HGETALL', proc)
  for i = 1, #old, 2 do add(old[i], -tonumber(old[i + 1])) end
  redis.call('DEL', proc)
end

if mode == 'delta' then
  if redis.call('EXISTS', hb) == 0 then return {0, {}, 0, 0} end
  for i = 6, #ARGV, 2 do
    local d = tonumber(ARGV[i + 1])
    if redis.call('HINCRBY', own, ARGV[i], d) == 0 then redis.call('HDEL', own, ARGV[i]) end
    add(ARGV[i], d)
  end
  redis.call('PEXPIRE', own, keyTtl)
  redis.call('PEXPIRE', total, keyTtl)
elseif mode == 'leave' then
  drop(own)
  redis.call('DEL', hb)
  redis.call('SREM', procs, id)
else
  drop(own)
  for i = 6, #ARGV, 2 do
    local c = tonumber(ARGV[i + 1])
    if c ~= 0 then
      redis.call('HSET', own, ARGV[i], c)
      add(ARGV[i], c)
    end
  end
  redis.call('SET', hb, '1', 'PX', ttl)
  redis.call('SADD', procs, id)
  for _, m in ipairs(redis.call('SMEMBERS', procs)) do
    if redis.call('EXISTS', base .. ':hb:' .. m) == 0 then
      drop(base .. ':proc:' .. m)
      redis.call('SREM', procs, m)
    end
  end
  redis.call('PEXPIRE', procs, keyTtl)
  redis.call('PEXPIRE', own, keyTtl)
  if redis.call('EXISTS', total) == 1 then redis.call('PEXPIRE', total, keyTtl) end
end
local members = redis.call('SMEMBERS', procs)
table.sort(members)
local index = 0
for k, m in ipairs(members) do if m == id then index = k - 1 end end
return {1, redis.call('HGETALL', total), #members, index}
`;

/** The keys of a prefix. */
export function loadKeys(keyPrefix: string): { base: string; procs: string; total: string } {
  const base = `{${keyPrefix}}`;
  return { base, procs: `${base}:procs`, total: `${base}:total` };
}
