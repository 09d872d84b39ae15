-- Extends a lock this token holds.
-- KEYS[1] lock
-- ARGV[1] token, ARGV[2] TTL in ms, ARGV[3] owner or ''.
-- Returns 1 when extended, 0 when this node does not hold the token.
-- A reentrant lock's TTL is never shortened: other holds rely on it.
local lock = KEYS[1]
local token, ttl, owner = ARGV[1], ARGV[2], ARGV[3]
if not held(lock, token, owner) then return 0 end
if owner == '' or redis.call('PTTL', lock) < tonumber(ttl) then
  redis.call('PEXPIRE', lock, ttl)
end
return 1
