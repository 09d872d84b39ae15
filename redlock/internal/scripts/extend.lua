-- Extends a lock this token holds.
-- KEYS[1] lock, KEYS[2] its fence record
-- ARGV[1] token, ARGV[2] TTL in ms, ARGV[3] owner or ''.
-- Returns 1 when extended, 2 when the key is free here (the master
-- restarted empty, or the key expired), 0 when another holds it. A TTL is
-- never shortened: an extension can land after a later one of the same
-- lock (sent on another connection, or held in a paused master's buffers),
-- and the later one's TTL is what its validity counts on; a reentrant
-- lock's other holds rely on it too. A plain lock's fence record (see
-- acquire.lua), which names the token while it holds the key, lives as long
-- as the lock; a reentrant lock's keeps its own retention.
local lock, ckey = KEYS[1], KEYS[2]
local token, ttl, owner = ARGV[1], tonumber(ARGV[2]), ARGV[3]
if held(lock, token, owner) then
  if redis.call('PTTL', lock) < ttl then
    redis.call('PEXPIRE', lock, ttl)
  end
  if owner == '' and redis.call('PTTL', ckey) < ttl then
    redis.call('PEXPIRE', ckey, ttl)
  end
  return 1
end
if redis.call('EXISTS', lock) == 0 then return 2 end
return 0
