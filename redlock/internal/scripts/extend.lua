-- Extends a lock this token holds.
-- KEYS[1] lock
-- ARGV[1] token, ARGV[2] TTL in ms, ARGV[3] owner or ''.
-- Returns 1 when extended, 2 when the key is free here (the master
-- restarted empty, or the key expired), 0 when another holds it. A
-- reentrant lock's TTL is never shortened: other holds rely on it.
local lock = KEYS[1]
local token, ttl, owner = ARGV[1], ARGV[2], ARGV[3]
if held(lock, token, owner) then
  if owner == '' or redis.call('PTTL', lock) < tonumber(ttl) then
    redis.call('PEXPIRE', lock, ttl)
  end
  return 1
end
if redis.call('EXISTS', lock) == 0 then return 2 end
return 0
