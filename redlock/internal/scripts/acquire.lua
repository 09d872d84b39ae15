-- Acquires a lock, or adds a hold to a reentrant lock of the same owner.
-- KEYS[1] lock, KEYS[2] its fence record, KEYS[3] the
-- node's fence floor,
-- KEYS[4] this attempt's tombstone, KEYS[5] the node's fence stamp,
-- KEYS[6] the key's waiting queue, KEYS[7] its leases (see The queue below),
-- KEYS[8] the waiter's tombstone, when there is a waiter
-- ARGV[1] token of this attempt, ARGV[2] TTL in ms,
-- ARGV[3] the client's proposal for a new count, or '' (see The proposal
-- below),
-- ARGV[4] owner of a reentrant lock or '' for a plain one,
-- ARGV[5] how long a new fence record is kept, in ms,
-- ARGV[6] '' or, for a hand-over, the token of the plain lock being handed on:
-- where it holds the key, the key passes to this token at once, never free
-- in between,
-- ARGV[7] the waiter making the request, or '' for one that does not wait
-- (see The queue), ARGV[8] its ticket, ARGV[9] its lease, in ms, or '' for
-- a waiter that does not queue (it still takes the key where it heads the
-- queue),
-- and last, the master's identity as the client knows it, or '' (see
-- fenceEpoch). A plain acquire that does not wait sends ARGV[1] to ARGV[3]
-- and the identity only: every argument costs the master time to take, on
-- the lock's busiest call, and ARGV[4] to ARGV[9] are then all ''.
-- Returns {1, counter} when this node grants the lock ({1, counter, 1} when
-- it took the key over from ARGV[6]), {0, PTTL of the holder, the holder,
-- the queue's head, the waiter's rank in the queue (0 at the head, -1 when
-- not queued)} when it does not (PTTL -3 when the attempt was already
-- rolled back here). The holder is the token of a plain lock,
-- "owner:<owner>" of a reentrant one, '?' when none holds it; contenders
-- that split the votes compare them. The head is '' when nobody queues.
--
-- The queue. Waiters for the key line up in queue, ordered by their
-- tickets: each Lock call proposes one ticket, the same to every master,
-- so that masters holding the same waiters agree on their order. A new
-- grant of a free key goes to the queue's head alone, or to anyone when
-- nobody queues; a refused waiter joins the queue, or keeps its place and
-- renews its lease, unless it left (leave.lua left its tombstone): a
-- request still on its way when the waiter left cannot queue it again. A new hold of a reentrant lock's owner and a hand-over
-- are not new grants. The queue only ever refuses: it grants nothing the
-- key alone would not.
local lock, ckey, floor, void, stamp, queue, leases = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local n = #ARGV
local token, ttl, propose, knownID = ARGV[1], ARGV[2], ARGV[3], ARGV[n]
local owner, keep, from, waiter, ticket, lease = '', '', '', '', '', ''
if n > 4 then
  owner, keep, from, waiter, ticket, lease = ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9]
end

-- The script runs top to bottom, with no functions of its own, and makes
-- lib's only off its common path: a master makes a script's functions anew
-- on every run (see lib.lua).
--
-- First, what this request does on the key: 'grant' counts a new grant (a
-- plain lock's key was free and is now taken, or a reentrant lock's key is
-- free), 'take' counts a new grant and takes a plain lock's key over from
-- ARGV[6], 'again' reports a grant made here before (a retried request that
-- already took effect, or a new hold on a reentrant lock of this owner).
-- Any other request is refused. A free key is granted only when nobody
-- queues, or this waiter heads the queue (barred when not). L holds lib's
-- functions once a path needed them. Most keys have no queue: EXISTS
-- tells so more cheaply than a read of the queue's head, which queueHead
-- makes where there is one.
local L
local head = false
if redis.call('EXISTS', queue) == 1 then
  L = lib()
  head = L.queueHead(queue, leases)
end
local barred = head and head ~= waiter
local act, holder, kind
if owner == '' then
  if not barred and redis.call('SET', lock, token, 'NX', 'PX', ttl) then
    act = 'grant'
  else
    holder = redis.pcall('GET', lock)
    if from ~= '' and holder == from then
      act = 'take'
    elseif holder == token then
      act = 'again'
    end
  end
else
  kind = redis.call('TYPE', lock).ok
  if kind == 'none' and not barred then
    act = 'grant'
  elseif kind == 'hash' and redis.call('HGET', lock, 'owner') == owner then
    act = 'again'
  end
end

