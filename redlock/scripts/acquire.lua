-- Acquires a lock, or adds a hold to a reentrant lock of the same owner.
-- KEYS[1] lock, KEYS[2] its fencing counter, KEYS[3] the node's fence floor,
-- KEYS[4] this attempt's tombstone
-- ARGV[1] token of this attempt, ARGV[2] TTL in ms,
-- ARGV[3] owner of a reentrant lock or '' for a plain one,
-- ARGV[4] how long the counter outlives the lock, in ms.
-- Returns {1, counter} when this node grants the lock, {0, PTTL of the holder}
-- when it does not.
local lock, ckey, floor, void = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local token, ttl, owner, keep = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
if redis.call('EXISTS', void) == 1 then
  -- The attempt was rolled back before this request arrived: it must not land.
  return {0, -3}
end
local kind = redis.call('TYPE', lock).ok
if kind == 'none' then
  if owner == '' then
    redis.call('SET', lock, token, 'PX', ttl)
  else
    redis.call('HSET', lock, 'owner', owner, 'hold:' .. token, 1)
    redis.call('PEXPIRE', lock, ttl)
  end
  -- Every grant moves the counter on. A dropped counter restarts above the
  -- floor, which is at least every fence this node has ever counted.
  local c = redis.call('INCR', ckey)
  local f = floorOf(floor)
  if c <= f then
    c = f + 1
    redis.call('SET', ckey, int(c))
  end
  redis.call('SET', floor, int(c))
  redis.call('PEXPIRE', ckey, ttl + keep)
  return {1, c}
end
if owner == '' then
  -- A retried request that already took effect here.
  if kind == 'string' and redis.call('GET', lock) == token then
    return {1, counter(ckey, floor)}
  end
elseif kind == 'hash' and redis.call('HGET', lock, 'owner') == owner then
  redis.call('HSET', lock, 'hold:' .. token, 1)
  if redis.call('PTTL', lock) < ttl then redis.call('PEXPIRE', lock, ttl) end
  redis.call('PEXPIRE', ckey, ttl + keep)
  return {1, counter(ckey, floor)}
end
return {0, redis.call('PTTL', lock)}
