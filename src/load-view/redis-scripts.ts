/**
 * The Lua script behind the `redis` load view: one round trip writes this process's lease counts
 * and reads the fleet-wide total, atomically. Keys, all in the Redis Cluster slot of `{prefix}`:
 *
 *   {prefix}:total        hash  field → sum over the processes in procs; fields `n:<target>`
 *                               (leases in flight) and `w:<target>` (queued work)
 *   {prefix}:procs        set   ids of the processes that have counts
 *   {prefix}:proc:<id>    hash  field → process <id>'s part (what it has sent)
 *   {prefix}:hb:<id>      string, expires after leaseTtlMs: process <id> is alive
 *
 * Invariant: total = Σ proc hashes of the members of procs. Modes:
 *
 * - `delta`: adds (field, ±n) pairs to the process's hash and to the total — the per-request
 *   path. Refused (status 0, nothing written) when the process's heartbeat is gone (it was cut off
 *   longer than leaseTtlMs and reaped, or Redis restarted empty), when it is not in procs, or when
 *   its own hash does not hold what this process wrote there: the process then sends `full`.
 * - `full`: replaces the process's hash by its current counts, renews its heartbeat, reaps every
 *   process whose heartbeat expired (deleting its hash), and rebuilds the total from the hashes.
 *   Every key gets a TTL of keyTtlMs that live processes keep renewing, so when all of them are
 *   gone nothing is left behind.
 * - `leave`: removes the process's counts at once (router.close()), reaps, rebuilds the total.
 *
 * Other programs can write these keys. A value is a count only as routers write it: 1 to 15
 * decimal digits (MAX_COUNT at most). Every value is read and checked before anything is written,
 * and nothing below can fail on a value or a key's type, so a call applies all of its change or
 * none of it. What is not a count is repaired or ignored: a total field that is not one (or is
 * below this process's own part) is recomputed from the process hashes; a field other than
 * `n:`/`w:` leaves the total; in another process's hash it counts nothing; a key of another type
 * is deleted and rewritten (total by any call; procs and this process's hash by `full`, which a
 * refused delta asks for) or read as empty (another process's hash). A heartbeat without an expiry was not written by a router: its process is reaped.
 * Sums are capped at MAX_COUNT. The arguments are checked too: a bad one fails the call, unapplied.
 *
 * Every mode answers { status, total as [field, value, …] (only counts), live processes, this
 * process's position among them (sorted by id) }; status 1 = applied, 0 = refused (nothing applied).
 */

/** The largest count the script keeps (15 digits: exact in a double, and in a Lua number). */
export const MAX_COUNT = 999_999_999_999_999;

/**
 * Shared by the three modes. Helpers: `count` (a count as routers write it, else nil), `sumOf`
 * (a field summed over the members' hashes), `rebuild` (the total from the members' hashes),
 * `reap` (deletes members whose heartbeat is gone or has no expiry). The arguments are read
 * first: (field, n) pairs, n a count (`full`) or a signed one (`delta`). A `delta` reads and
 * checks all it needs before its first write. The answer reads the total and repairs what is not
 * a count there (rewriting 0 and leading zeros, removing foreign fields). No comments inside:
 * the script is shipped as it is written here.
 */
