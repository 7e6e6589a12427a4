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

/** Shared by the three modes. */
export const LOAD_SCRIPT = `
local base, id, mode = ARGV[1], ARGV[2], ARGV[3]
local ttl, keyTtl = tonumber(ARGV[4]), tonumber(ARGV[5])
local procs, total = KEYS[1], KEYS[2]
local own = base .. ':proc:' .. id
local MAX = ${MAX_COUNT}
local REFUSED = {0, {}, 0, 0}

local function kind(key) return redis.call('TYPE', key)['ok'] end
local function fmt(n) return string.format('%d', n) end
-- A count as routers write it, else nil.
local function count(v)
  if type(v) ~= 'string' or #v > 15 or not string.find(v, '^%d+$') then return nil end
  return tonumber(v)
end
local function counted(field)
  local p = string.sub(field, 1, 2)
  return p == 'n:' or p == 'w:'
end
local function alive(m) return redis.call('PTTL', base .. ':hb:' .. m) >= 0 end
local function members()
  if kind(procs) ~= 'set' then return {} end
  return redis.call('SMEMBERS', procs)
end
-- A key of another type than a router writes there goes.
local function expect(key, t)
  local k = kind(key)
  if k ~= t and k ~= 'none' then redis.call('DEL', key) end
end
-- The sum of a field over every member's hash.
local function sumOf(field)
  local s = 0
  for _, m in ipairs(members()) do
    local p = base .. ':proc:' .. m
    if kind(p) == 'hash' then s = s + (count(redis.call('HGET', p, field)) or 0) end
  end
  return math.min(s, MAX)
end
local function setTotal(field, n)
  if n > 0 then redis.call('HSET', total, field, fmt(n)) else redis.call('HDEL', total, field) end
end
-- The total, from every member's hash.
local function rebuild()
  local sums = {}
  for _, m in ipairs(members()) do
    local p = base .. ':proc:' .. m
    if kind(p) == 'hash' then
      local h = redis.call('HGETALL', p)
      for i = 1, #h, 2 do
        local n = count(h[i + 1])
        if n ~= nil and n > 0 and counted(h[i]) then sums[h[i]] = (sums[h[i]] or 0) + n end
      end
    end
  end
  redis.call('DEL', total)
  for field, n in pairs(sums) do setTotal(field, math.min(n, MAX)) end
end
-- Deletes the hashes of members whose heartbeat expired; whether any was.
local function reap()
  local any = false
  for _, m in ipairs(members()) do
    if not alive(m) then
      redis.call('DEL', base .. ':proc:' .. m, base .. ':hb:' .. m)
      redis.call('SREM', procs, m)
      any = true
    end
  end
  return any
end

-- The arguments: (field, n) pairs; n a count (full) or a signed one (delta).
local change = {}
for i = 6, #ARGV, 2 do
  local field, v = ARGV[i], ARGV[i + 1]
  local sign = 1
  if mode == 'delta' and type(v) == 'string' and string.sub(v, 1, 1) == '-' then sign, v = -1, string.sub(v, 2) end
  local n = count(v)
  if n == nil or not counted(field) then return redis.error_reply('ERR prefix-router load script: bad argument ' .. field) end
  change[field] = (change[field] or 0) + sign * n
end

if mode == 'delta' then
  local ownKind = kind(own)
  if not alive(id) or (ownKind ~= 'hash' and ownKind ~= 'none') or kind(procs) ~= 'set' or redis.call('SISMEMBER', procs, id) == 0 then return REFUSED end
  -- Read and check everything first: a refused or failed call writes nothing.
  local mine = {}
  for field, d in pairs(change) do
    local o = 0
    if ownKind == 'hash' then
      local v = redis.call('HGET', own, field)
      if v then o = count(v) end
    end
    if o == nil or o + d < 0 or o + d > MAX then return REFUSED end
    mine[field] = o + d
  end
  local totalKind = kind(total)
  for field, n in pairs(mine) do
    if n > 0 then redis.call('HSET', own, field, fmt(n)) else redis.call('HDEL', own, field) end
  end
  if totalKind ~= 'hash' and totalKind ~= 'none' then
    rebuild()
  else
    for field, d in pairs(change) do
      local t = count(redis.call('HGET', total, field) or '0')
      if t == nil or t + d < mine[field] or t + d > MAX then setTotal(field, sumOf(field)) else setTotal(field, t + d) end
    end
  end
  redis.call('PEXPIRE', own, keyTtl)
  redis.call('PEXPIRE', total, keyTtl)
elseif mode == 'leave' then
  redis.call('DEL', own, base .. ':hb:' .. id)
  expect(procs, 'set')
  redis.call('SREM', procs, id)
  reap()
  rebuild()
else
  redis.call('DEL', own)
  for field, n in pairs(change) do
    if n > 0 then redis.call('HSET', own, field, fmt(n)) end
  end
  redis.call('SET', base .. ':hb:' .. id, '1', 'PX', ttl)
  expect(procs, 'set')
  redis.call('SADD', procs, id)
  reap()
  rebuild()
  redis.call('PEXPIRE', procs, keyTtl)
  redis.call('PEXPIRE', own, keyTtl)
  redis.call('PEXPIRE', total, keyTtl)
end

-- The answer: the total's counts; a field that is not one is repaired (or, not n:/w:, removed),
-- one written otherwise (0, leading zeros) rewritten.
local answer = {}
if kind(total) == 'hash' then
  local h = redis.call('HGETALL', total)
  for i = 1, #h, 2 do
    local field = h[i]
    local n = count(h[i + 1])
    if not counted(field) then
      redis.call('HDEL', total, field)
    else
      if n == nil then
        n = sumOf(field)
        setTotal(field, n)
      elseif fmt(n) ~= h[i + 1] then
        setTotal(field, n)
      end
      if n > 0 then
        answer[#answer + 1] = field
        answer[#answer + 1] = fmt(n)
      end
    end
  end
else
  expect(total, 'hash')
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
