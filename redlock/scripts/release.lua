-- Releases a lock this token holds and announces it when the key is freed.
-- KEYS[1] lock
-- ARGV[1] token, ARGV[2] owner or '', ARGV[3] the channel to announce on.
-- Returns 1 when the key was freed, 2 when a reentrant lock keeps other holds,
-- 0 when this node does not hold the token.
local lock = KEYS[1]
local token, owner, channel = ARGV[1], ARGV[2], ARGV[3]
if not held(lock, token, owner) then return 0 end
if owner ~= '' then
  redis.call('HDEL', lock, 'hold:' .. token)
  if redis.call('HLEN', lock) > 1 then return 2 end
end
redis.call('DEL', lock)
redis.call('PUBLISH', channel, lock)
return 1
