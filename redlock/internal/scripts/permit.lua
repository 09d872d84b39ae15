-- Takes one permit of a semaphore of K permits (see permits.lua).
-- KEYS[1] the semaphore, KEYS[2] its permit record, KEYS[3] the node's
-- fence floor, KEYS[4] this attempt's tombstone, KEYS[5] the node's fence
-- stamp, KEYS[6] the key's waiting queue, KEYS[7] its leases, KEYS[8] the
-- waiter's tombstone (this attempt's when there is no waiter)
-- ARGV[1] token of this attempt, ARGV[2] TTL in ms, ARGV[3] K,
-- ARGV[4] the client's proposal for a new count, or '' (see acquire.lua),
-- ARGV[5] the waiter, or '' for a request that does not wait, ARGV[6] its
-- ticket, ARGV[7] its lease in ms, or '' for a waiter that does not queue,
-- ARGV[8] the master's identity as the client knows it, or ''.
-- Returns acquire.lua's shapes: {1, counter} when granted (a retried request
-- that already landed gets the node's floor, as a plain lock does),
-- {0, PTTL, holder, head, rank} when refused: PTTL until the first permit
-- ends (-2 when none is held), holder that permit's token ('?' when none,
-- or for a key of another kind), the queue's head and the waiter's rank as
-- acquire.lua gives them; {0, -3} when the attempt was rolled back here;
-- {0, -4, '?', '', -1, K'} when the key's record says K' permits, not K.
--
-- The queue. Waiters line up by ticket as for a lock (see acquire.lua). A
-- free permit goes to a waiter whose rank in the queue is below the number
-- of free permits, and to a request that does not queue only when fewer
-- waiters queue than permits are free: with F permits free, the first F
-- waiters may each take one, and nobody overtakes them.
--
-- The fence. Each grant counts as a lock's grant does, from the node's
-- floor, so a permit's fence is above every fence the node counted before:
-- the client's raise (permitfence.lua) then orders grants as it does for a
-- lock. It orders them; it does not exclude the K holders from each other.
local sem, rec, floor, void, stamp, queue, leases = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local token, ttl, k, propose = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local waiter, ticket, lease, knownID = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local L = lib()
local now = L.clock()

local kind = redis.call('TYPE', sem).ok
if kind ~= 'none' and kind ~= 'zset' then
  return {0, redis.call('PTTL', sem), '?', '', -1}
end
local had = tonumber(redis.pcall('GET', rec))
if had and had ~= k then return {0, -4, '?', '', -1, had} end
if redis.call('EXISTS', void) == 1 then
  redis.call('ZREM', sem, token)
  return {0, -3}
end
redis.call('ZREMRANGEBYSCORE', sem, '-inf', now)
local r = redis.call('MGET', stamp, floor)
local s, f = r[1], tonumber(r[2])
local again = redis.call('ZSCORE', sem, token)
if again then
  local epoch
  epoch, f = L.fenceEpoch(stamp, floor, knownID, s, f)
  return {1, L.counter(nil, f, epoch)}
end

-- Waiters whose lease ended leave the queue, wherever they stand.
for _, w in ipairs(redis.call('ZRANGEBYSCORE', leases, '-inf', now)) do
  redis.call('ZREM', queue, w)
  redis.call('ZREM', leases, w)
end
local free = k - redis.call('ZCARD', sem)
local rank = waiter ~= '' and redis.call('ZRANK', queue, waiter)
local ahead = rank or redis.call('ZCARD', queue)
if free <= 0 or ahead >= free then
  rank = -1
  if waiter ~= '' and lease ~= '' and redis.call('EXISTS', KEYS[8]) == 0 then
    L.enqueue(queue, leases, waiter, ticket, tonumber(lease))
    rank = redis.call('ZRANK', queue, waiter)
  end
  local first = redis.call('ZRANGE', sem, 0, 0, 'WITHSCORES')
  local pttl, holder = -2, '?'
  if first[1] then pttl, holder = math.max(1, tonumber(first[2]) - now), first[1] end
  return {0, pttl, holder, redis.call('ZRANGE', queue, 0, 0)[1] or '', rank}
end

-- Count the grant as acquire.lua does: one above the floor (at least the
-- epoch), or the proposal where larger, capped at the clock seed.
local epoch
epoch, f = L.fenceEpoch(stamp, floor, knownID, s, f)
local c = L.counter(nil, f, epoch) + 1
local p = tonumber(propose)
if p and p > c then c = math.max(c, math.min(p, L.clockSeed())) end
L.raiseFloor(floor, c, f)

redis.call('ZADD', sem, now + ttl, token)
redis.call('SET', rec, k)
keepPermits(sem, rec, now)
if waiter ~= '' then
  redis.call('ZREM', queue, waiter)
  redis.call('ZREM', leases, waiter)
end
return {1, c}
