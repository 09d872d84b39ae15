-- Extends a lock this token holds.
-- KEYS[1] lock, KEYS[2] its fence record
-- ARGV[1] token, ARGV[2] TTL in ms, ARGV[3] owner or ''.
-- Returns 1 when extended, 2 when the key is free here (the master
-- restarted empty, or the key expired), 0 when another holds it. A
-- reentrant lock's TTL is never shortened: other holds rely on it. A plain
-- lock's fence record (see acquire.lua), which names the token while it
-- holds the key, lives as long as the lock; a reentrant lock's keeps its
-- own retention.
local lock, ckey = KEYS[1], KEYS[2]
local token, ttl, owner = ARGV[1], ARGV[2], ARGV[3]
if held(lock, token, owner) then
  if owner == '' then
    redis.call('PEXPIRE', lock, ttl)
    redis.call('PEXPIRE', ckey, ttl)
  elseif redis.call('PTTL', lock) < tonumber(ttl) then
    redis.call('PEXPIRE', lock, ttl)
  end
  return 1
end
if redis.call('EXISTS', lock) == 0 then return 2 end
return 0
