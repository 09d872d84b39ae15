-- Releases a lock this token holds, or rolls back a failed attempt.
-- KEYS[1] lock, KEYS[2] the key's fence record, KEYS[3] the key's waiting
-- queue, KEYS[4] its leases (see acquire.lua), KEYS[5] the token's
-- tombstone, KEYS[6] the node's fence floor, KEYS[7] the waiter's
-- tombstone; a call sends KEYS[5] to KEYS[7] only as far as its arguments
-- use them.
-- ARGV[1] token, ARGV[2] the channel to announce a freed key on, or '' to
-- announce nothing. The rest may be left out, each as '', and a plain
-- release sends none of them: every key and argument costs the master time
-- to take, on one of the lock's two busiest calls.
-- ARGV[3] owner or '',
-- ARGV[4] '' or how long the token's tombstone lasts, in ms. A roll-back
-- always leaves one, and a release does where a request with the token may
-- still be on its way: the acquire script obeys it, so such a request cannot
-- land after this script, whether or not the token held the key here.
-- ARGV[5] '1' to announce with SPUBLISH (sharded pub/sub, on a Redis Cluster:
-- the channel is in the lock key's slot), else PUBLISH.
-- ARGV[6] '' or a fence to raise the node's fence floor to first, as
-- fence.lua does, when the token holds the key here: a master that granted
-- outside the quorum, below the fence, then agrees with the others on the
-- next count. With it, ARGV[7] how long a new fence record is kept, in ms.
-- A plain lock's record (see acquire.lua) goes with the lock, in the same
-- DEL: while the token holds the key, the record is the token's (its grant
-- wrote it, and only its own extends and raises touch it), and once the key
-- is freed there is nothing for a Resume to find; a record left to expire
-- would hold memory, and the master's time, for the rest of the TTL.
-- The announcement names the head of the key's waiting queue, the one
-- waiter a new grant may go to, or is '' when nobody is queued here.
-- ARGV[8], on a roll-back, '' or the waiter whose attempt it undoes, with
-- its ticket ARGV[9] and its lease ARGV[10], in ms, and KEYS[7] the
-- waiter's tombstone: where the attempt took the key, its grant took the
-- waiter out of the queue, and the roll-back puts it back at its ticket,
-- unless the waiter left meanwhile. Without it, a waiter at the head whose
-- attempt failed would lose its place on the masters that granted it, to
-- the waiter behind, and the two could split the masters between them
-- again and again. ARGV[11] '1' (a roll-back) announces only a head: the
-- lock was never held, so nobody waits for its release, but waiters in
-- line may wait for the key the attempt took. It never announces the
-- waiter whose attempt it undoes: that waiter's Lock call already knows
-- the attempt failed, and decides when to try again; woken, it would try at
-- once, take the key here again while others hold it elsewhere, and roll
-- back again, as fast as the masters answer.
-- Returns 1 when the key was freed, 3 when it was freed but the
-- announcement failed (waiters then rely on their backoff), 2 when a
-- reentrant lock keeps other holds, 0 when this node does not hold the
-- token. A failed announcement never undoes or hides the deletion.
local lock, record, queue, leases = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local token, channel = ARGV[1], ARGV[2]
local owner, tomb, sharded, fence = ARGV[3] or '', ARGV[4] or '', ARGV[5], ARGV[6]
if tomb ~= '' then redis.call('SET', KEYS[5], 1, 'PX', tomb) end
if not held(lock, token, owner) then return 0 end
if fence and fence ~= '' then lib().raiseCounter(record, KEYS[6], fence, ARGV[7], owner, token) end
if owner ~= '' then
  redis.call('HDEL', lock, 'hold:' .. token)
  if redis.call('HLEN', lock) > 1 then return 2 end
  redis.call('DEL', lock)
else
  redis.call('DEL', lock, record)
end
local waiter = ARGV[8]
if waiter and waiter ~= '' and redis.call('EXISTS', KEYS[7]) == 0 then
  lib().enqueue(queue, leases, waiter, ARGV[9], tonumber(ARGV[10]))
end
if channel ~= '' then
  local head = false -- nobody queues, on most keys: EXISTS is the cheaper test
  if redis.call('EXISTS', queue) == 1 then head = lib().queueHead(queue, leases) end
  local rollback = ARGV[11] == '1'
  if rollback and head == waiter then head = false end
  if head or not rollback then
    local publish = 'PUBLISH'
    if sharded == '1' then publish = 'SPUBLISH' end
    local ok = redis.pcall(publish, channel, head or '')
    if type(ok) == 'table' and ok.err then return 3 end
  end
end
return 1
