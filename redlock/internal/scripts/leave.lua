-- Takes a waiter out of a key's waiting queue: its Lock call ended, with
-- the lock or without it.
-- KEYS[1] lock, KEYS[2] the key's waiting queue, KEYS[3] its leases (see
-- acquire.lua), KEYS[4] the waiter's tombstone
-- ARGV[1] the waiter, ARGV[2] the channel releases of the key are announced
-- on, ARGV[3] '1' to announce with SPUBLISH, else PUBLISH, ARGV[4] how long
-- the tombstone lasts, in ms: an acquire of the waiter still on its way
-- cannot queue it again (see acquire.lua).
-- Returns 1 when the waiter was queued here, 0 when not. When it was the
-- head and the key is free, the next head is announced, as a release does:
-- it may take the key now.
local lock, queue, leases = KEYS[1], KEYS[2], KEYS[3]
local waiter, channel, sharded = ARGV[1], ARGV[2], ARGV[3]
redis.call('SET', KEYS[4], 1, 'PX', ARGV[4])
local head = redis.call('ZRANGE', queue, 0, 0)[1]
if redis.call('ZREM', queue, waiter) == 0 then return 0 end
redis.call('ZREM', leases, waiter)
if head == waiter and redis.call('EXISTS', lock) == 0 then
  local L = lib()
  local after = L.queueHead(queue, leases)
  if after then L.announce(channel, sharded, after) end
end
return 1