export const LOAD_SCRIPT = `
local base, id, mode = ARGV[1], ARGV[2], ARGV[3]
local ttl, keyTtl = tonumber(ARGV[4]), tonumber(ARGV[5])
local procs, total = KEYS[1], KEYS[2]
local own = base .. ':proc:' .. id
local MAX = ${MAX_COUNT}

local function kind(key) return redis.call('TYPE', key)['ok'] end
local function fmt(n) return string.format('%d', n) end
local function count(v)
  if type(v) ~= 'string' or #v > 15 or not string.find(v, '^%d+$') then return nil end
  return tonumber(v)
end
local function counted(f)
  local p = string.sub(f, 1, 2)
  return p == 'n:' or p == 'w:'
end
local function alive(m) return redis.call('PTTL', base .. ':hb:' .. m) >= 0 end
local function members()
  if kind(procs) ~= 'set' then return {} end
  return redis.call('SMEMBERS', procs)
end
local function hash(m)
  local p = base .. ':proc:' .. m
  if kind(p) == 'hash' then return p end
end
local function sumOf(f)
  local s = 0
  for _, m in ipairs(members()) do
    local p = hash(m)
    if p then s = s + (count(redis.call('HGET', p, f)) or 0) end
  end
  return math.min(s, MAX)
end
local function setTotal(f, n)
  if n > 0 then redis.call('HSET', total, f, fmt(n)) else redis.call('HDEL', total, f) end
end
local function rebuild()
  local sums = {}
  for _, m in ipairs(members()) do
    local p = hash(m)
    if p then
      local h = redis.call('HGETALL', p)
      for i = 1, #h, 2 do
        local n = count(h[i + 1])
        if n and counted(h[i]) then sums[h[i]] = (sums[h[i]] or 0) + n end
      end
    end
  end
  redis.call('DEL', total)
  for f, n in pairs(sums) do setTotal(f, math.min(n, MAX)) end
end
local function reap()
  if kind(procs) ~= 'set' then redis.call('DEL', procs) end
  for _, m in ipairs(members()) do
    if not alive(m) then
      redis.call('DEL', base .. ':proc:' .. m, base .. ':hb:' .. m)
      redis.call('SREM', procs, m)
    end
  end
end

local change = {}
for i = 6, #ARGV, 2 do
  local f, v = ARGV[i], ARGV[i + 1]
  local neg = mode == 'delta' and string.sub(v, 1, 1) == '-'
  local n = count(neg and string.sub(v, 2) or v)
  if n == nil or not counted(f) then return redis.error_reply('ERR prefix-router: bad argument ' .. f) end
  change[f] = (change[f] or 0) + (neg and -n or n)
end

if mode == 'delta' then
  local ownKind = kind(own)
  if not alive(id) or (ownKind ~= 'hash' and ownKind ~= 'none') or kind(procs) ~= 'set' or redis.call('SISMEMBER', procs, id) == 0 then return {0, {}, 0, 0} end
  local mine = {}
  for f, d in pairs(change) do
    local o = 0
    if ownKind == 'hash' then o = count(redis.call('HGET', own, f) or '0') end
    if o == nil or o + d < 0 or o + d > MAX then return {0, {}, 0, 0} end
    mine[f] = o + d
  end
  local totalKind = kind(total)
  for f, n in pairs(mine) do
    if n > 0 then redis.call('HSET', own, f, fmt(n)) else redis.call('HDEL', own, f) end
  end
  if totalKind ~= 'hash' and totalKind ~= 'none' then
    rebuild()
  else
    for f, d in pairs(change) do
      local t = count(redis.call('HGET', total, f) or '0')
      if t == nil or t + d < mine[f] or t + d > MAX then setTotal(f, sumOf(f)) else setTotal(f, t + d) end
    end
  end
  redis.call('PEXPIRE', own, keyTtl)
  redis.call('PEXPIRE', total, keyTtl)
elseif mode == 'leave' then
  redis.call('DEL', own, base .. ':hb:' .. id)
  reap()
  redis.call('SREM', procs, id)
  rebuild()
else
  redis.call('DEL', own)
  for f, n in pairs(change) do
    if n > 0 then redis.call('HSET', own, f, fmt(n)) end
  end
  redis.call('SET', base .. ':hb:' .. id, '1', 'PX', ttl)
  reap()
  redis.call('SADD', procs, id)
  rebuild()
  redis.call('PEXPIRE', procs, keyTtl)
  redis.call('PEXPIRE', own, keyTtl)
  redis.call('PEXPIRE', total, keyTtl)
end

local answer = {}
if kind(total) == 'hash' then
  local h = redis.call('HGETALL', total)
  for i = 1, #h, 2 do
    local f, n = h[i], count(h[i + 1])
    if not counted(f) then
      redis.call('HDEL', total, f)
    else
      if n == nil then n = sumOf(f) end
      if n == 0 or fmt(n) ~= h[i + 1] then setTotal(f, n) end
      if n > 0 then
        answer[#answer + 1] = f
        answer[#answer + 1] = fmt(n)
      end
    end
  end
end
local list = members()
table.sort(list)
local index = 0
for k, m in ipairs(list) do if m == id then index = k - 1 end end
return {1, answer, #list, index}
`;

/** The keys of a prefix. */
export function loadKeys(keyPrefix: string): { base: string; procs: string; total: string } {
  const base = `{${keyPrefix}}`;
  return { base, procs: `${base}:procs`, total: `${base}:total` };
}
