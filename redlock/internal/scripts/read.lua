-- Takes a read hold of a key (see RWLock in rwlock.go): readers share the
-- key, a writer excludes them.
-- KEYS[1] the key, KEYS[2] its permit record, KEYS[3] the node's fence
-- floor, KEYS[4] this attempt's tombstone, KEYS[5] the node's fence stamp,
-- KEYS[6] the key's waiting queue, KEYS[7] its leases
-- ARGV[1] token, ARGV[2] TTL in ms, ARGV[3] the client's proposal for a new
-- count, or '' (see acquire.lua), ARGV[4] the master's identity as the
-- client knows it, or ''.
-- Returns acquire.lua's shapes: {1, counter} when granted (a retried
-- request that already landed gets the node's floor, as a plain lock
-- does); {0, PTTL, holder, head, -1} when refused: a writer holds the key
-- (holder its token, PTTL its), a writer waits for it (holder '?', head the
-- writer at the queue's head, PTTL the readers' or -2), or the key is of
-- another kind (holder '?'); {0, -3} when the attempt was rolled back here.
--
-- The layout. The readers are the key itself: a sorted set of their tokens
-- scored by when each hold ends, in ms of the master's clock, the layout of
-- a semaphore's permits (see permits.lua), whose scripts extend, release
-- and fence a read hold. A writer is a plain lock, the key as a string. One
-- key holds either, so a writer (acquire.lua, unchanged) is refused while a
-- reader holds, and a reader while a writer does. The record says 0
-- permits: a semaphore's permit.lua refuses the key, and this script
-- refuses a semaphore's (its record says K >= 1).
--
-- Writer preference. A reader never queues; a writer (a Lock call)
-- refused by readers queues as for a lock (see The queue in acquire.lua).
-- So the queue's live head is a writer waiting, and while there is one no
-- reader is granted: the readers holding the key drain, and the writer
-- takes it.
local lock, rec, floor, void, stamp, queue, leases = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local token, ttl, propose, knownID = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local L = lib()
local now = L.clock()

local kind = redis.call('TYPE', lock).ok
if kind == 'string' then
  return {0, redis.call('PTTL', lock), redis.call('GET', lock), '', -1}
end
if kind ~= 'none' and (kind ~= 'zset' or tonumber(redis.call('GET', rec)) ~= 0) then
  return {0, redis.call('PTTL', lock), '?', '', -1}
end
if redis.call('EXISTS', void) == 1 then
  redis.call('ZREM', lock, token)
  return {0, -3}
end
redis.call('ZREMRANGEBYSCORE', lock, '-inf', now)
local r = redis.call('MGET', stamp, floor)
local s, f = r[1], tonumber(r[2])
if redis.call('ZSCORE', lock, token) then
  local epoch
  epoch, f = L.fenceEpoch(stamp, floor, knownID, s, f)
  return {1, L.counter(nil, f, epoch)}
end

local head = L.queueHead(queue, leases)
if head then return {0, redis.call('PTTL', lock), '?', head, -1} end

-- Count the grant from the floor, as a writer's is counted: a reader's
-- fence is above every writer's before it, and the next writer's above
-- this reader's.
local c = L.countGrant(stamp, floor, knownID, s, f, propose)

redis.call('ZADD', lock, now + ttl, token)
redis.call('SET', rec, 0)
keepPermits(lock, rec, now)
return {1, c}
