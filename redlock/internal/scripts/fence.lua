-- Raises the node's fence floor (and the lock's record) to the fence
-- chosen for a lock this token holds, so that every later quorum, which
-- overlaps this one, counts past it.
-- KEYS[1] lock, KEYS[2] its fence record, KEYS[3] the node's fence floor
-- ARGV[1] token, ARGV[2] owner or '', ARGV[3] fence,
-- ARGV[4] how long a new fence record is kept, in ms.
-- Returns 1 when done, 0 when this node does not hold the token.
local lock, ckey, floor = KEYS[1], KEYS[2], KEYS[3]
local token, owner, fence, keep = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if not held(lock, token, owner) then return 0 end
lib().raiseCounter(ckey, floor, fence, keep, owner, token)
return 1
