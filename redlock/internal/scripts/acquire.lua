-- Acquires a lock, or adds a hold to a reentrant lock of the same owner.
-- KEYS[1] lock, KEYS[2] its fence record (a reentrant lock's), KEYS[3] the
-- node's fence floor,
-- KEYS[4] this attempt's tombstone, KEYS[5] the node's fence stamp
-- ARGV[1] token of this attempt, ARGV[2] TTL in ms,
-- ARGV[3] owner of a reentrant lock or '' for a plain one,
-- ARGV[4] how long a new fence record is kept, in ms,
-- ARGV[5] '' or, for a hand-over, the token of the plain lock being handed on:
-- where it holds the key, the key passes to this token at once, never free
-- in between,
-- ARGV[6] the client's proposal for a new count, or '' (see proposed),
-- ARGV[7] the master's identity as the client knows it, or '' (see
-- fenceEpoch).
-- Returns {1, counter} when this node grants the lock ({1, counter, 1} when
-- it took the key over from ARGV[5]), {0, PTTL of the holder, the holder}
-- when it does not (PTTL -3 when the attempt was already rolled
-- back here). The holder is the token of a plain lock, "owner:<owner>" of a
-- reentrant one; contenders that split the votes compare them.
local lock, ckey, floor, void, stamp = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local token, ttl, owner, keep, from, propose, hint = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]

-- holderOf names who holds a key this request may not take: the token of a
-- plain lock, "owner:<owner>" of a reentrant one, '?' for a key of another
-- kind.
local function holderOf(lock)
  local kind = redis.call('TYPE', lock).ok
  if kind == 'string' then return redis.call('GET', lock) end
  local owner = kind == 'hash' and redis.call('HGET', lock, 'owner')
  if owner then return 'owner:' .. owner end
  return '?'
end

-- voided: the attempt was rolled back before this request arrived, so it
-- must not land. Checked only where the request would change something.
local function voided()
  return redis.call('EXISTS', void) == 1
end

-- grant counts a grant (see bump), after reading the tombstone, the stamp
-- and the floor in one call. It returns nil when the tombstone is there.
local function grant()
  local r = redis.call('MGET', void, stamp, floor)
  if r[1] then return nil end
  local epoch, f = fenceEpoch(stamp, floor, hint, r[2], tonumber(r[3]))
  return bump(ckey, floor, keep, epoch, propose, f, owner)
end

-- current is the count of a grant made here before: a retried request's,
-- or the grant of a reentrant lock the owner holds (see counter).
local function current()
  local r = redis.call('MGET', stamp, ckey, floor)
  local epoch, f = fenceEpoch(stamp, floor, hint, r[1], tonumber(r[3]))
  local record = r[2]
  if owner == '' then record = nil end -- a plain lock keeps none
  return counter(record, f, epoch)
end

if owner == '' then
  if redis.call('SET', lock, token, 'NX', 'PX', ttl) then
    local c = grant()
    if not c then
      redis.call('DEL', lock)
      return {0, -3}
    end
    return {1, c}
  end
  local v = redis.pcall('GET', lock)
  if from ~= '' and v == from then
    local c = grant()
    if not c then return {0, -3, v} end
    redis.call('SET', lock, token, 'PX', ttl)
    return {1, c, 1}
  end
  -- A retried request that already took effect here.
  if v == token then
    return {1, current()}
  end
  if type(v) ~= 'string' then v = holderOf(lock) end
  return {0, redis.call('PTTL', lock), v}
end

local kind = redis.call('TYPE', lock).ok
if kind == 'none' then
  local c = grant()
  if not c then return {0, -3} end
  redis.call('HSET', lock, 'owner', owner, 'hold:' .. token, 1)
  redis.call('PEXPIRE', lock, ttl)
  return {1, c}
end
if kind == 'hash' and redis.call('HGET', lock, 'owner') == owner then
  if voided() then return {0, -3} end
  redis.call('HSET', lock, 'hold:' .. token, 1)
  if redis.call('PTTL', lock) < tonumber(ttl) then redis.call('PEXPIRE', lock, ttl) end
  return {1, current()}
end
return {0, redis.call('PTTL', lock), holderOf(lock)}
