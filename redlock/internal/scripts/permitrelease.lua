-- Gives back a permit this token holds, or rolls back a failed attempt (see
-- permits.lua and release.lua, whose contract this follows).
-- KEYS[1] the semaphore, KEYS[2] the token's tombstone, KEYS[3] the key's
-- waiting queue, KEYS[4] its leases, KEYS[5] its permit record, KEYS[6] the
-- node's fence floor, KEYS[7] the rolled-back waiter's tombstone (the
-- token's when there is none)
-- ARGV[1] token, ARGV[2] the channel to announce on, or '' for none,
-- ARGV[3] '' or how long the token's tombstone lasts, in ms, ARGV[4] '1'
-- to announce with SPUBLISH, ARGV[5] '' or a fence to raise the node's
-- floor to first, ARGV[6] '' or, on a roll-back, the waiter whose attempt
-- it undoes, ARGV[7] its ticket, ARGV[8] its lease in ms (it goes back in
-- line, as release.lua puts it), ARGV[9] '1' on a roll-back: announce only
-- a head, and never that waiter (see release.lua).
-- Returns 1 when the permit was given back, 3 when given back but the
-- announcement failed, 0 when the token held no permit here.
--
-- The announcement names the queue's head, as release.lua's does, and, for
-- a semaphore, also the waiter this permit lets in: with F permits free, the
-- waiter at rank F-1 may now take one (see permit.lua), and the head alone
-- would leave it to its renewal while the head has not taken its own.
local sem, void, queue, leases, rec, floor = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local token, channel, tomb, sharded, fence = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local waiter, rollback = ARGV[6], ARGV[9]
if tomb ~= '' then redis.call('SET', void, 1, 'PX', tomb) end
local L = lib()
local now = L.clock()
if not livePermit(sem, token, now) then
  redis.pcall('ZREM', sem, token) -- an ended permit's member goes too
  return 0
end
if fence ~= '' then L.raiseFloorTo(floor, fence) end
local k = tonumber(redis.pcall('GET', rec)) or 0 -- K; 0 for an RWLock's readers
redis.call('ZREM', sem, token)
keepPermits(sem, rec, now)
if waiter ~= '' and redis.call('EXISTS', KEYS[7]) == 0 then
  L.enqueue(queue, leases, waiter, ARGV[7], tonumber(ARGV[8]))
end
if channel ~= '' and k == 0 then
  -- A read hold: a writer takes the key only once no reader holds it here
  -- (ended holds aside), and a reader is not woken by a release (see
  -- hub.announced). While other readers hold, nothing is announced: the
  -- head, woken, would only be refused here again, and readers that come
  -- and go would keep it retrying as fast as they do.
  redis.call('ZREMRANGEBYSCORE', sem, '-inf', now)
  if redis.call('EXISTS', sem) == 1 then return 1 end
end
if channel ~= '' then
  local head = redis.call('ZRANGE', queue, 0, 0)[1]
  if head then head = L.queueHead(queue, leases) end
  local undone = nil -- the waiter whose attempt a roll-back undoes: not woken (see release.lua)
  if rollback == '1' and waiter ~= '' then undone = waiter end
  if rollback == '1' and k >= 1 then
    -- A semaphore's roll-back frees one permit and lets in one waiter at
    -- most: with F permits now free, the one at rank F-1, where it stands
    -- ahead of the waiter put back in line (one behind it was let in
    -- before, its rank and F both one up). It alone is woken. Any other
    -- waiter would find what it found before: let in here and refused
    -- elsewhere, it would roll back in turn and wake this one, and two
    -- waiters would wake each other as fast as the masters answer.
    if not head then return 1 end
    redis.call('ZREMRANGEBYSCORE', sem, '-inf', now) -- ended permits free theirs, as permit.lua counts
    local free = k - redis.call('ZCARD', sem)
    local next = free >= 1 and redis.call('ZRANGE', queue, free - 1, free - 1)[1]
    local behind = undone and redis.call('ZRANK', queue, undone)
    if next and next ~= undone and not (behind and behind < free - 1) and not L.announce(channel, sharded, next) then return 3 end
    return 1
  end
  if (head or rollback ~= '1') and head ~= undone and not L.announce(channel, sharded, head or '') then return 3 end
  if head and k >= 2 then
    redis.call('ZREMRANGEBYSCORE', sem, '-inf', now) -- ended permits free theirs, as permit.lua counts
    local free = k - redis.call('ZCARD', sem)
    local next = free >= 2 and redis.call('ZRANGE', queue, free - 1, free - 1)[1]
    if next and next ~= head and next ~= undone and not L.announce(channel, sharded, next) then return 3 end
  end
end
return 1
