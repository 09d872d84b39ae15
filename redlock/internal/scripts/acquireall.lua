-- Acquires every key of a set for one token, or none (see Client.LockAll).
-- KEYS[1] .. KEYS[n] the locks, in the caller's order,
-- KEYS[n+1] this attempt's tombstone, KEYS[n+2] the node's fence floor,
-- KEYS[n+3] the node's fence stamp,
-- KEYS[n+4] .. KEYS[2n+3] the locks' waiting queues, in the same order,
-- KEYS[2n+4] .. KEYS[3n+3] their leases (see acquire.lua's The queue)
-- ARGV[1] token of this attempt, ARGV[2] TTL in ms,
-- ARGV[3] the client's proposal for a new count, or '' (see acquire.lua),
-- ARGV[4] the master's identity as the client knows it, or '' (see
-- fenceEpoch).
-- Returns acquire.lua's shapes: {1, counter} when every key is now the
-- token's (a retried request that already landed included), {0, PTTL,
-- holder, head, -1} naming the first key of the set, in the caller's
-- order, that another holds (its PTTL and holder as acquire.lua gives
-- them, and its queue's head), or that is free but others queue for (PTTL
-- -2, holder '?'), {0, -3} when the attempt was rolled back here. The set
-- never queues.
--
-- All or none. Every key is checked before any is written, and a script
-- runs alone on a master, so no one sees the set taken in part here.
--
-- The fence. One grant of the set is one count, as a lock's grant is:
-- every key of the set is fenced by it. A count per key would spend the
-- clock seed's budget (fewer than 1024 counts a millisecond: see
-- clockSeed) as many times faster as the set has keys.
local n = (#KEYS - 3) / 3
local token, ttl, propose, knownID = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local void, floor, stamp = KEYS[n + 1], KEYS[n + 2], KEYS[n + 3]
local L = lib()

local mine = 0
for i = 1, n do
  local lock = KEYS[i]
  local v = redis.pcall('GET', lock)
  if v == token then
    mine = mine + 1
  else
    local queue, leases = KEYS[n + 3 + i], KEYS[2 * n + 3 + i]
    if not v then
      -- Free: a new grant goes to the head of its queue alone.
      local head = redis.call('ZRANGE', queue, 0, 0)[1] and L.queueHead(queue, leases)
      if head then return {0, -2, '?', head, -1} end
    else
      local holder = v
      if type(v) ~= 'string' then
        holder = '?'
        if redis.call('TYPE', lock).ok == 'hash' then
          local owner = redis.call('HGET', lock, 'owner')
          if owner then holder = 'owner:' .. owner end
        end
      end
      return {0, redis.call('PTTL', lock), holder, redis.call('ZRANGE', queue, 0, 0)[1] or '', -1}
    end
  end
end

-- A tombstone means the attempt was rolled back before this request
-- arrived: it must not land. A retried request that already took every
-- key changes nothing, and is not refused.
local r = redis.call('MGET', void, stamp, floor)
if r[1] and mine < n then return {0, -3} end

-- The epoch the fence data counts in, as acquire.lua finds it.
local s, f, h, epoch = r[2], tonumber(r[3]), #knownID, nil
if s and h > 0 and string.byte(s, h + 1) == 32 and string.sub(s, 1, h) == knownID then
  epoch = tonumber(string.match(s, '^(%d+) %d+$', h + 2))
end
if not epoch then
  epoch, f = L.fenceEpoch(stamp, floor, knownID, s, f)
end
if mine == n then return {1, L.counter(nil, f, epoch)} end

-- Count the grant as acquire.lua does: one above the floor (at least the
-- epoch), or the proposal where larger, capped at the clock seed.
local c = L.counter(nil, f, epoch) + 1
local p = tonumber(propose)
if p and p > c then c = math.max(c, math.min(p, L.clockSeed())) end
L.raiseFloor(floor, c, f)
for i = 1, n do
  redis.call('SET', KEYS[i], token, 'PX', ttl)
end
return {1, c}
