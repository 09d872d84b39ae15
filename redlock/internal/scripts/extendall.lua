-- Extends every key of a set this token holds (see acquireall.lua).
-- KEYS[1] .. KEYS[n] the locks
-- ARGV[1] token, ARGV[2] TTL in ms.
-- Returns extend.lua's answers: 1 when the token holds every key and each
-- was extended, 2 when no key is another's but some is free here (the
-- master restarted empty, or the keys expired: the set may be taken
-- again), 0 when another holds a key, or a key is of another kind.
local token, ttl = ARGV[1], ARGV[2]
local free = false
for _, lock in ipairs(KEYS) do
  local v = redis.pcall('GET', lock)
  if v ~= token then
    if v then return 0 end
    free = true
  end
end
if free then return 2 end
-- A TTL is never shortened (see extend.lua).
for _, lock in ipairs(KEYS) do
  if redis.call('PTTL', lock) < tonumber(ttl) then
    redis.call('PEXPIRE', lock, ttl)
  end
end
return 1
