-- Extends a lock this token holds.
-- KEYS[1] lock, KEYS[2] its fencing counter
-- ARGV[1] token, ARGV[2] TTL in ms, ARGV[3] owner or '',
-- ARGV[4] how long the counter outlives the lock, in ms.
-- Returns 1 when extended, 0 when this node does not hold the token.
-- A reentrant lock's TTL is never shortened: other holds rely on it.
local lock, ckey = KEYS[1], KEYS[2]
local token, ttl, owner, keep = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
if not held(lock, token, owner) then return 0 end
if owner == '' or redis.call('PTTL', lock) < ttl then
  redis.call('PEXPIRE', lock, ttl)
end
redis.call('PEXPIRE', ckey, ttl + keep)
return 1
