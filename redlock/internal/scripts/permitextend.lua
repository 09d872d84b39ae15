-- Extends a permit this token holds (see permits.lua).
-- KEYS[1] the semaphore, KEYS[2] its permit record
-- ARGV[1] token, ARGV[2] TTL in ms, ARGV[3] K.
-- Returns extend.lua's answers: 1 when extended, 2 when the token holds no
-- permit here and one is free (the master restarted empty, or the permit
-- expired), 0 when it holds none and none is free, or the key is of
-- another kind.
local sem, rec = KEYS[1], KEYS[2]
local token, ttl, k = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local now = lib().clock()
if livePermit(sem, token, now) then
  -- A permit's end is never brought forward (see extend.lua).
  if tonumber(redis.call('ZSCORE', sem, token)) < now + ttl then
    redis.call('ZADD', sem, now + ttl, token)
  end
  keepPermits(sem, rec, now)
  return 1
end
local kind = redis.call('TYPE', sem).ok
if kind == 'none' then return 2 end
if kind ~= 'zset' then return 0 end
redis.call('ZREMRANGEBYSCORE', sem, '-inf', now)
if redis.call('ZCARD', sem) < k then return 2 end
return 0
