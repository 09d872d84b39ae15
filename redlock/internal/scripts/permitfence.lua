-- Raises the node's fence floor to the fence chosen for a permit this token
-- holds, as fence.lua does for a lock.
-- KEYS[1] the semaphore, KEYS[2] the node's fence floor
-- ARGV[1] token, ARGV[2] fence.
-- Returns 1 when done, 0 when this node holds no permit of the token.
if not livePermit(KEYS[1], ARGV[1], lib().clock()) then return 0 end
lib().raiseFloorTo(KEYS[2], ARGV[2])
return 1
