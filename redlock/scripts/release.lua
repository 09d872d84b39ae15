-- Releases a lock this token holds, or rolls back a failed attempt.
-- KEYS[1] lock, KEYS[2] the attempt's tombstone
-- ARGV[1] token, ARGV[2] owner or '', ARGV[3] the channel to announce on,
-- ARGV[4] '' for a release; for a roll-back, how long the tombstone lasts, in
-- ms. A roll-back announces nothing (the lock was never held), and where the
-- token is not (yet) found it leaves a tombstone, so that an acquire still
-- in the network when the roll-back ran cannot land after it.
-- Returns 1 when the key was freed, 2 when a reentrant lock keeps other holds,
-- 0 when this node does not hold the token.
local lock, void = KEYS[1], KEYS[2]
local token, owner, channel, rollback = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if not held(lock, token, owner) then
  if rollback ~= '' then redis.call('SET', void, 1, 'PX', rollback) end
  return 0
end
if owner ~= '' then
  redis.call('HDEL', lock, 'hold:' .. token)
  if redis.call('HLEN', lock) > 1 then return 2 end
end
redis.call('DEL', lock)
if rollback == '' then redis.call('PUBLISH', channel, lock) end
return 1