if not act then
  -- Refused: name the holder, the token of a plain lock, "owner:<owner>" of
  -- a reentrant one, '?' for a key of another kind.
  if type(holder) ~= 'string' then
    kind = kind or redis.call('TYPE', lock).ok
    holder = kind == 'hash' and redis.call('HGET', lock, 'owner')
    if kind == 'string' then
      holder = redis.call('GET', lock)
    elseif holder then
      holder = 'owner:' .. holder
    else
      holder = '?'
    end
  end
  local rank = -1
  if waiter ~= '' and lease ~= '' and redis.call('EXISTS', KEYS[8]) == 0 then
    L = L or lib()
    L.enqueue(queue, leases, waiter, ticket, tonumber(lease))
    head = redis.call('ZRANGE', queue, 0, 0)[1]
    rank = redis.call('ZRANK', queue, waiter)
  end
  return {0, redis.call('PTTL', lock), holder, head or '', rank}
end

-- Read the tombstone, the stamp, the fence record and the floor in one
-- call. A tombstone means the attempt was rolled back before this request
-- arrived, so it must not land: where it took a free key, the key is freed
-- again. A retried plain request that already took effect changes nothing,
-- and is not refused.
local r = redis.call('MGET', void, stamp, ckey, floor)
if r[1] and (act ~= 'again' or owner ~= '') then
  if act == 'grant' and owner == '' then redis.call('DEL', lock) end
  if act == 'take' then return {0, -3, holder} end
  return {0, -3}
end

-- The epoch the fence data counts in: the stamp's, when the stamp names the
-- master as the client knows it (the common case: see Cost in fenceEpoch),
-- else what fenceEpoch finds.
local s, f, h, epoch = r[2], tonumber(r[4]), #knownID, nil
if s and h > 0 and string.byte(s, h + 1) == 32 and string.sub(s, 1, h) == knownID then
  epoch = tonumber(string.match(s, '^(%d+) %d+$', h + 2))
end
if not epoch then
  L = lib()
  epoch, f = L.fenceEpoch(stamp, floor, knownID, s, f)
end

if act == 'again' then
  if owner ~= '' then
    redis.call('HSET', lock, 'hold:' .. token, 1)
    if redis.call('PTTL', lock) < tonumber(ttl) then redis.call('PEXPIRE', lock, ttl) end
  end
  L = L or lib()
  local record = r[3]
  if owner == '' then record = nil end -- a plain retry reports the floor, at least its count
  return {1, L.counter(record, f, epoch)}
end

-- Count the grant: one above everything this node ever counted (its floor,
-- at least the epoch; the clock seed when it has none), or the client's
-- proposal where that is larger; the floor follows the count. The grant
-- also records its count in ckey: a reentrant lock's, for keep ms, which its
-- later holds report (see counter); a plain lock's, naming its token (see
-- plainRecord), for the lock's TTL, which extend.lua renews with the lock,
-- so that a Resume of the token finds the fence it was handed out with and
-- the record lives no longer than the lock. With the MGET above, a plain
-- grant costs two calls,
-- the floor's SET and the record's, and TIME when the proposal is above
-- the floor (about once a millisecond).
--
-- The proposal. Each master counts on its own, so the masters of a quorum
-- can name different counters for one grant, and the client must then
-- raise the lagging ones to the fence it chose (fence.lua): an extra script
-- run per lagging master. Every client proposes, for each attempt, one
-- number from its clock (the same to every master); a master whose count is
-- below the proposal takes the proposal, capped at its own clock seed.
-- Masters whose counters agreed before still agree, and masters that
-- drifted apart meet again at the proposal.
--
-- Safety. A master's next count only has to be above every count it made
-- before for the key (see fence.go): a proposal is taken only when it is
-- larger, so that still holds. The cap keeps the clock seed's promise (see
-- clockSeed and fenceEpoch): no count is above the clock seed of the master
-- that made it, at the time it made it, so a master that lost its data
-- still starts above every fence handed out before. A proposal that is not
-- a number, or not above the count, changes nothing.
if f and f < epoch then f = epoch end
local c
if f then
  c = f + 1
else
  L = L or lib()
  c = L.clockSeed() + 1
end
local p = tonumber(propose)
if p and p > c then
  L = L or lib()
  p = math.min(p, L.clockSeed())
  if p > c then c = p end
end
if f then
  redis.call('SET', floor, string.format('%d', c))
else
  L.raiseFloor(floor, c, f)
end
if owner ~= '' then
  redis.call('SET', ckey, string.format('%d', c), 'PX', keep)
else
  redis.call('SET', ckey, string.format('%d', c) .. ' ' .. token, 'PX', ttl)
end

-- The waiter has the key: it leaves the queue (a hand-over's waiter may
-- be queued anywhere in it).
if waiter ~= '' and (head == waiter or act == 'take') then
  redis.call('ZREM', queue, waiter)
  redis.call('ZREM', leases, waiter)
end
if act == 'take' then
  redis.call('SET', lock, token, 'PX', ttl)
  return {1, c, 1}
end
if owner ~= '' then
  redis.call('HSET', lock, 'owner', owner, 'hold:' .. token, 1)
  redis.call('PEXPIRE', lock, ttl)
end
return {1, c}
